"""Captures a closed loop's topics by polling (no executor, a few us per message): /joint_states,
the controller's ~/desired and ~/wrench_estimate, the simulator's ~/applied_wrench, the DDS source
timestamps of these and of the commands, and each node's /diagnostics (the latest, and all with their
stamps). Used by the demo's status line, plot and summary, and by the tests. Messages are matched by
their stamps: the controller stamps its outputs with the stamp of the joint state they were computed
from.
"""
import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from . import qos
from .inputs import stamp_ns


def _joint_fields(msg):
    return np.array(msg.position), np.array(msg.velocity), np.array(msg.effort)


def _wrench(msg):
    w = msg.wrench
    return np.array([w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z])


class Recorder:
    """Every message of the four topics since creation (or clear()), drained by poll()."""

    def __init__(self, node, controller="/dyn_controller", simulator="/dyn_simulator", depth=1000,
                 command_topic="/effort_controller/commands"):
        sources = {
            "joint_states": (JointState, "/joint_states", _joint_fields),
            "desired": (JointState, controller + "/desired", _joint_fields),
            "wrench_estimate": (WrenchStamped, controller + "/wrench_estimate", _wrench),
            "applied_wrench": (WrenchStamped, simulator + "/applied_wrench", _wrench),
        }
        self._subscriptions = {key: (qos.PolledSubscription(node, msg_type, topic, qos.recording(depth)), convert)
                               for key, (msg_type, topic, convert) in sources.items()}
        self._commands = qos.PolledSubscription(node, Float64MultiArray, command_topic, qos.recording(depth))
        self._diagnostics = qos.PolledSubscription(node, DiagnosticArray, "/diagnostics", qos.recording(100))
        self.names = {}        # joint names of the JointState topics
        self.diagnostics = {}  # status name -> {key: value} of its latest /diagnostics message
        self.diagnostics_history = {}  # status name -> [(stamp [ns], {key: value})] of all of them
        self.clear()

    def clear(self):
        self._rows = {key: [] for key in self._subscriptions}
        self._command_times = []

    def poll(self):
        """Take every queued message; returns how many."""
        count = 0
        for key, (subscription, convert) in self._subscriptions.items():
            rows = self._rows[key]
            while (taken := subscription.take_with_info()) is not None:
                msg, info = taken
                if isinstance(msg, JointState):
                    self.names.setdefault(key, list(msg.name))
                rows.append((stamp_ns(msg.header.stamp), convert(msg), info["source_timestamp"]))
                count += 1
        while (taken := self._commands.take_raw()) is not None:
            self._command_times.append(taken[1]["source_timestamp"])
            count += 1
        while (msg := self._diagnostics.take()) is not None:
            for status in msg.status:
                values = {kv.key: kv.value for kv in status.values}
                self.diagnostics_history.setdefault(status.name, []).append((stamp_ns(msg.header.stamp), values))
                if "ticks" in values or "ticks" not in self.diagnostics.get(status.name, {}):
                    self.diagnostics[status.name] = values   # the loop's figures outlive its deactivation
        return count

    def command_times(self):
        """DDS source timestamps [ns] of the commands received, in order of arrival."""
        return np.array(self._command_times, dtype=np.int64)

    def stamps(self, key):
        return np.array([row[0] for row in self._rows[key]], dtype=np.int64)

    def source_times(self, key):
        """DDS source timestamps [ns] of one topic's messages (when the publisher sent them)."""
        return np.array([row[2] for row in self._rows[key]], dtype=np.int64)

    def values(self, key, field=None):
        """Stacked values of one topic: wrenches (N, 6) [n; f]; JointState fields by index
        (0 position, 1 velocity, 2 effort), (N, joints)."""
        rows = self._rows[key]
        if field is None:
            return np.array([row[1] for row in rows]).reshape(len(rows), 6)
        return np.array([row[1][field] for row in rows])

    def count(self, key):
        return len(self._rows[key])

    def tracking_error(self):
        """(stamps, q_d - q) for the ~/desired messages whose joint state was recorded; columns in
        the order of ~/desired's joints."""
        desired_t = self.stamps("desired")
        if desired_t.size == 0 or self.count("joint_states") == 0:
            return desired_t[:0], np.zeros((0, 0))
        state_t = self.stamps("joint_states")
        columns = [self.names["joint_states"].index(n) for n in self.names["desired"]]
        order = np.argsort(state_t)
        found = np.searchsorted(state_t[order], desired_t)
        found = np.minimum(found, state_t.size - 1)
        match = state_t[order][found] == desired_t
        q = self.values("joint_states", 0)[order][found][match][:, columns]
        return desired_t[match], self.values("desired", 0)[match] - q
