"""QoS profiles of the nodes' topics, and subscriptions read by polling from a loop thread.

Polling: rclpy's executors cost about 0.3 ms of CPU per message in Python, a third of a core for
a 1 kHz /joint_states stream. The real-time loops therefore take their high-rate inputs
themselves, once per tick, from subscriptions in a callback group that no executor ever waits on
(the role a realtime buffer plays in ros2_control), serialized for the compiled parsers of wire.py:
through rcl directly into preallocated buffers where possible (rcl_io), else through rclpy's raw
take (~13 us a message).
"""
import numpy as np
from rclpy.callback_groups import CallbackGroup
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from . import rcl_io

# /joint_states in: sensor-data QoS (best effort, so it matches reliable and best-effort publishers).
# The loop uses the newest valid state only (a tick never grows with a backlog); the 64 kept let it
# step back over newer messages of other publishers on the same topic (a gripper's, or a flood of
# invalid ones: 64 per ms, 64 kHz, before a valid state at 1 kHz is pushed out)
SENSOR_DATA = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=64, reliability=ReliabilityPolicy.BEST_EFFORT,
                         durability=DurabilityPolicy.VOLATILE)
# bytes of each buffer a polled subscription takes into through rcl (a JointState of ~1000 joints)
RING_CAPACITY = 1 << 16
# commands out: reliable, keep last 1 (ros2_control's forward controllers subscribe reliable)
COMMAND = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE)
# commands in (simulator): best effort; the newest valid command of the queue is applied. Deep enough
# that a flood of invalid commands from another publisher cannot push out the valid ones: up to
# COMMAND_IN_DEPTH - 1 of them between two valid commands (63 kHz against a 1 kHz controller)
COMMAND_IN_DEPTH = 64
COMMAND_IN = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=COMMAND_IN_DEPTH,
                        reliability=ReliabilityPolicy.BEST_EFFORT)
# bytes of each buffer the simulator takes a command into (a Float64MultiArray of ~1000 joints)
COMMAND_RING_CAPACITY = 1 << 13
# monitoring outputs (~/desired, wrenches, gradients, /joint_states of the simulator)
STATE = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE)
# published once, kept for late subscribers (~/parameter_labels)
LATCHED = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)


def recording(depth):
    """Best effort, keep last `depth`: for a poller that drains a stream every few ms."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.BEST_EFFORT)


class _NeverExecuted(CallbackGroup):
    """A callback group no executor runs: its subscriptions are read by PolledSubscription."""

    def can_execute(self, entity):
        return False

    def beginning_execution(self, entity):
        return False

    def ending_execution(self, entity):
        pass


class PolledSubscription:
    """A subscription read with take() (next queued message or None) from the caller's thread."""

    def __init__(self, node, msg_type, topic, qos, ring_capacity=0):
        self.subscription = node.create_subscription(msg_type, topic, _unused_callback, qos,
                                                     callback_group=_NeverExecuted())
        self._handle = self.subscription.handle
        self._msg_type = msg_type
        # take_all_raw through rcl directly into a ring of buffers (one per message the QoS keeps)
        self._ring = (rcl_io.RingTake(self.subscription, qos.depth, ring_capacity)
                      if ring_capacity and rcl_io.available(self.subscription) else None)
        self._publications = []             # without a ring: those of the last take_all_raw
        self._newest = (None, None)         # and the newest message's of the two last takes with any

    def take(self):
        taken = self.take_with_info()
        return None if taken is None else taken[0]

    def take_with_info(self):
        """(message, message info dict with "source_timestamp" [ns]) or None."""
        with self._handle:
            return self._handle.take_message(self._msg_type, False)

    def take_raw(self):
        """(serialized message as bytes, message info dict with "source_timestamp" [ns]) or None."""
        with self._handle:
            return self._handle.take_message(self._msg_type, True)

    def take_all_raw(self):
        """Every queued message, serialized, oldest first (at most the QoS depth). With a ring
        (ring_capacity bytes a message) they are uint8 arrays valid until the next call, taken in one
        compiled call; a message larger than the ring's buffers is an empty array."""
        if self._ring is not None:
            return self._ring.take_all()
        messages, self._publications = [], []
        while (taken := self.take_raw()) is not None:
            messages.append(taken[0])
            self._publications.append(_publication(taken[1]))
        if messages:
            self._newest = (self._newest[1], self._publications[-1])
        return messages

    def publications(self):
        """Who sent each message of the last take_all_raw, oldest first: (publisher GID as two
        integers, publication sequence number, None where the RMW has none). Within one publisher
        the numbers count its messages: a jump of k means k - 1 sent in between that this
        subscription never took."""
        return self._ring.publications() if self._ring is not None else self._publications

    def publication_before(self):
        """publications()'s entry of the newest message of the take_all_raw before the last one that
        took any (None before there was one)."""
        return self._ring.publication_before() if self._ring is not None else self._newest[0]

    def destroy(self, node):
        node.destroy_subscription(self.subscription)


def _publication(info):
    """rcl_io.publication of rclpy's message info dict."""
    gid = np.frombuffer(info["publisher_gid"]["data"], dtype="<u8", count=2)
    sequence = info["publication_sequence_number"]
    return (int(gid[0]), int(gid[1])), None if sequence in (None, rcl_io.SEQUENCE_UNSUPPORTED) else sequence


def _unused_callback(msg):
    raise AssertionError("a polled subscription is never executed")
