"""Every message the controller and the simulator publish is byte-exact CDR, as a bag stores it:
rosbags (what `dyn-control identify` reads bags with) and rclpy each read it back with the values it
was filled with, and rosbags' own serializer gives the same bytes (rosbags refuses a message with
trailing bytes: "CDR message size mismatch").

The loops' messages are serialized templates filled in place (wire.RawMessage): built here by the
nodes' own functions (controller_messages.message_templates, simulator.message_templates) and filled as the
loops fill them; then also published through rcl as the loops publish them and taken raw as
`dyn-control record` takes them (bag_recorder.py). The messages the nodes publish as objects
(/diagnostics, ~/collision, the label lists) are serialized by the RMW: published and taken the same
way.
"""
import array
import functools
import time

import numpy as np
import pytest
import ros_harness  # noqa: F401  (own DDS domain)
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import TwistStamped, WrenchStamped
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

import dyn_control as dc
from dyn_control.nodes import controller_messages, qos, simulator
from dyn_control.nodes.rcl_io import RawPublisher

pytest.importorskip("rosbags", reason="the oracle reads the messages with rosbags (pip install .[identification])")
from rosbags.typesys import Stores, get_typestore  # noqa: E402

TYPESTORE = get_typestore(Stores.ROS2_KILTED)     # the distribution of the ros-* wheels
DELIVERY = 10.0        # [s] at most for a publisher and a subscription to match and a message to arrive

# the message type of each template, by node and by the name of its publisher (`<name>_pub`)
TEMPLATE_TYPES = {
    "controller": {"command": Float64MultiArray, "desired": JointState, "external": JointState,
                   "wrench": WrenchStamped, "gradient": Float64MultiArray, "estimate": Float64MultiArray,
                   "twist": Float64MultiArray, "joint_gradient": Float64MultiArray, "pose_error": TwistStamped},
    "simulator": {"joint": JointState, "applied": WrenchStamped},
}
TEMPLATES = [(node, name) for node, types in TEMPLATE_TYPES.items() for name in types]
BUILDERS = {"controller": lambda model, joints: controller_messages.message_templates(model, joints),
            "simulator": lambda model, joints: simulator.message_templates(model)}
# where each view of a template lies in its message
VIEW_FIELDS = {"data": ("data",), "position": ("position",), "velocity": ("velocity",), "effort": ("effort",),
               "force": ("wrench", "force"), "torque": ("wrench", "torque"), "angular": ("twist", "angular"),
               "linear": ("twist", "linear")}
# (robot, controlled joints or None for every one): names, counts and root names of several lengths
ROBOTS = [("arm7", None), ("arm7", ("arm7_joint2", "arm7_joint4", "arm7_joint7")), ("five_bar", None)]


@functools.lru_cache
def model_of(robot):
    return dc.load_urdf(dc.bundled_urdf(robot))


def template(node, name, robot, joints):
    """The RawMessage `node` builds for its publisher `name` on `robot`, and its message class."""
    model = model_of(robot)
    return BUILDERS[node](model, list(joints or model.actuated_joints))[name], TEMPLATE_TYPES[node][name]


def typename(cls):
    """rosbags' name of an rclpy message class: sensor_msgs/msg/JointState."""
    return f"{cls.__module__.split('.')[0]}/msg/{cls.__name__}"


def rclpy_values(message):
    """An rclpy message as nested dicts and lists."""
    if hasattr(message, "get_fields_and_field_types"):
        return {name: rclpy_values(getattr(message, name)) for name in message.get_fields_and_field_types()}
    if isinstance(message, (list, tuple, array.array, np.ndarray)):
        return [rclpy_values(item) for item in message]
    return message[0] if isinstance(message, bytes) else message       # an octet (rclpy: one byte)


def rosbags_values(message):
    """A rosbags message as nested dicts and lists (rclpy_values' layout: its type's fields only)."""
    if hasattr(message, "__msgtype__"):
        return {name: rosbags_values(getattr(message, name))
                for name, _ in TYPESTORE.get_msgdef(message.__msgtype__).fields}
    if isinstance(message, (list, tuple, np.ndarray)):
        return [rosbags_values(item) for item in message]
    return message.item() if isinstance(message, np.generic) else message


def numbers_at(values, path):
    """The numbers at `path` in rclpy_values' layout (a Vector3 as [x, y, z])."""
    for name in path:
        values = values[name]
    return list(values.values()) if isinstance(values, dict) else values


def read_back(data, cls):
    """rclpy's reading of `data` (rclpy_values' layout), checked against rosbags': the same values,
    and the same bytes from rosbags' serializer."""
    assert bytes(data[:4]) == b"\x00\x01\x00\x00", "not little-endian plain CDR"
    read = rclpy_values(deserialize_message(bytes(data), cls))
    theirs = TYPESTORE.deserialize_cdr(bytes(data), typename(cls))      # SerdeError on a size mismatch
    assert rosbags_values(theirs) == read
    assert bytes(TYPESTORE.serialize_cdr(theirs, typename(cls))) == bytes(data)
    return read


def fill(raw, cls, rng):
    """Fill `raw` as a loop does: its header's stamp (a stamped message) and every view. Returns the
    stamp (None: unstamped) and the values of each view."""
    stamp = None
    if "header" in cls.get_fields_and_field_types():
        stamp = int(rng.integers(0, 2 ** 31)) * 1_000_000_000 + int(rng.integers(0, 1_000_000_000))
        raw.set_stamp(stamp)
    values = {}
    for key, view in raw.views.items():
        view[:] = rng.normal(size=view.shape)
        values[key] = view.tolist()
    return stamp, values


def check_filled(data, cls, stamp, values):
    read = read_back(data, cls)
    if stamp is not None:
        assert read["header"]["stamp"] == dict(zip(("sec", "nanosec"), divmod(stamp, 1_000_000_000)))
    for key, numbers in values.items():
        assert numbers_at(read, VIEW_FIELDS[key]) == numbers, key


def test_each_template_the_nodes_build_is_listed_here():
    model = model_of("arm7")
    for node, types in TEMPLATE_TYPES.items():
        assert set(BUILDERS[node](model, list(model.actuated_joints))) == set(types), node


@pytest.mark.parametrize("robot, joints", ROBOTS, ids=["arm7", "arm7-3-joints", "five_bar"])
@pytest.mark.parametrize("node, name", TEMPLATES)
def test_a_filled_template_is_the_cdr_of_its_values(node, name, robot, joints):
    raw, cls = template(node, name, robot, joints)
    rng = np.random.default_rng(7)
    for _ in range(2):          # filled again in place, as every tick does
        stamp, values = fill(raw, cls, rng)
        check_filled(raw.bytes(), cls, stamp, values)


def object_messages():
    """The messages the nodes publish as objects, built as they build them ({name: (message, QoS)}):
    a /diagnostics status and a ~/collision event (strings of every length modulo 4, so every
    alignment after them), and a label list (~/parameter_labels)."""
    values = [KeyValue(key="k" * (1 + k), value="v" * k) for k in range(8)]
    diagnostics = DiagnosticArray(status=[DiagnosticStatus(
        level=DiagnosticStatus.WARN, name="dyn_controller: control loop", message="waiting for /joint_states",
        hardware_id="arm7", values=values)])
    diagnostics.header.stamp.sec, diagnostics.header.stamp.nanosec = 1_700_000_000, 123_456_789
    collision = DiagnosticArray(status=[DiagnosticStatus(
        level=DiagnosticStatus.ERROR, name="dyn_controller: collision", message="collision on arm7_joint4",
        hardware_id="arm7", values=values[:3])])
    labels = String(data="\n".join(f"arm7_link{k}/m" for k in range(1, 8)))
    return {"diagnostics": (diagnostics, qos.STATE), "collision": (collision, qos.STATE),
            "labels": (labels, qos.LATCHED)}


@pytest.fixture(scope="module")
def dds_node():
    import rclpy
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("cdr_messages_test", context=context)
    yield node
    node.destroy_node()
    rclpy.try_shutdown(context=context)


def recorded(node, topic, cls, profile, publish):
    """The bytes a recorder's subscription (bag_recorder.py) takes of what publish(publisher) sends on
    `topic` through a publisher of QoS `profile`."""
    subscription = qos.PolledSubscription(node, cls, topic, qos.recording(10))
    publisher = node.create_publisher(cls, topic, profile)
    deadline = time.monotonic() + DELIVERY
    while publisher.get_subscription_count() == 0:
        assert time.monotonic() < deadline, f"no subscription matched on {topic}"
        time.sleep(0.01)
    publish(publisher)
    while (taken := subscription.take_raw()) is None:
        assert time.monotonic() < deadline, f"nothing arrived on {topic}"
        time.sleep(0.01)
    return taken[0]


@pytest.mark.ros
@pytest.mark.parametrize("node, name", TEMPLATES)
def test_a_template_as_recorded_from_dds_is_the_cdr_of_its_values(dds_node, node, name):
    raw, cls = template(node, name, "arm7", None)
    filled = fill(raw, cls, np.random.default_rng(11))
    data = recorded(dds_node, f"/cdr_messages_test/{node}_{name}", cls, qos.STATE,
                    lambda publisher: RawPublisher(publisher, raw).publish())
    check_filled(data, cls, *filled)


@pytest.mark.ros
@pytest.mark.parametrize("name", list(object_messages()))
def test_a_message_published_as_an_object_as_recorded_from_dds_is_its_cdr(dds_node, name):
    message, profile = object_messages()[name]
    data = recorded(dds_node, f"/cdr_messages_test/{name}", type(message), profile,
                    lambda publisher: publisher.publish(message))
    assert read_back(data, type(message)) == rclpy_values(message)
