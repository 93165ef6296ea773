"""Trajectory interpolation (dyn_control.control.trajectory) against independent references:
SciPy's cubic Hermite spline, NumPy's linear interpolation, the quintic's boundary conditions and
central differences of the sampled positions, and for a trajectory as MoveIt sends it (its start
state at time_from_start 0, then points with positions, velocities and accelerations) the closed
form of the motion it was sampled from; the refusals of bad messages, and of a start state away
from the measured positions."""
import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from scipy.interpolate import CubicHermiteSpline
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from dyn_control.control.trajectory import (START_TOLERANCE, InvalidJoints, Points, Trajectory, check_names,
                                            check_start, check_values, points_from_message)

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
    (["a"], [(0.0, {"positions": [0.0]}), (0.0, {"positions": [1.0]})], "point 1 at 0 s after 0 s"),
    (["a"], [(0.0, {"positions": [0.0]})], "one point, at time_from_start 0: a start state with no point to move to"),
    (["a", "b"], [(1.0, {"positions": [0.0]})], "every point needs 2 positions, got lengths from 1 to 1"),
    (["a"], [(1.0, {"positions": [0.0]}), (2.0, {"positions": [float("nan")]})], "non-finite positions at point 1"),
    (["a"], [(1.0, {"positions": [0.0], "velocities": [float("inf")]})], "non-finite velocities at point 0"),
    (["a"], [(1.0, {"positions": [0.0], "velocities": [0.0, 1.0]})], "velocities: none or 1 in every point"),
    (["a"], [(1.0, {"positions": [0.0], "velocities": [0.0]}), (2.0, {"positions": [0.0]})],
     "velocities: none or 1 in every point, got lengths from 0 to 1"),
    (["a"], [(1.0, {"positions": [0.0], "accelerations": [0.0]})], "accelerations without velocities"),
], ids=["unknown joint", "duplicate", "no names", "empty", "equal times", "two at zero", "only a start state",
        "short positions", "nan",
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


# ---------------------------------------------------------------- a trajectory as MoveIt sends it
DURATION = 1.2                 # [s] of the motion
STEPS = 24                     # points after the start state (MoveIt sends tens)


def minimum_jerk(q0, q1, t):
    """Positions, velocities, accelerations (len(t), n) of the minimum-jerk motion from rest at q0
    to rest at q1 over DURATION: the reference the points below are sampled from."""
    s = np.clip(np.asarray(t) / DURATION, 0.0, 1.0)[:, None]
    d = (q1 - q0)[None, :]
    return (q0 + d * (10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5),
            d * (30 * s ** 2 - 60 * s ** 3 + 30 * s ** 4) / DURATION,
            d * (60 * s - 180 * s ** 2 + 120 * s ** 3) / DURATION ** 2)


def moveit_points(q0, q1, names):
    """MoveIt's shape: the start state q0 (at rest) at time 0, then STEPS points of the motion."""
    times = np.linspace(0.0, DURATION, STEPS + 1)
    return Points(0, names, times, *minimum_jerk(q0, q1, times))


def test_a_moveit_trajectory_is_accepted_and_is_the_motion_it_was_sampled_from():
    q0 = np.array([0.1, -0.2, 0.3, 0.0])
    target = np.array([0.7, -0.9])
    points = moveit_points(q0[MOVED], target, ["c", "a"])
    check_values(points)
    check_start(points, q0[MOVED])
    trajectory = Trajectory.through(T0, (q0, np.zeros(NV), np.zeros(NV)), MOVED, points.times, points.positions,
                                    points.velocities, points.accelerations)
    assert trajectory.knots.tolist() == (T0 + points.times).tolist()      # the start state is the start
    t = np.linspace(0.0, DURATION + 0.5, 341)
    q, v, a = sampled(trajectory, T0 + t)
    expected = minimum_jerk(q0[MOVED], target, t)
    for got, want, tolerance in zip((q, v, a), expected, (1e-12, 1e-10, 1e-8)):
        np.testing.assert_allclose(got[:, MOVED], want, atol=tolerance)
    assert np.all(q[:, [1, 3]] == q0[[1, 3]])


def test_a_start_state_off_the_reference_is_not_jumped_to():
    """The first segment runs from the reference to the second point: the same trajectory as without
    the start state, starting where the reference is."""
    reference = tuple(x.copy() for x in START)
    points = moveit_points(START[0][MOVED] + 0.01, np.array([0.7, -0.9]), ["c", "a"])
    check_start(points, START[0][MOVED])            # within START_TOLERANCE
    fields = (points.positions, points.velocities, points.accelerations)
    with_start = Trajectory.through(T0, reference, MOVED, points.times, *fields)
    without = Trajectory.through(T0, reference, MOVED, points.times[1:], *(f[1:] for f in fields))
    np.testing.assert_array_equal(with_start.knots, without.knots)
    np.testing.assert_array_equal(with_start.coefficients, without.coefficients)
    q, v, a = sampled(with_start, [T0])[:, 0]
    np.testing.assert_array_equal(q, START[0])
    np.testing.assert_array_equal(v[MOVED], START[1][MOVED])
    np.testing.assert_array_equal(a[MOVED], START[2][MOVED])


def test_a_start_state_away_from_the_measured_positions_is_refused_naming_the_joint():
    names = ["c", "a", "b"]
    measured = np.array([0.3, -0.2, 1.0])
    points = moveit_points(measured + [0.25, 0.0, -0.08], measured + 0.5, names)
    with pytest.raises(ValueError) as refused:
        check_start(points, measured, np.array([0.1, 0.1, 0.0]))       # b: unchecked, START_TOLERANCE
    assert str(refused.value) == (
        "the start state (point 0, time_from_start 0) is not where the robot is: c 0.25 from its measured "
        "position 0.3 (start tolerance 0.1); b 0.08 from its measured position 1 "
        f"(start tolerance {START_TOLERANCE:g})")
    check_start(points, measured, np.array([0.3, 0.1, 0.1]))           # within the given tolerances
    with pytest.raises(ValueError, match=r"c 0.25 from .* b 0.08 from"):
        check_start(points, measured)                                  # START_TOLERANCE for each


def test_only_a_start_state_at_time_zero_is_judged():
    far = Points(0, ["a"], np.array([0.5, 1.0]), np.array([[3.0], [3.0]]))
    check_start(far, np.zeros(1))                    # starts 0.5 s from now: interpolated from the reference
    nan = Points(0, ["a"], np.array([0.0, 1.0]), np.array([[np.nan], [3.0]]))
    check_start(nan, np.zeros(1))                    # left to check_values
    with pytest.raises(ValueError, match="non-finite positions at point 0"):
        check_values(nan)


def test_a_negative_first_time_is_refused():
    with pytest.raises(ValueError, match="time_from_start of point 0 is -0.5 s: must be >= 0"):
        check_values(Points(0, ["a"], np.array([-0.5, 1.0]), np.zeros((2, 1))))
    msg = message(["a"], [(1.0, {"positions": [0.0]})])
    msg.points[0].time_from_start = Duration(sec=-1, nanosec=500_000_000)
    with pytest.raises(ValueError, match="is -0.5 s"):
        judged(msg)
