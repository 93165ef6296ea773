"""Taking and publishing serialized messages through rcl directly (dyn_control.nodes.rcl_io), in one
process over DDS: what arrives reads back, through rclpy's own deserializer (the oracle), as the
messages sent, in order, newest kept; each message's publisher and publication sequence number; an
oversized message is dropped and named; a lifecycle publisher's gate holds."""
import time

import numpy as np
import pytest
import ros_harness  # noqa: F401  (own DDS domain)

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed")
from rclpy.lifecycle import Node as LifecycleNode  # noqa: E402
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from dyn_control.nodes import qos, rcl_io  # noqa: E402
from dyn_control.nodes.inputs import REJECTED, JointStateReader  # noqa: E402
from dyn_control.nodes.wire import RawMessage, markers  # noqa: E402

pytestmark = pytest.mark.ros
DISCOVERY = 5.0     # [s] at most, for the publisher and the subscription to match


@pytest.fixture
def node():
    rclpy.init()
    node = LifecycleNode("rcl_io_test")
    yield node
    node.destroy_node()
    rclpy.shutdown()


def wait_for(condition, timeout=DISCOVERY):
    """Evaluates condition() until it is true (then True) or the timeout passes (then False)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_the_direct_path_is_available_with_the_ros_wheels(node):
    publisher = node.create_publisher(Float64MultiArray, "/rcl_io_available", 1)
    assert rcl_io.available(publisher), "librcl or Publisher.handle.pointer not found: the loop falls back to rclpy"


def test_ring_take_gives_the_newest_queued_messages_oldest_first_in_order(node):
    topic = "/rcl_io_ring"
    subscription = qos.PolledSubscription(node, Float64MultiArray, topic, qos.SENSOR_DATA,
                                          ring_capacity=qos.RING_CAPACITY)
    publisher = node.create_publisher(Float64MultiArray, topic, qos.SENSOR_DATA)
    assert wait_for(lambda: publisher.get_subscription_count() == 1)
    time.sleep(0.2)
    sent = [Float64MultiArray(data=[float(k), -2.5 * k, k * np.pi]) for k in range(8)]
    for message in sent:
        publisher.publish(message)
    received = []
    assert wait_for(lambda: received.extend(subscription.take_all_raw()) or len(received) >= 5)
    # KEEP_LAST 5: the newest five, as rclpy's deserializer reads them
    assert [deserialize_message(bytes(r), Float64MultiArray) for r in received] == sent[-qos.SENSOR_DATA.depth:]
    assert subscription.take_all_raw() == []


@pytest.mark.parametrize("ring_capacity", [qos.RING_CAPACITY, 0], ids=["rcl ring", "rclpy"])
def test_publication_sequence_numbers_count_the_messages_never_taken(node, ring_capacity):
    """publications() and publication_before(), through rcl's ring and through rclpy's take: a
    publisher's messages numbered one after the other; 20 more sent into a queue that keeps 8 show
    as a jump of 20 - 8 + 1 from the newest taken before (the oracle: what this test published and
    the queue's depth); another publisher has another GID."""
    topic = "/rcl_io_sequence"
    keep = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=8, reliability=ReliabilityPolicy.BEST_EFFORT)
    subscription = qos.PolledSubscription(node, Float64MultiArray, topic, keep, ring_capacity=ring_capacity)
    assert (subscription._ring is not None) == bool(ring_capacity)
    first, second = (node.create_publisher(Float64MultiArray, topic, keep) for _ in range(2))
    assert wait_for(lambda: first.get_subscription_count() == 1 and second.get_subscription_count() == 1)
    time.sleep(0.2)

    def send(publisher, count):
        for k in range(count):
            publisher.publish(Float64MultiArray(data=[float(k)]))
        time.sleep(0.2)
        return subscription.take_all_raw()
    assert subscription.publication_before() is None
    assert len(send(first, 3)) == 3
    numbers = [number for _, number in subscription.publications()]
    sender = subscription.publications()[0][0]
    assert numbers == list(range(numbers[0], numbers[0] + 3)), numbers
    assert all(publisher == sender for publisher, _ in subscription.publications())
    assert len(send(first, 20)) == 8
    assert subscription.publication_before() == (sender, numbers[-1])
    assert [number for _, number in subscription.publications()] == list(range(numbers[-1] + 13, numbers[-1] + 21))
    assert len(send(second, 1)) == 1
    assert subscription.publications()[0][0] != sender
    assert subscription.publication_before() == (sender, numbers[-1] + 20)


def test_a_message_larger_than_the_buffer_is_dropped_named_and_the_next_one_arrives(node):
    topic = "/rcl_io_large"
    subscription = qos.PolledSubscription(node, JointState, topic, qos.SENSOR_DATA, ring_capacity=256)
    publisher = node.create_publisher(JointState, topic, qos.SENSOR_DATA)
    assert wait_for(lambda: publisher.get_subscription_count() == 1)
    time.sleep(0.2)
    names = [f"joint{k}" for k in range(20)]
    large = JointState(name=names, position=[0.1] * 20, velocity=[0.0] * 20)
    small = JointState(name=names[:2], position=[0.25, -0.5], velocity=[1.0, 2.0])
    assert len(serialize_message(large)) > 256 > len(serialize_message(small))
    publisher.publish(large)
    publisher.publish(small)
    received = []
    assert wait_for(lambda: received.extend(subscription.take_all_raw()) or len(received) >= 2)
    assert len(received[0]) == 0 and deserialize_message(bytes(received[1]), JointState) == small

    q, v, effort = np.zeros(2), np.zeros(2), np.zeros(2)
    reader = JointStateReader(names[:2], q, v, effort)
    assert reader.read(received[0], 1) == REJECTED
    assert reader.last_rejection.startswith("message larger than the receive buffer")
    assert reader.read(received[1], 2) == "accepted"
    np.testing.assert_array_equal(q, [0.25, -0.5])
    np.testing.assert_array_equal(v, [1.0, 2.0])


@pytest.mark.parametrize("direct", [True, False], ids=["rcl", "rclpy"])
def test_raw_publisher_sends_the_filled_template_only_while_activated(node, monkeypatch, direct):
    if not direct:
        monkeypatch.setattr(rcl_io, "available", lambda entity: False)
    topic = f"/rcl_io_publish_{direct}"
    publisher = node.create_lifecycle_publisher(Float64MultiArray, topic, qos.STATE)
    subscription = qos.PolledSubscription(node, Float64MultiArray, topic, qos.STATE)
    template = Float64MultiArray(data=markers(3))
    message = RawMessage(template, {"data": template.data})
    out = rcl_io.RawPublisher(publisher, message)
    assert out.direct == direct
    assert wait_for(lambda: publisher.get_subscription_count() == 1)
    time.sleep(0.2)

    message.views["data"][:] = [1.0, 2.0, 3.0]
    out.publish()                       # not activated: nothing goes out
    publisher.on_activate(None)
    message.views["data"][:] = [4.0, -5.0, 6.5]
    out.publish()
    taken = []
    assert wait_for(lambda: (m := subscription.take()) is not None and taken.append(m) is None)
    assert list(taken[0].data) == [4.0, -5.0, 6.5]
    time.sleep(0.2)
    assert subscription.take() is None, "the message published before activation went out"
