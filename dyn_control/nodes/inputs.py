"""Checked inputs of the controller: joint states mapped by name, reference points, and stamps.

A sensor_msgs/JointState is accepted only when
- it names every joint of the model (names the model does not have, e.g. a gripper's, are ignored;
  a message naming none of the model's joints belongs to another publisher and is ignored without
  counting),
- position and velocity have one entry per name (effort: one per name, or none),
- the model joints' positions and velocities are finite,
- its stamp is newer than the last accepted one (a zero stamp means "now"), unless the caller
  accepts a new time base (`new_time_base`: stamps that jumped back, as after a Gazebo reset),
  and not more than `max_lead_ns` ahead of this machine's clock (a stamp an hour ahead would
  otherwise make every real one after it "not newer": refused and counted in `future_stamps`).
Anything else is rejected, counted, and leaves the last accepted sample in place. Effort is
optional: missing or non-finite, the sample simply has no measured effort.
"""
import numpy as np

from ..dynamics import frame_pose
from ..task_space import quaternion_to_rotation
from . import wire
from .qos import RING_CAPACITY

ACCEPTED, REJECTED, IGNORED = "accepted", "rejected", "ignored"
LAYOUTS = 8     # name lists a reader remembers (publishers sharing the topic)
_NO_NAMES = np.zeros(0, dtype=np.uint8)     # a name list no message has (forces the full parse)
_NO_INDEX = np.zeros(0, dtype=np.int64)


def stamp_ns(stamp):
    """builtin_interfaces/Time as integer nanoseconds."""
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def set_stamp(stamp, ns):
    stamp.sec, stamp.nanosec = divmod(int(ns), 1_000_000_000)


class JointStateReader:
    """The latest accepted joint state in the model's coordinate order, written into the arrays q,
    v and effort given at construction (the loop's own buffers); `stamp` [ns] and `has_effort`.

    read(raw, now_ns) takes a serialized JointState (bytes or uint8 array, as a polled subscription
    takes it raw)
    and parses it with wire.parse_joint_state, which copies only the model joints' values: the
    Python work per message does not grow with its size. A name list is decoded in Python once:
    the last LAYOUTS name lists seen (ours, a gripper's, another robot's on the same topic) are
    remembered with their index, so messages of other publishers cost one compiled comparison
    each, however they interleave with ours."""

    def __init__(self, joint_names, q, v, effort):
        self.joint_names = tuple(joint_names)
        self.q, self.v, self.effort = q, v, effort
        self.has_effort = False
        self.stamp = None             # [ns] of the accepted sample, None before the first
        self.new_time_base = False    # accept an older stamp (after the watchdog: a simulator reset)
        self.max_lead_ns = 1_000_000_000
        self.rejected = 0
        self.future_stamps = 0
        self.names_decoded = 0        # name lists decoded in Python (once per new layout)
        self.last_rejection = ""
        # (raw name list, positions of the model joints in it, None or why it cannot be used), the
        # most recently seen first
        self._layouts = []
        self._meta = np.zeros(6, dtype=np.int64)
        n = len(self.joint_names)
        self._q, self._v, self._effort = np.zeros(n), np.zeros(n), np.zeros(n)

    def reject(self, reason):
        self.rejected += 1
        self.last_rejection = reason
        return REJECTED

    def read(self, raw, now_ns):
        """Check a serialized JointState and, if it passes, make it the latest sample. Returns
        ACCEPTED, REJECTED or IGNORED. An empty `raw` is a message that did not fit the receive
        buffer (qos.RING_CAPACITY bytes)."""
        if len(raw) == 0:
            return self.reject(f"message larger than the receive buffer ({RING_CAPACITY} bytes)")
        buf = wire.message_view(raw)
        meta = self._meta
        for k, layout in enumerate(self._layouts):
            status = wire.parse_joint_state(buf, layout[0], layout[1], self._q, self._v, self._effort, meta)
            if status != wire.JS_NAMES_CHANGED:
                if k:
                    self._layouts.insert(0, self._layouts.pop(k))
                break
        else:      # a name list not seen lately: decoded once, then remembered
            status = wire.parse_joint_state(buf, _NO_NAMES, _NO_INDEX, self._q, self._v, self._effort, meta)
            if status == wire.JS_NAMES_CHANGED:
                start, end = meta[wire.META_NAMES_START], meta[wire.META_NAMES_END]
                self.names_decoded += 1
                index, error = self._map(wire.decode_names(raw, start + 4, meta[wire.META_COUNT]))
                layout = (buf[start:end].copy(), index, error)
                self._layouts.insert(0, layout)
                del self._layouts[LAYOUTS:]
                status = wire.parse_joint_state(buf, layout[0], layout[1], self._q, self._v, self._effort, meta)
        if status == wire.JS_FOREIGN:
            return IGNORED if layout[2] is None else self.reject(layout[2])
        if status == wire.JS_MALFORMED:
            return self.reject("malformed message (truncated, or not little-endian CDR)")
        if status == wire.JS_WRONG_LENGTHS:
            return self.reject(f"wrong lengths: {meta[wire.META_COUNT]} names but positions, velocities "
                               "or efforts of another length")
        if status == wire.JS_NON_FINITE:
            return self.reject("non-finite position or velocity")
        stamp = meta[wire.META_SEC] * 1_000_000_000 + meta[wire.META_NANOSEC] or now_ns
        if stamp > now_ns + self.max_lead_ns:
            self.future_stamps += 1
            return self.reject(f"stamp {(stamp - now_ns) * 1e-9:.3f} s ahead of this machine's clock")
        if self.stamp is not None and stamp <= self.stamp and not self.new_time_base:
            return self.reject("stamp not newer than the last joint state's")
        self.q[:] = self._q
        self.v[:] = self._v
        self.has_effort = bool(meta[wire.META_HAS_EFFORT])
        if self.has_effort:
            self.effort[:] = self._effort
        self.stamp = stamp
        return ACCEPTED

    def _map(self, names):
        """(positions of the model joints in `names`, None) or (empty, why they cannot be used); empty
        with None: none of ours, another publisher's joints."""
        position = {}
        for k, name in enumerate(names):
            if name in position:
                return _NO_INDEX, f"joint {name!r} named twice"
            position[name] = k
        missing = [j for j in self.joint_names if j not in position]
        if len(missing) == len(self.joint_names):
            return _NO_INDEX, None
        if missing:
            unknown = [name for name in names if name not in self.joint_names]
            return _NO_INDEX, f"missing joints {missing}" + (f" (unknown names {unknown})" if unknown else "")
        return np.array([position[j] for j in self.joint_names], dtype=np.int64), None

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


def cartesian_target(msg, model, data, q, control_frame, reach):
    """(R, p) of a PoseStamped target in the root frame of `model`: its frame (the header's) placed at
    the joint positions `q` (None before the first joint state) with `data`; a ValueError when it is
    not finite, not a rotation, in an unknown frame or outside `control_frame`'s `reach` [m]."""
    o, x = msg.pose.orientation, msg.pose.position
    quaternion, p = np.array([o.x, o.y, o.z, o.w]), np.array([x.x, x.y, x.z])
    if not (np.isfinite(quaternion).all() and np.isfinite(p).all()):
        raise ValueError("non-finite pose")
    if not 0.5 < np.linalg.norm(quaternion) < 2.0:
        raise ValueError(f"orientation is not a unit quaternion (norm {np.linalg.norm(quaternion):.3g})")
    R = quaternion_to_rotation(quaternion)
    frame = msg.header.frame_id
    if frame and frame != model.root_name:
        if q is None:
            raise ValueError(f"frame {frame!r}: no joint state yet to place it")
        pose = frame_pose(model, data, q.copy(), frame)   # ValueError naming an unknown frame
        R, p = pose[:3, :3] @ R, pose[:3, :3] @ p + pose[:3, 3]
    distance = np.linalg.norm(p)
    if distance > reach:
        raise ValueError(f"outside the workspace: {distance:.3f} m from the root, the reach of "
                         f"{control_frame!r} is {reach:.3f} m")
    return R, p
