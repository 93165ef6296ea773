"""Trajectory interpolation (dyn_control.control.trajectory) against independent references:
SciPy's cubic Hermite spline, NumPy's linear interpolation, the quintic's boundary conditions and
central differences of the sampled positions; and the refusals of bad messages."""
import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from scipy.interpolate import CubicHermiteSpline
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from dyn_control.control.trajectory import (InvalidJoints, Trajectory, check_values, check_names,
                                            points_from_message)

pytestmark = pytest.mark.kernels

NV = 4
START = (np.array([0.1, -0.2, 0.3, 0.0]), np.array([0.5, 0.0, -0.2, 0.0]), np.array([0.0, 1.0, 0.0, 0.0]))
MOVED = np.array([2, 0])                 # coordinates the trajectory names (out of order); 1, 3 hold
TIMES = np.array([0.4, 1.0, 1.5])
POSITIONS = np.array([[0.5, 0.3], [0.1, 0.6], [-0.2, 0.2]])
VELOCITIES = np.array([[0.2, 0.1], [-0.3, 0.0], [0.0, 0.0]])
ACCELERATIONS = np.array([[0.0, 1.0], [0.5, -0.5], [0.0, 0.0]])
T0 = 2.0


def sampled(trajectory, times):
    out = np.zeros((3, len(times), NV))
    for k, t in enumerate(times):
        trajectory.sample(t, out[0, k], out[1, k], out[2, k])
    return out


def test_cubic_with_velocities_is_scipys_hermite_spline():
    trajectory = Trajectory.through(T0, START, MOVED, TIMES, POSITIONS, VELOCITIES)
    t = np.linspace(T0, T0 + TIMES[-1], 97)[:-1]     # at the end the reference comes to rest
    q, v, a = sampled(trajectory, t)
    knots = T0 + np.concatenate([[0.0], TIMES])
    for column, j in enumerate(MOVED):
        spline = CubicHermiteSpline(knots, np.concatenate([[START[0][j]], POSITIONS[:, column]]),
                                    np.concatenate([[START[1][j]], VELOCITIES[:, column]]))
        np.testing.assert_allclose(q[:, j], spline(t), atol=1e-12)
        np.testing.assert_allclose(v[:, j], spline(t, 1), atol=1e-10)
        np.testing.assert_allclose(a[:, j], spline(t, 2), atol=1e-8)
    for j in (1, 3):
        assert np.all(q[:, j] == START[0][j]) and np.all(v[:, j] == 0.0) and np.all(a[:, j] == 0.0)


def test_linear_with_positions_only_is_numpys_interp():
    trajectory = Trajectory.through(T0, START, MOVED, TIMES, POSITIONS)
    t = np.linspace(T0, T0 + TIMES[-1], 61)
    q, v, a = sampled(trajectory, t)
    knots = T0 + np.concatenate([[0.0], TIMES])
    for column, j in enumerate(MOVED):
        np.testing.assert_allclose(q[:, j], np.interp(t, knots, np.concatenate([[START[0][j]], POSITIONS[:, column]])),
                                   atol=1e-12)
    assert np.all(a == 0.0)


def test_quintic_meets_every_point_and_its_derivatives_are_consistent():
    trajectory = Trajectory.through(T0, START, MOVED, TIMES, POSITIONS, VELOCITIES, ACCELERATIONS)
    knots = T0 + np.concatenate([[0.0], TIMES])
    # at each knot (from the segment that ends there, and the one that starts there) the point holds
    for k, t in enumerate(knots[1:]):
        for side in (-1e-12, 0.0):
            q, v, a = sampled(trajectory, [t + side])[:, 0]
            np.testing.assert_allclose(q[MOVED], POSITIONS[k], atol=1e-9)
            np.testing.assert_allclose(v[MOVED], VELOCITIES[k], atol=1e-9)
            if k < len(TIMES) - 1:
                np.testing.assert_allclose(a[MOVED], ACCELERATIONS[k], atol=1e-7)
    q, v, a = sampled(trajectory, [T0])[:, 0]
    np.testing.assert_allclose(q, START[0], atol=1e-12)
    np.testing.assert_allclose((v[MOVED], a[MOVED]), (START[1][MOVED], START[2][MOVED]), atol=1e-12)
    t = np.linspace(T0 + 0.05, T0 + TIMES[-1] - 0.05, 23)
    h = 1e-5
    (qp, vp, _), (qm, vm, _), (_, v, a) = sampled(trajectory, t + h), sampled(trajectory, t - h), sampled(trajectory, t)
    np.testing.assert_allclose((qp - qm) / (2 * h), v, atol=1e-7)
    np.testing.assert_allclose((vp - vm) / (2 * h), a, atol=1e-6)


def test_before_the_start_and_after_the_end():
    trajectory = Trajectory.through(T0, START, MOVED, TIMES, POSITIONS, VELOCITIES)
    q, v, a = sampled(trajectory, [T0 + TIMES[-1] + 3.0])[:, 0]
    np.testing.assert_allclose(q[MOVED], POSITIONS[-1])
    assert np.all(v == 0.0) and np.all(a == 0.0)
    q, _, _ = sampled(trajectory, [T0 - 1.0])[:, 0]
    np.testing.assert_allclose(q, START[0])


def test_a_new_trajectory_replaces_the_rest_of_the_old_from_its_start():
    old = Trajectory.through(T0, START, MOVED, TIMES, POSITIONS, VELOCITIES)
    switch = T0 + 0.7
    state = tuple(x[0] for x in sampled(old, [switch]))
    new = Trajectory.through(switch, state, np.array([1]), np.array([0.5]), np.array([[0.9]]), np.array([[0.0]]))
    combined = old.then(new)
    before = np.linspace(T0, switch - 1e-9, 17)
    np.testing.assert_allclose(sampled(combined, before), sampled(old, before), atol=1e-12)
    after = np.linspace(switch, switch + 1.0, 17)
    np.testing.assert_allclose(sampled(combined, after), sampled(new, after), atol=1e-12)


def message(names, points, stamp=(0, 0)):
    msg = JointTrajectory(joint_names=names)
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamp
    for t, fields in points:
        msg.points.append(JointTrajectoryPoint(time_from_start=Duration(sec=int(t), nanosec=int(round(t % 1 * 1e9))),
                                               **fields))
    return msg


CONTROLLED = ["a", "b", "c"]


def judged(msg, max_points=100):
    """The message's points and joint indices, judged as the controller judges them."""
    points = points_from_message(msg, max_points)
    indices = check_names(points.names, CONTROLLED)
    check_values(points)
    return points, indices


def test_a_message_by_joint_name():
    points, indices = judged(
        message(["c", "a"], [(0.5, {"positions": [1.0, 2.0], "velocities": [0.0, 0.1]}),
                             (1.0, {"positions": [3.0, 4.0], "velocities": [0.0, 0.0]})], stamp=(7, 5)))
    assert points.stamp_ns == 7_000_000_005 and indices.tolist() == [2, 0] and points.times.tolist() == [0.5, 1.0]
    np.testing.assert_array_equal(points.positions, [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(points.velocities, [[0.0, 0.1], [0.0, 0.0]])
    assert points.accelerations is None


def test_more_points_than_the_limit_are_refused_before_their_values_are_read():
    msg = message(["a"], [(0.1 * (k + 1), {"positions": [0.0]}) for k in range(11)])
    with pytest.raises(ValueError, match="11 points, more than trajectory.max_points = 10"):
        points_from_message(msg, 10)
    assert points_from_message(msg, 11).times.shape == (11,)


@pytest.mark.parametrize("names, points, reason", [
    (["a", "x"], [(1.0, {"positions": [0.0, 0.0]})], "unknown or not controlled joints"),
    (["a", "a"], [(1.0, {"positions": [0.0, 0.0]})], "named twice"),
    ([], [(1.0, {"positions": []})], "no joint_names"),
    (["a"], [], "no points"),
    (["a"], [(1.0, {"positions": [0.0]}), (1.0, {"positions": [1.0]})], "point 1 at 1 s after 1 s"),
    (["a"], [(0.0, {"positions": [0.0]})], "point 0 at 0 s from > 0"),
    (["a", "b"], [(1.0, {"positions": [0.0]})], "every point needs 2 positions, got lengths from 1 to 1"),
    (["a"], [(1.0, {"positions": [0.0]}), (2.0, {"positions": [float("nan")]})], "non-finite positions at point 1"),
    (["a"], [(1.0, {"positions": [0.0], "velocities": [float("inf")]})], "non-finite velocities at point 0"),
    (["a"], [(1.0, {"positions": [0.0], "velocities": [0.0, 1.0]})], "velocities: none or 1 in every point"),
    (["a"], [(1.0, {"positions": [0.0], "velocities": [0.0]}), (2.0, {"positions": [0.0]})],
     "velocities: none or 1 in every point, got lengths from 0 to 1"),
    (["a"], [(1.0, {"positions": [0.0], "accelerations": [0.0]})], "accelerations without velocities"),
], ids=["unknown joint", "duplicate", "no names", "empty", "equal times", "zero time", "short positions", "nan",
        "inf velocity", "long velocities", "velocities in some points", "accelerations only"])
def test_bad_messages_are_refused_with_a_reason(names, points, reason):
    with pytest.raises(ValueError, match=reason):
        judged(message(names, points))


def test_joint_name_refusals_are_invalid_joints():
    with pytest.raises(InvalidJoints):
        judged(message(["a", "x"], [(1.0, {"positions": [0.0, 0.0]})]))
    with pytest.raises(ValueError) as refused:
        judged(message(["a"], [(0.0, {"positions": [0.0]})]))
    assert not isinstance(refused.value, InvalidJoints)


def test_hold_keeps_every_joint_at_rest():
    q_hold = np.array([0.3, -0.1, 0.2, 0.5])
    q, v, a = sampled(Trajectory.hold(T0, q_hold), [T0 - 1.0, T0, T0 + 0.3, T0 + 5.0])
    np.testing.assert_array_equal(q, np.tile(q_hold, (4, 1)))
    assert np.all(v == 0.0) and np.all(a == 0.0)
