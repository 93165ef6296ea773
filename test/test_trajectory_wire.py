"""~/joint_trajectory decoded from its bytes (nodes/trajectory_input.py, wire.parse_joint_trajectory)
against rclpy's own message: every message rclpy serializes decodes to the Points that
points_from_message reads from the message object (the action's path), with the same refusals; and
the size limits refuse before values are read."""
import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from rclpy.serialization import serialize_message
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from dyn_control.control.trajectory import InvalidJoints, check_values, points_from_message
from dyn_control.nodes.trajectory_input import TrajectoryDecoder, message_bound

pytestmark = pytest.mark.kernels

CONTROLLED = ["shoulder", "elbow_joint", "w"]


def message(names, points, stamp=(0, 0), frame_id=""):
    msg = JointTrajectory(joint_names=names)
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamp
    msg.header.frame_id = frame_id
    for (sec, nanosec), fields in points:
        msg.points.append(JointTrajectoryPoint(time_from_start=Duration(sec=sec, nanosec=nanosec), **fields))
    return msg


def random_message(rng, count, fields, frame_id):
    names = list(rng.permutation(CONTROLLED)[:rng.integers(1, 4)])
    n = len(names)
    points = [((int(k // 3), int(rng.integers(0, 10 ** 9))),
               {field: rng.normal(size=n).tolist() for field in fields}) for k in range(count)]
    if rng.random() < 0.5:
        points[0][1]["effort"] = rng.normal(size=n).tolist()     # effort is ignored
    return message(names, points, stamp=(int(rng.integers(0, 2 ** 31)), int(rng.integers(0, 10 ** 9))),
                   frame_id=frame_id)


def assert_same(a, b):
    assert a.stamp_ns == b.stamp_ns and a.names == b.names
    np.testing.assert_array_equal(a.times, b.times)
    for field in ("positions", "velocities", "accelerations"):
        x, y = getattr(a, field), getattr(b, field)
        assert (x is None) == (y is None), field
        if x is not None:
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("seed", range(12))
def test_decoded_bytes_equal_the_message_object(seed):
    rng = np.random.default_rng(seed)
    fields = [("positions",), ("positions", "velocities"), ("positions", "velocities", "accelerations")][seed % 3]
    msg = random_message(rng, int(rng.integers(1, 40)), fields, frame_id="f" * (seed % 8))
    decoded = TrajectoryDecoder(100, CONTROLLED).decode(serialize_message(msg))
    assert_same(decoded, points_from_message(msg, 100))
    point = msg.points[-1]
    assert decoded.times[-1] == point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec
    np.testing.assert_array_equal(decoded.positions[-1], point.positions)


def test_a_moveit_trajectory_decodes_as_the_object_and_is_accepted():
    """MoveIt's shape: the start state at time_from_start 0, then points with positions, velocities
    and accelerations."""
    full = lambda q: {"positions": [q, -q], "velocities": [0.1, 0.2], "accelerations": [0.0, -0.3]}  # noqa: E731
    msg = message(["elbow_joint", "w"], [((0, 0), full(0.0))] + [((0, 100_000_000 * k), full(0.01 * k))
                                                                  for k in range(1, 10)])
    decoded = TrajectoryDecoder(100, CONTROLLED).decode(serialize_message(msg))
    assert_same(decoded, points_from_message(msg, 100))
    assert decoded.times[0] == 0.0
    check_values(decoded)


def test_negative_durations_and_empty_messages_decode_as_the_objects_do():
    for msg in (message(["w"], [((-1, 500_000_000), {"positions": [1.0]})]), message(["w"], []),
                message([], [((1, 0), {"positions": []})])):
        assert_same(TrajectoryDecoder(10, CONTROLLED).decode(serialize_message(msg)), points_from_message(msg, 10))
    assert TrajectoryDecoder(10, CONTROLLED).decode(serialize_message(message(["w"], [((-1, 500_000_000), {
        "positions": [1.0]})]))).times.tolist() == [-0.5]


@pytest.mark.parametrize("points, reason", [
    ([((1, 0), {"positions": [0.0]})], "every point needs 2 positions"),
    ([((1, 0), {"positions": [0.0, 1.0], "velocities": [0.0]})], "velocities: none or 2"),
    ([((1, 0), {"positions": [0.0, 1.0], "accelerations": [0.0, 1.0]})], "accelerations without velocities"),
], ids=["short positions", "short velocities", "accelerations only"])
def test_refusals_are_those_of_the_message_object(points, reason):
    msg = message(["w", "shoulder"], points)
    with pytest.raises(ValueError, match=reason) as from_bytes:
        TrajectoryDecoder(10, CONTROLLED).decode(serialize_message(msg))
    with pytest.raises(ValueError) as from_object:
        points_from_message(msg, 10)
    assert str(from_bytes.value) == str(from_object.value)


def test_size_limits_refuse_before_reading():
    many = message(["w"], [((k + 1, 0), {"positions": [0.0]}) for k in range(11)])
    with pytest.raises(ValueError, match="11 points, more than trajectory.max_points = 10"):
        TrajectoryDecoder(10, CONTROLLED).decode(serialize_message(many))
    assert TrajectoryDecoder(11, CONTROLLED).decode(serialize_message(many)).times.shape == (11,)
    with pytest.raises(InvalidJoints, match="4 joint names, more than the 3 controlled joints"):
        TrajectoryDecoder(10, CONTROLLED).decode(serialize_message(message(CONTROLLED + ["x"], [])))
    # a message beyond the byte bound of max_points full points is refused by its size alone
    full = {f: [0.0] * 3 for f in ("positions", "velocities", "accelerations", "effort")}
    fits = serialize_message(message(CONTROLLED, [((k + 1, 0), full) for k in range(10)], frame_id="x" * 1000))
    assert len(fits) <= message_bound(10, CONTROLLED)
    TrajectoryDecoder(10, CONTROLLED).decode(fits)
    with pytest.raises(ValueError, match="larger than"):
        TrajectoryDecoder(10, CONTROLLED).decode(fits + bytes(message_bound(10, CONTROLLED)))


def test_truncated_messages_are_malformed():
    raw = serialize_message(message(["w", "elbow_joint"], [((1, 0), {"positions": [0.0, 1.0]}),
                                                           ((2, 0), {"positions": [0.5, 1.0]})]))
    end = 136       # the last byte of the second point's time_from_start (rclpy's buffer has more)
    assert TrajectoryDecoder(10, CONTROLLED).decode(raw[:end]).times.tolist() == [1.0, 2.0]
    for length in (3, 12, 20, 31, 50, 82, 100, end - 1):
        with pytest.raises(ValueError, match="malformed"):
            TrajectoryDecoder(10, CONTROLLED).decode(raw[:length])
