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
"""
import math

import numpy as np
from numba import njit


class Trajectory:
    """Knots t_0 < t_1 < ... < t_K [s] and coefficients (K, nv, 6): on [t_k, t_k+1] joint j's
    reference is sum_i c[k, j, i] (t - t_k)^i. Before t_0 and after t_K the end states hold."""

    def __init__(self, knots, coefficients):
        self.knots = np.ascontiguousarray(knots, dtype=np.float64)
        self.coefficients = np.ascontiguousarray(coefficients, dtype=np.float64)

    @classmethod
    def through(cls, start_time, start, indices, times, positions, velocities=None, accelerations=None):
        """The trajectory from `start` = (q, v, a) (each (nv,), the reference at start_time [s])
        through the points at start_time + times [s] (strictly increasing, > 0): positions (K, n)
        of the joints `indices` (n coordinates of the nv), velocities and accelerations likewise or
        None. The other joints hold start's position."""
        q0, v0, a0 = (np.asarray(x, dtype=np.float64) for x in start)
        nv, count = q0.shape[0], len(times)
        q = np.tile(q0, (count + 1, 1))
        v = np.zeros((count + 1, nv))
        a = np.zeros((count + 1, nv))
        v[0], a[0] = v0, a0
        q[1:, indices] = positions
        if velocities is not None:
            v[1:, indices] = velocities
        if accelerations is not None:
            a[1:, indices] = accelerations
        knots = start_time + np.concatenate([[0.0], np.asarray(times, dtype=np.float64)])
        coefficients = np.zeros((count, nv, 6))
        order = 5 if accelerations is not None else 3 if velocities is not None else 1
        for k in range(count):
            T = knots[k + 1] - knots[k]
            coefficients[k] = segment(q[k], v[k], a[k], q[k + 1], v[k + 1], a[k + 1], T, order)
        # joints the trajectory does not name hold their position: constant polynomials
        held = np.setdiff1d(np.arange(nv), indices)
        coefficients[:, held, 1:] = 0.0
        return cls(knots, coefficients)

    def then(self, other):
        """This trajectory until `other` starts, then `other`."""
        start = other.knots[0]
        keep = int(np.searchsorted(self.knots, start, side="left"))   # segments that begin before `start`
        keep = min(keep, self.coefficients.shape[0])
        return Trajectory(np.concatenate([self.knots[:keep], other.knots]),
                          np.concatenate([self.coefficients[:keep], other.coefficients]))

    def sample(self, t, q, v, a):
        """The reference at time t [s] into q, v, a (each (nv,))."""
        sample(self.knots, self.coefficients, t, q, v, a)


def segment(q0, v0, a0, q1, v1, a1, T, order):
    """Coefficients (nv, 6) of the polynomial from (q0, v0, a0) at 0 to (q1, v1, a1) at T: quintic
    (order 5), cubic (3: positions and velocities), linear (1: positions)."""
    c = np.zeros((q0.shape[0], 6))
    dq = q1 - q0
    if order == 1:
        c[:, 0], c[:, 1] = q0, dq / T
    elif order == 3:
        c[:, 0], c[:, 1] = q0, v0
        c[:, 2] = (3.0 * dq - (2.0 * v0 + v1) * T) / T ** 2
        c[:, 3] = (-2.0 * dq + (v0 + v1) * T) / T ** 3
    else:
        c[:, 0], c[:, 1], c[:, 2] = q0, v0, 0.5 * a0
        c[:, 3] = (20.0 * dq - (8.0 * v1 + 12.0 * v0) * T - (3.0 * a0 - a1) * T ** 2) / (2.0 * T ** 3)
        c[:, 4] = (-30.0 * dq + (14.0 * v1 + 16.0 * v0) * T + (3.0 * a0 - 2.0 * a1) * T ** 2) / (2.0 * T ** 4)
        c[:, 5] = (12.0 * dq - 6.0 * (v1 + v0) * T + (a1 - a0) * T ** 2) / (2.0 * T ** 5)
    return c


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


def from_message(msg, controlled_names, stamp_seconds):
    """(start time [s] on the stamp clock, indices into controlled_names, times, positions,
    velocities or None, accelerations or None) of a trajectory_msgs/JointTrajectory; a
    ValueError says why it is refused. stamp_seconds(header.stamp) converts its start (0: now)."""
    names = list(msg.joint_names)
    if not names:
        raise ValueError("no joint_names")
    unknown = [n for n in names if n not in controlled_names]
    if unknown:
        raise ValueError(f"unknown or not controlled joints {unknown} (controlled: {list(controlled_names)})")
    if len(set(names)) != len(names):
        raise ValueError("a joint named twice")
    points = list(msg.points)
    if not points:
        raise ValueError("no points")
    n = len(names)
    times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in points])
    if not (times[0] > 0.0 and np.all(np.diff(times) > 0.0)):
        raise ValueError(f"time_from_start must increase strictly from > 0, got {times.tolist()}")
    fields = {}
    for field in ("positions", "velocities", "accelerations"):
        lengths = {len(getattr(p, field)) for p in points}
        if field == "positions" and lengths != {n}:
            raise ValueError(f"every point needs {n} positions, got lengths {sorted(lengths)}")
        if lengths not in ({0}, {n}):
            raise ValueError(f"{field}: none or {n} in every point, got lengths {sorted(lengths)}")
        values = np.array([list(getattr(p, field)) for p in points], dtype=np.float64) if lengths == {n} else None
        if values is not None and not np.all(np.isfinite(values)):
            raise ValueError(f"non-finite {field}")
        fields[field] = values
    if fields["accelerations"] is not None and fields["velocities"] is None:
        raise ValueError("accelerations without velocities")
    indices = np.array([list(controlled_names).index(name) for name in names])
    start = stamp_seconds(msg.header.stamp)
    if not math.isfinite(start):
        raise ValueError("non-finite header stamp")
    return start, indices, times, fields["positions"], fields["velocities"], fields["accelerations"]
