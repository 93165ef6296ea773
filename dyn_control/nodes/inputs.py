"""Checked inputs of the controller: joint states mapped by name, reference points, and stamps.

A sensor_msgs/JointState is accepted only when
- it names every joint of the model (names the model does not have, e.g. a gripper's, are ignored;
  a message naming none of the model's joints belongs to another publisher and is ignored without
  counting),
- position and velocity have one entry per name (effort: one per name, or none),
- the model joints' positions and velocities are finite,
- its stamp is newer than the last accepted one (a zero stamp means "now").
Anything else is rejected, counted, and leaves the last accepted sample in place. Effort is
optional: missing or non-finite, the sample simply has no measured effort.
"""
import numpy as np

ACCEPTED, REJECTED, IGNORED = "accepted", "rejected", "ignored"


def stamp_ns(stamp):
    """builtin_interfaces/Time as integer nanoseconds."""
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def set_stamp(stamp, ns):
    stamp.sec, stamp.nanosec = divmod(int(ns), 1_000_000_000)


class JointStateReader:
    """The latest accepted joint state in the model's coordinate order (q, v, effort, stamp)."""

    def __init__(self, joint_names):
        self.joint_names = tuple(joint_names)
        n = len(self.joint_names)
        self.q = np.zeros(n)
        self.v = np.zeros(n)
        self.effort = np.zeros(n)
        self.has_effort = False
        self.stamp = None             # [ns] of the accepted sample, None before the first
        self.rejected = 0
        self.last_rejection = ""
        self._names = None            # the name list the cached index belongs to
        self._index = None            # positions of the model joints in that list
        self._mapping_error = None    # or why that name list cannot be used
        self._ok = np.ones(n, dtype=bool)

    def reject(self, reason):
        self.rejected += 1
        self.last_rejection = reason
        return REJECTED

    def read(self, msg, now_ns):
        """Check msg and, if it passes, make it the latest sample. Returns ACCEPTED, REJECTED or
        IGNORED."""
        if msg.name != self._names:
            self._map(msg.name)
        if self._index is None:
            return IGNORED if self._mapping_error is None else self.reject(self._mapping_error)
        n = len(msg.name)
        if len(msg.position) != n or len(msg.velocity) != n or len(msg.effort) not in (0, n):
            return self.reject(f"wrong lengths: {n} names, {len(msg.position)} positions, "
                               f"{len(msg.velocity)} velocities, {len(msg.effort)} efforts")
        q = np.asarray(msg.position, dtype=np.float64)[self._index]
        v = np.asarray(msg.velocity, dtype=np.float64)[self._index]
        if not (np.isfinite(q).all() and np.isfinite(v).all()):
            return self.reject("non-finite position or velocity")
        stamp = stamp_ns(msg.header.stamp) or now_ns
        if self.stamp is not None and stamp <= self.stamp:
            return self.reject("stamp not newer than the last joint state's")
        self.q[:] = q
        self.v[:] = v
        self.has_effort = len(msg.effort) == n
        if self.has_effort:
            effort = np.asarray(msg.effort, dtype=np.float64)[self._index]
            self.has_effort = bool(np.isfinite(effort).all())
            if self.has_effort:
                self.effort[:] = effort
        self.stamp = stamp
        return ACCEPTED

    def _map(self, names):
        self._names = list(names)
        self._index = None
        self._mapping_error = None
        position = {}
        for k, name in enumerate(names):
            if name in position:
                self._mapping_error = f"joint {name!r} named twice"
                return
            position[name] = k
        missing = [j for j in self.joint_names if j not in position]
        if len(missing) == len(self.joint_names):
            return      # none of ours: another publisher's joints
        if missing:
            unknown = [name for name in names if name not in self.joint_names]
            self._mapping_error = (f"missing joints {missing}"
                                   + (f" (unknown names {unknown})" if unknown else ""))
            return
        self._index = np.array([position[j] for j in self.joint_names])

    def forget(self):
        """No sample yet (on activate)."""
        self.stamp = None
        self.has_effort = False


def reference_from_point(msg, n):
    """(positions, velocities, accelerations) of a trajectory_msgs/JointTrajectoryPoint for n
    controlled joints (missing velocities / accelerations: zero), or a ValueError."""
    positions = np.asarray(msg.positions, dtype=np.float64)
    if positions.shape != (n,):
        raise ValueError(f"reference: {len(msg.positions)} positions for {n} controlled joints")
    parts = [positions]
    for field in ("velocities", "accelerations"):
        values = np.asarray(getattr(msg, field), dtype=np.float64)
        if values.size == 0:
            values = np.zeros(n)
        elif values.shape != (n,):
            raise ValueError(f"reference: {values.size} {field} for {n} controlled joints")
        parts.append(values)
    if not all(np.isfinite(p).all() for p in parts):
        raise ValueError("reference: non-finite values")
    return tuple(parts)
