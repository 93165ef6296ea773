"""The controller's ~/joint_trajectory subscription, read from the message's bytes.

rclpy would convert each trajectory_msgs/JointTrajectory into Python objects before any check
(~8.5 us a point here, the GIL held in long stretches: 10,000 points stopped the loop thread for up
to 25 ms, 100,000 for 60 ms and more). Instead the subscription is taken serialized, in a compiled
call without the GIL, into buffers of a fixed size (rcl_io, as the joint states are): a message larger
than `trajectory.max_points` points of the controlled joints can take is dropped there, unread. A
message that fits is parsed from its bytes (wire.parse_joint_trajectory: counts first, values only
then) into control.trajectory.Points, refused (a ValueError) beyond max_points points or with more
names than controlled joints.

The subscription is an rclpy Waitable in the node's default callback group: the executor wakes it
when a message arrives, as it would a subscription, and `callback(raw)` runs for each message taken.
"""
import numpy as np
from rclpy.waitable import NumberOfEntities, Waitable
from trajectory_msgs.msg import JointTrajectory

from ..control.trajectory import InvalidJoints, assemble
from . import qos, wire
from .params import Param

HEADER_BYTES = 4096     # the stamp and a frame_id, in a message's size bound

PARAMETERS = (
    Param("trajectory.max_points", 10000, "integer", "configure",
          "most points of a trajectory (~/joint_trajectory, the follow_joint_trajectory action); more are "
          "refused and counted", 1, 1000000),
)


def message_bound(max_points, names):
    """Bytes of a serialized JointTrajectory of at most max_points points for the joints `names`
    (all four fields of every point full) and a frame_id of up to ~4 kB."""
    n = len(names)
    return HEADER_BYTES + sum(8 + len(name.encode()) for name in names) + max_points * (8 + 4 * (8 + 8 * n))


class TrajectoryDecoder:
    """Points of serialized JointTrajectory messages for the controlled joints `names`, at most
    max_points points (the parser's scratch arrays are allocated once)."""

    def __init__(self, max_points, names):
        self.max_points, self.names = max_points, list(names)
        self.capacity = message_bound(max_points, self.names)
        self._meta = np.zeros(5, dtype=np.int64)
        self._times = np.zeros(max_points)
        self._counts = np.zeros((max_points, 4), dtype=np.int64)
        self._offsets = np.zeros((max_points, 4), dtype=np.int64)

    def decode(self, raw):
        """The Points of one serialized message (bytes or a uint8 array); a ValueError
        (InvalidJoints for the names) says why it is refused."""
        if len(raw) == 0 or len(raw) > self.capacity:
            raise ValueError(f"larger than {self.capacity} bytes, the size of trajectory.max_points = "
                             f"{self.max_points} points of the {len(self.names)} controlled joints")
        buf = wire.message_view(raw)
        meta = self._meta
        status = wire.parse_joint_trajectory(buf, len(self.names), self.max_points, meta, self._times,
                                             self._counts, self._offsets)
        if status == wire.JT_MALFORMED:
            raise ValueError("malformed (truncated, or not little-endian CDR)")
        if status == wire.JT_TOO_MANY_NAMES:
            raise InvalidJoints(f"{meta[wire.JT_NAMES]} joint names, more than the {len(self.names)} "
                                "controlled joints")
        if status == wire.JT_TOO_MANY_POINTS:
            raise ValueError(f"{meta[wire.JT_POINTS]} points, more than trajectory.max_points = {self.max_points}")
        count = meta[wire.JT_POINTS]
        names = wire.decode_names(buf, meta[wire.JT_NAMES_AT], meta[wire.JT_NAMES])

        def values(f):
            out = np.empty((count, len(names)))
            wire.gather_doubles(buf, np.ascontiguousarray(self._offsets[:count, f]), out)
            return out
        return assemble(int(meta[wire.JT_SEC]) * 1_000_000_000 + int(meta[wire.JT_NANOSEC]), names,
                        self._times[:count].copy(), self._counts[:count, :3], values)


class TrajectorySubscription(Waitable):
    """~/joint_trajectory (`topic`) taken serialized into qos.STATE's depth of buffers of
    `decoder.capacity` bytes each; callback(raw) gets every message taken (a uint8 array, valid
    during the call; empty when the message did not fit), for decoder.decode(raw)."""

    def __init__(self, node, topic, decoder, callback):
        super().__init__(node.default_callback_group)
        self._callback = callback
        self._polled = qos.PolledSubscription(node, JointTrajectory, topic, qos.STATE, ring_capacity=decoder.capacity)
        self._index = None
        node.add_waitable(self)

    def destroy(self, node):
        node.remove_waitable(self)
        self._polled.destroy(node)

    # the Waitable interface: the executor waits on the subscription, then take_data and execute
    def __enter__(self):
        self._polled.subscription.handle.__enter__()

    def __exit__(self, *exception):
        self._polled.subscription.handle.__exit__(*exception)

    def add_to_wait_set(self, wait_set):
        self._index = wait_set.add_subscription(self._polled.subscription.handle)

    def is_ready(self, wait_set):
        return wait_set.is_ready("subscription", self._index)

    def get_num_entities(self):
        return NumberOfEntities(num_subs=1)

    def take_data(self):
        return self._polled.take_all_raw()

    async def execute(self, messages):
        for raw in messages:
            self._callback(raw)


def warm_up():
    """Compile (or load from Numba's cache) the parser's kernels."""
    from rclpy.serialization import serialize_message
    from trajectory_msgs.msg import JointTrajectoryPoint
    msg = JointTrajectory(joint_names=["a"], points=[JointTrajectoryPoint(positions=[0.0])])
    TrajectoryDecoder(1, ["a"]).decode(serialize_message(msg))
