"""ROS 2 bags through `rosbags` (no ROS install needed): MCAP bags written from serialized (CDR)
messages, the bytes rclpy's raw subscriptions take and a bag stores, and the joint states read
back from any rosbag2 bag (MCAP or sqlite3, e.g. from `ros2 bag record`).
"""
import os
from pathlib import Path

import numpy as np

from .base_parameters import IdentificationError

JOINT_STATE = "sensor_msgs/msg/JointState"
FLOAT64_ARRAY = "std_msgs/msg/Float64MultiArray"
BAG_VERSION = 9   # rosbag2 metadata version (Jazzy and later)


def typestore():
    """The message definitions of ROS 2 Kilted (rosbags' built-in store)."""
    from rosbags.typesys import Stores, get_typestore
    return get_typestore(Stores.ROS2_KILTED)


class BagWriter:
    """An MCAP bag being written: write(topic, msgtype, timestamp_ns, cdr_bytes), a connection per
    topic made at its first message; a context manager (the bag is complete once closed)."""

    def __init__(self, path):
        from rosbags.rosbag2 import StoragePlugin, Writer
        if os.path.exists(path):
            raise ValueError(f"bag output {path!r} exists already (a bag is a new folder)")
        self.path = path
        self._types = typestore()
        self._writer = Writer(path, version=BAG_VERSION, storage_plugin=StoragePlugin.MCAP)
        self._writer.open()
        self._connections = {}
        self.count = 0

    def write(self, topic, msgtype, timestamp_ns, data):
        connection = self._connections.get(topic)
        if connection is None:
            if msgtype not in self._types.types:
                raise ValueError(f"topic {topic}: message type {msgtype} is unknown to rosbags' ROS 2 "
                                 "type store, so the bag could not describe it")
            connection = self._writer.add_connection(topic, msgtype, typestore=self._types)
            self._connections[topic] = connection
        self._writer.write(connection, int(timestamp_ns), bytes(data))
        self.count += 1

    def serialize(self, message, msgtype):
        return self._types.serialize_cdr(message, msgtype)

    def close(self):
        self._writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def write_bag(path, messages):
    """An MCAP bag at `path` (a new folder) of messages: (topic, msgtype, timestamp [ns], CDR bytes)
    in time order. Returns how many were written."""
    with BagWriter(path) as bag:
        for topic, msgtype, stamp, data in messages:
            bag.write(topic, msgtype, stamp, data)
        return bag.count


def write_joint_states(path, t, names, q, v=None, effort=None, commands=None, topic="/joint_states",
                       command_topic="/effort_controller/commands"):
    """An MCAP bag of sensor_msgs/JointState on `topic` at times t [s] (stamps and bag times), with
    positions q, velocities v and efforts (each (N, n), None: an empty field), and optionally
    commands (N, n) as std_msgs/Float64MultiArray on `command_topic`. Returns the message count."""
    with BagWriter(path) as bag:
        types = bag._types.types
        Header, Time = types["std_msgs/msg/Header"], types["builtin_interfaces/msg/Time"]
        JointState = types[JOINT_STATE]
        empty = np.zeros(0)
        for k, stamp in enumerate(np.asarray(t, dtype=np.float64)):
            ns = int(round(stamp * 1e9))
            header = Header(stamp=Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000), frame_id="")
            msg = JointState(header=header, name=list(names), position=np.ascontiguousarray(q[k], dtype=np.float64),
                             velocity=empty if v is None else np.ascontiguousarray(v[k], dtype=np.float64),
                             effort=empty if effort is None else np.ascontiguousarray(effort[k], dtype=np.float64))
            bag.write(topic, JOINT_STATE, ns, bag.serialize(msg, JOINT_STATE))
            if commands is not None:
                Array, Layout = types[FLOAT64_ARRAY], types["std_msgs/msg/MultiArrayLayout"]
                command = Array(layout=Layout(dim=[], data_offset=0),
                                data=np.ascontiguousarray(commands[k], dtype=np.float64))
                bag.write(command_topic, FLOAT64_ARRAY, ns, bag.serialize(command, FLOAT64_ARRAY))
        return bag.count


class JointStates:
    """Joint states read from a bag: t (N,) [s], q, v (None when not recorded), effort (N, n), in
    the order of `joints`; start: the stamp [ns] of t = 0 (read_joint_states: the first sample's)."""

    def __init__(self, joints, t, q, v, effort, start=0):
        self.joints, self.t, self.q, self.v, self.effort = list(joints), t, q, v, effort
        self.start = int(start)


def read_joint_states(path, joints, topic="/joint_states"):
    """The states of `joints` (names, e.g. a model's joint_names) from the JointState messages on
    `topic` of the bag at `path`, in any joint order; other joints are ignored, and so are messages
    without all of `joints` (another publisher's, e.g. a gripper's). Time: the header stamp (the
    bag's receive time where the stamp is zero). IdentificationError for a bag that cannot be read,
    holds no such messages, misses joints, or has no efforts."""
    from rosbags.rosbag2 import Reader, ReaderError
    types = typestore()
    try:
        reader = Reader(Path(path))
        reader.open()
    except (ReaderError, OSError, ValueError) as error:
        raise IdentificationError(f"cannot read bag {path!r}: {error}") from None
    try:
        if reader.message_count == 0:
            raise IdentificationError(f"bag {path!r} is empty (no messages)")
        connections = [c for c in reader.connections if c.topic == topic]
        if not connections:
            topics = sorted({c.topic for c in reader.connections})
            raise IdentificationError(f"bag {path!r} has no topic {topic} (its topics: "
                                      f"{', '.join(topics) or 'none'})")
        wrong = [c.msgtype for c in connections if c.msgtype != JOINT_STATE]
        if wrong:
            raise IdentificationError(f"bag {path!r}: {topic} holds {wrong[0]}, not {JOINT_STATE}")
        rows, seen, skipped = [], set(), 0
        for connection, bag_time, raw in reader.messages(connections=connections):
            msg = types.deserialize_cdr(raw, connection.msgtype)
            names = list(msg.name)
            seen.update(names)
            index = {n: k for k, n in enumerate(names)}
            if not all(j in index for j in joints):
                skipped += 1
                continue
            columns = [index[j] for j in joints]
            stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
            rows.append((stamp if stamp else bag_time, _field(msg.position, columns, len(names)),
                         _field(msg.velocity, columns, len(names)), _field(msg.effort, columns, len(names))))
    finally:
        reader.close()
    if not rows:
        if skipped == 0:
            raise IdentificationError(f"bag {path!r}: no messages on {topic} (an empty recording)")
        missing = [j for j in joints if j not in seen]
        raise IdentificationError(f"bag {path!r}: the joint states on {topic} lack joints "
                                  f"{', '.join(missing)} of the robot (they name {', '.join(sorted(seen))})")
    if any(row[1] is None for row in rows):
        raise IdentificationError(f"bag {path!r}: joint states on {topic} without positions")
    if any(row[3] is None for row in rows):
        raise IdentificationError(f"bag {path!r}: the joint states on {topic} have no effort field "
                                  "(identification needs the joint torques)")
    rows.sort(key=lambda row: row[0])
    t = np.array([row[0] for row in rows], dtype=np.int64)
    keep = np.concatenate([[True], np.diff(t) > 0])   # one sample per stamp
    rows = [row for row, k in zip(rows, keep) if k]
    has_velocity = all(row[2] is not None for row in rows)
    return JointStates(joints, (t[keep] - t[0]) * 1e-9, np.array([row[1] for row in rows]),
                       np.array([row[2] for row in rows]) if has_velocity else None,
                       np.array([row[3] for row in rows]), start=t[0])


def _field(values, columns, count):
    """values[columns], or None when the field is empty or not one per name."""
    values = np.asarray(values, dtype=np.float64)
    return values[columns] if values.size == count and count else None
