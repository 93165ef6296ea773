"""The ~/joint_trajectory subscription (nodes/trajectory_input.py) over DDS in this process: the
executor wakes it for each message, which it takes serialized into its fixed buffers; a message
larger than the buffers is dropped unread and named, and the buffer it failed in takes the next
messages (every buffer of the ring is used again after it)."""
import threading
import time

import pytest
import ros_harness  # noqa: F401  (this process's own ROS domain)
import rclpy
from builtin_interfaces.msg import Duration
from rclpy.executors import SingleThreadedExecutor
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from dyn_control.nodes import qos
from dyn_control.nodes.trajectory_input import TrajectoryDecoder, TrajectorySubscription

pytestmark = pytest.mark.ros

NAMES = ["a", "b"]


def trajectory(count, first=0.1):
    msg = JointTrajectory(joint_names=["b"])
    msg.points = [JointTrajectoryPoint(positions=[0.5], time_from_start=Duration(nanosec=int((first + 1e-3 * k) * 1e9)))
                  for k in range(count)]
    return msg


def test_messages_arrive_an_oversized_one_is_dropped_and_every_buffer_takes_the_next(tmp_path):
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node("trajectory_input_test", context=context)
        decoder = TrajectoryDecoder(50, NAMES)
        received = []

        def on_message(raw):
            try:
                received.append(decoder.decode(raw).times[0])
            except ValueError as error:
                received.append(str(error))
        subscription = TrajectorySubscription(node, "/trajectory_input_test", decoder, on_message)
        publisher = node.create_publisher(JointTrajectory, "/trajectory_input_test", qos.STATE)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        spinner = threading.Thread(target=executor.spin, daemon=True)
        spinner.start()
        deadline = time.monotonic() + 5.0
        while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
        sent = [trajectory(1, 0.1), trajectory(2000)] + [trajectory(50, 0.2 + 0.01 * k) for k in range(12)]
        for msg in sent:      # one at a time: the ring has qos.STATE.depth = 10 buffers, 13 messages follow
            count = len(received)
            publisher.publish(msg)
            deadline = time.monotonic() + 5.0
            while len(received) == count and time.monotonic() < deadline:
                time.sleep(0.005)
        executor.shutdown()
        spinner.join(2.0)
        subscription.destroy(node)
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
    assert len(received) == len(sent), received
    assert received[0] == pytest.approx(0.1)
    assert received[1].startswith(f"larger than {decoder.capacity} bytes, the size of trajectory.max_points = 50")
    assert received[2:] == pytest.approx([0.2 + 0.01 * k for k in range(12)])


@pytest.mark.parametrize("installed", [True, False], ids=["control_msgs", "without control_msgs"])
def test_the_action_is_offered_where_control_msgs_imports_and_left_out_with_one_line(installed, monkeypatch, capfd):
    import dyn_control as dc
    from rclpy.action import get_action_server_names_and_types_by_node
    from rclpy.parameter import Parameter

    from dyn_control.nodes import follow_joint_trajectory
    from dyn_control.nodes.controller import ControllerNode
    if installed and follow_joint_trajectory.FollowJointTrajectory is None:
        pytest.skip("control_msgs not installed (make control-msgs builds it)")
    if not installed:
        monkeypatch.setattr(follow_joint_trajectory, "FollowJointTrajectory", None)
    # A namespace of its own per case: the graph of one case must not show the other's node, whose
    # departure reaches the graph cache later than this one's arrival.
    namespace = "/fjt_offered" if installed else "/fjt_left_out"
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = ControllerNode(context=context, namespace=namespace,
                              parameter_overrides=[Parameter("urdf_path", value=dc.bundled_urdf("arm7"))])
        node.trigger_configure()
        assert node.state == "inactive"
        expected = [f"{namespace}/dyn_controller/follow_joint_trajectory"] if installed else []

        def offered():
            return [name for name, _ in get_action_server_names_and_types_by_node(node, "dyn_controller", namespace)]

        deadline = time.monotonic() + 5.0     # the graph cache is filled by discovery, not at once
        while offered() != expected and time.monotonic() < deadline:
            time.sleep(0.05)
        assert offered() == expected
        lines = [line for line in capfd.readouterr().err.splitlines() if "follow_joint_trajectory" in line]
        assert lines == ([] if installed else [lines[0]])
        if not installed:
            assert "control_msgs is not installed: no ~/follow_joint_trajectory action" in lines[0]
        node.trigger_cleanup()
        deadline = time.monotonic() + 5.0
        while offered() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert offered() == []
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
