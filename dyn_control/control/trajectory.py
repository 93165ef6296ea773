"""Joint trajectories interpolated as ros2_controllers' joint_trajectory_controller does.

Between consecutive points the reference of each joint is a polynomial in the time since the
segment's start: quintic when the points give positions, velocities and accelerations (position,
velocity and acceleration continuous), cubic with positions and velocities, linear with positions
only (constant velocity, zero acceleration). The first segment starts from the reference the
controller has when the trajectory starts (its position, velocity and acceleration), so a new
trajectory never makes the reference jump; after the last point the joints hold it at rest.

A trajectory names the joints it moves; the other controlled joints hold their reference at its
start. A trajectory that starts later than an earlier one's remaining points replaces them from its
start on: the earlier one runs until then (`then`).

Times from the start are >= 0 and increase strictly, as joint_trajectory_controller requires. A
first point at time_from_start 0 is the trajectory's start state: MoveIt's time parametrization puts
the state it planned from (the robot's, when it planned) there. joint_trajectory_controller makes it
the reference at once (a jump, as large as the start state is far from the reference) and aborts an
action goal at its first check when the arm is beyond the path tolerance from it. Here the
reference never jumps: the first segment runs from the controller's reference to the second point,
the start state's values unused, and `check_start` refuses a start state that is not where the robot
is, before anything moves (the distance would otherwise be made up within the first segment, 0.1 s
or less in MoveIt's trajectories: a fast motion nobody planned).

A message becomes `Points` (its names, times and values as arrays; nodes/trajectory_input.py decodes
the ~/joint_trajectory topic from its bytes, `points_from_message` an rclpy message such as an
action goal's), which `check_names`, `check_values` and `check_start` (against the measured state)
judge: a ValueError says why it is refused, an InvalidJoints for its joint names.

Building never holds the GIL for long, as it runs beside the controller's loop thread, which needs
the GIL every tick: the checks of the values, the coefficients of the segments and the joining of
two trajectories are @njit(nogil=True) kernels over the whole arrays; Python does per-message work
only, and numpy nothing that grows with the number of points.
"""
from dataclasses import dataclass

import numpy as np

from ..jit import njit


class InvalidJoints(ValueError):
    """A trajectory's joint names are not a set of controlled joints."""


@dataclass
class Points:
    """The content of a trajectory message: `stamp_ns` its header stamp [ns] (0: now), the joints
    `names` (n), the points' `times` from the start (K,) [s] and their `positions`, `velocities`
    and `accelerations` (K, n) each (velocities and accelerations: None when the points give none)."""
    stamp_ns: int
    names: list
    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray = None
    accelerations: np.ndarray = None


class Trajectory:
    """Knots t_0 < t_1 < ... < t_K [s] and coefficients (K, nv, 6): on [t_k, t_k+1] joint j's
    reference is sum_i c[k, j, i] (t - t_k)^i. Before t_0 and after t_K the end states hold."""

    def __init__(self, knots, coefficients):
        self.knots = np.ascontiguousarray(knots, dtype=np.float64)
        self.coefficients = np.ascontiguousarray(coefficients, dtype=np.float64)

    @classmethod
    def through(cls, start_time, start, indices, times, positions, velocities=None, accelerations=None):
        """The trajectory from `start` = (q, v, a) (each (nv,), the reference at start_time [s])
        through the points at start_time + times [s] (strictly increasing, >= 0): positions (K, n)
        of the joints `indices` (n coordinates of the nv), velocities and accelerations likewise or
        None. The other joints hold start's position. A first point at time 0 is the start state
        (see the module docstring): the first segment runs from `start` to the second point."""
        q0, v0, a0 = (np.ascontiguousarray(x, dtype=np.float64) for x in start)
        times = np.ascontiguousarray(times, dtype=np.float64)
        positions = _matrix(positions)
        n = positions.shape[1]
        order = 5 if accelerations is not None else 3 if velocities is not None else 1
        velocities, accelerations = _matrix(velocities, n), _matrix(accelerations, n)
        if times[0] == 0.0:         # views without the start state (a (0, n) field stays empty)
            times, positions = times[1:], positions[1:]
            velocities, accelerations = velocities[1:], accelerations[1:]
        count = times.shape[0]
        knots = np.empty(count + 1)
        coefficients = np.empty((count, q0.shape[0], 6))
        _segments(float(start_time), q0, v0, a0, np.ascontiguousarray(indices, dtype=np.int64), times, positions,
                  velocities, accelerations, order, knots, coefficients)
        return cls(knots, coefficients)

    @classmethod
    def hold(cls, start_time, q):
        """Every joint at rest at q (nv,) from start_time [s] on."""
        q = np.ascontiguousarray(q, dtype=np.float64)
        return cls.through(start_time, (q, np.zeros_like(q), np.zeros_like(q)), np.zeros(0, dtype=np.int64),
                           np.ones(1), np.zeros((1, 0)))

    def then(self, other):
        """This trajectory until `other` starts, then `other`."""
        keep = int(np.searchsorted(self.knots, other.knots[0], side="left"))   # segments that begin before it
        keep = min(keep, self.coefficients.shape[0])
        knots = np.empty(keep + other.knots.shape[0])
        coefficients = np.empty((keep + other.coefficients.shape[0],) + other.coefficients.shape[1:])
        _join(self.knots, self.coefficients, keep, other.knots, other.coefficients, knots, coefficients)
        return Trajectory(knots, coefficients)

    @property
    def end(self):
        """The time of the last point [s]."""
        return self.knots[-1]

    def sample(self, t, q, v, a):
        """The reference at time t [s] into q, v, a (each (nv,))."""
        sample(self.knots, self.coefficients, t, q, v, a)


def _matrix(values, n=None):
    """values as a C-contiguous float64 (K, n) array; None as an empty (0, n) one."""
    if values is None:
        return np.zeros((0, n))
    return np.ascontiguousarray(values, dtype=np.float64)


@njit(cache=True, nogil=True)
def _segments(start_time, q0, v0, a0, indices, times, positions, velocities, accelerations, order, knots,
              coefficients):
    """knots (K + 1,) and coefficients (K, nv, 6) of the trajectory from (q0, v0, a0) at start_time
    through the points: polynomials of `order` (1, 3, 5) for the joints `indices`, constants at
    q0 for the others."""
    count = times.shape[0]
    knots[0] = start_time
    for k in range(count):
        knots[k + 1] = start_time + times[k]
    coefficients[:] = 0.0
    for k in range(count):
        for j in range(q0.shape[0]):
            coefficients[k, j, 0] = q0[j]
    for column in range(indices.shape[0]):
        j = indices[column]
        q, v, a = q0[j], v0[j], a0[j]
        for k in range(count):
            T = knots[k + 1] - knots[k]
            q1 = positions[k, column]
            v1 = velocities[k, column] if order >= 3 else 0.0
            a1 = accelerations[k, column] if order == 5 else 0.0
            _segment(q, v, a, q1, v1, a1, T, order, coefficients[k, j])
            q, v, a = q1, v1, a1


@njit(cache=True, nogil=True, inline="always")
def _segment(q0, v0, a0, q1, v1, a1, T, order, c):
    """Coefficients c (6,) of the polynomial from (q0, v0, a0) at 0 to (q1, v1, a1) at T: quintic
    (order 5), cubic (3: positions and velocities), linear (1: positions)."""
    dq = q1 - q0
    c[0] = q0
    if order == 1:
        c[1] = dq / T
    elif order == 3:
        c[1] = v0
        c[2] = (3.0 * dq - (2.0 * v0 + v1) * T) / T ** 2
        c[3] = (-2.0 * dq + (v0 + v1) * T) / T ** 3
    else:
        c[1], c[2] = v0, 0.5 * a0
        c[3] = (20.0 * dq - (8.0 * v1 + 12.0 * v0) * T - (3.0 * a0 - a1) * T ** 2) / (2.0 * T ** 3)
        c[4] = (-30.0 * dq + (14.0 * v1 + 16.0 * v0) * T + (3.0 * a0 - 2.0 * a1) * T ** 2) / (2.0 * T ** 4)
        c[5] = (12.0 * dq - 6.0 * (v1 + v0) * T + (a1 - a0) * T ** 2) / (2.0 * T ** 5)


@njit(cache=True, nogil=True)
def _join(knots_a, coefficients_a, keep, knots_b, coefficients_b, knots, coefficients):
    """The first `keep` segments of a, then b, into knots and coefficients."""
    knots[:keep] = knots_a[:keep]
    knots[keep:] = knots_b
    coefficients[:keep] = coefficients_a[:keep]
    coefficients[keep:] = coefficients_b


@njit(cache=True, nogil=True)
def sample(knots, coefficients, t, q, v, a):
    """Evaluate the piecewise polynomial at t: before the first knot its start, after the last its
    end state at rest."""
    count = coefficients.shape[0]
    if t <= knots[0]:
        k, s = 0, 0.0
    elif t >= knots[count]:
        k, s = count - 1, knots[count] - knots[count - 1]
    else:
        k = np.searchsorted(knots, t, side="right") - 1
        s = t - knots[k]
    after = t >= knots[count]
    for j in range(q.shape[0]):
        c = coefficients[k, j]
        q[j] = c[0] + s * (c[1] + s * (c[2] + s * (c[3] + s * (c[4] + s * c[5]))))
        if after:
            v[j] = 0.0
            a[j] = 0.0
        else:
            v[j] = c[1] + s * (2.0 * c[2] + s * (3.0 * c[3] + s * (4.0 * c[4] + s * 5.0 * c[5])))
            a[j] = 2.0 * c[2] + s * (6.0 * c[3] + s * (12.0 * c[4] + s * 20.0 * c[5]))


# ---------------------------------------------------------------- messages
FIELDS = ("positions", "velocities", "accelerations")


def check_lengths(field, lengths, n):
    """Whether the points give `field` (one of FIELDS), from the number of values of each point
    (an int array, one or more points): positions one per joint in every point; velocities and accelerations one per
    joint in every point, or none in all. A ValueError says otherwise."""
    low, high = int(lengths.min()), int(lengths.max())
    if field == "positions" and not low == high == n:
        raise ValueError(f"every point needs {n} positions, got lengths from {low} to {high}")
    if not (low == high and low in (0, n)):
        raise ValueError(f"{field}: none or {n} in every point, got lengths from {low} to {high}")
    return low == n


def assemble(stamp_ns, names, times, lengths, values):
    """Points from the parts of a message: its stamp, joint names, the points' times (K,),
    `lengths` (K, 3) the numbers of positions, velocities and accelerations of each point, and
    values(f), the (K, n) values of field FIELDS[f], asked for the fields the points give only."""
    n = len(names)
    if times.shape[0] == 0 or n == 0:      # refused by check_names or check_values
        return Points(stamp_ns, names, np.zeros(0), np.zeros((0, n)))
    given = [check_lengths(field, lengths[:, f], n) for f, field in enumerate(FIELDS)]
    if given[2] and not given[1]:
        raise ValueError("accelerations without velocities")
    return Points(stamp_ns, names, times, *(values(f) if given[f] else None for f in range(3)))


def points_from_message(msg, max_points):
    """Points of a trajectory_msgs/JointTrajectory as rclpy gives it (e.g. the trajectory of an
    action goal); more than max_points points are refused before their values are read."""
    points = msg.points
    if len(points) > max_points:
        raise ValueError(f"{len(points)} points, more than trajectory.max_points = {max_points}")
    names = list(msg.joint_names)
    times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in points])
    sequences = [[getattr(p, field) for p in points] for field in FIELDS]
    lengths = np.zeros((len(points), 3), dtype=np.int64)
    for f, column in enumerate(sequences):
        lengths[:, f] = np.fromiter(map(len, column), dtype=np.int64, count=len(points))

    def values(f):      # joined 1024 points at a time: no single long call holding the GIL
        column = sequences[f]
        return np.concatenate([np.frombuffer(_double_bytes(column[k:k + 1024]))
                               for k in range(0, len(column), 1024)]).reshape(len(points), -1)
    return assemble(msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec, names, times, lengths,
                    values)


def _double_bytes(sequences):
    """The float64 values of sequences (array.array('d') as rclpy keeps them, or lists) as bytes."""
    return b"".join(s.tobytes() if hasattr(s, "tobytes") else np.asarray(s, dtype=np.float64).tobytes()
                    for s in sequences)


def check_names(names, controlled_names):
    """Positions of the trajectory's joints `names` in `controlled_names`; InvalidJoints when one
    is unknown (or not controlled), named twice, or none is named."""
    if not names:
        raise InvalidJoints("no joint_names")
    unknown = [n for n in names if n not in controlled_names]
    if unknown:
        raise InvalidJoints(f"unknown or not controlled joints {unknown} (controlled: {list(controlled_names)})")
    if len(set(names)) != len(names):
        raise InvalidJoints("a joint named twice")
    return np.array([list(controlled_names).index(name) for name in names], dtype=np.int64)


# _check_values results
VALUES_OK, BAD_TIME, NON_FINITE = 0, 1, 2


def check_values(points):
    """A ValueError unless `points` has points, times from >= 0 that increase strictly (a first
    point at 0, the start state, followed by at least one more), and finite values."""
    if points.times.shape[0] == 0:
        raise ValueError("no points")
    n = len(points.names)
    fields = [points.positions, _matrix(points.velocities, n), _matrix(points.accelerations, n)]
    result, at, field = _check_values(np.ascontiguousarray(points.times, dtype=np.float64),
                                      *(np.ascontiguousarray(x, dtype=np.float64) for x in fields))
    if result == BAD_TIME:
        if at == 0:
            raise ValueError(f"time_from_start of point 0 is {points.times[0]:.9g} s: must be >= 0")
        raise ValueError(f"time_from_start must increase strictly: point {at} at {points.times[at]:.9g} s "
                         f"after {points.times[at - 1]:.9g} s")
    if result == NON_FINITE:
        raise ValueError(f"non-finite {FIELDS[field]} at point {at}")
    if points.times.shape[0] == 1 and points.times[0] == 0.0:
        raise ValueError("one point, at time_from_start 0: a start state with no point to move to")


# [rad or m] how far a start state (a first point at time_from_start 0) may be from the measured
# position where no path tolerance applies (~/joint_trajectory; a goal's joint with its path position
# tolerance unchecked): 5 times MoveIt's own limit on the same distance when it sends a trajectory
# (trajectory_execution/allowed_start_tolerance, 0.01 rad), room for the arm's tracking error
START_TOLERANCE = 0.05


def check_start(points, measured, tolerance=None):
    """A ValueError naming each joint whose position in the start state (a first point at
    time_from_start 0) is further than its `tolerance` from its `measured` position (both (n,), in
    the order of points.names; tolerance None or an entry <= 0: START_TOLERANCE). Points that start
    later have no start state: nothing to judge. A non-finite position is left to check_values."""
    if points.times.shape[0] == 0 or points.times[0] != 0.0:
        return
    tolerance = np.zeros(len(points.names)) if tolerance is None else np.asarray(tolerance, dtype=np.float64)
    tolerance = np.where(tolerance > 0.0, tolerance, START_TOLERANCE)
    distance = np.abs(points.positions[0] - measured)
    far = np.flatnonzero(distance > tolerance)
    if far.size:
        raise ValueError("the start state (point 0, time_from_start 0) is not where the robot is: " + "; ".join(
            f"{points.names[j]} {distance[j]:.4g} from its measured position {measured[j]:.6g} "
            f"(start tolerance {tolerance[j]:.4g})" for j in far))


@njit(cache=True, nogil=True)
def _check_values(times, positions, velocities, accelerations):
    """(VALUES_OK | BAD_TIME | NON_FINITE, the first bad point, the field (0, 1, 2) of a non-finite
    value)."""
    for k in range(times.shape[0]):
        later = times[k] > times[k - 1] if k > 0 else times[k] >= 0.0
        if not (np.isfinite(times[k]) and later):
            return BAD_TIME, k, 0
    for field, values in enumerate((positions, velocities, accelerations)):
        for k in range(values.shape[0]):
            for j in range(values.shape[1]):
                if not np.isfinite(values[k, j]):
                    return NON_FINITE, k, field
    return VALUES_OK, 0, 0


def warm_up():
    """Compile (or load from Numba's cache) every kernel a trajectory is built and sampled with."""
    points = Points(0, ["a"], np.array([0.5, 1.0]), np.zeros((2, 1)), np.zeros((2, 1)), np.zeros((2, 1)))
    check_values(points)
    q = np.zeros(2)
    first = Trajectory.through(0.0, (q, q, q), np.arange(1), points.times, points.positions)
    second = Trajectory.through(0.5, (q, q, q), np.arange(1), points.times, points.positions, points.velocities,
                                points.accelerations)
    first.then(second).sample(0.7, q.copy(), q.copy(), q.copy())
