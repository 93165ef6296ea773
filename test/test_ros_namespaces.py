"""Two robots on one machine, one namespace each (issue 22.1), through `dyn-control bringup`.

One parameter file: shared parameters under `/**/dyn_controller` and `/**/dyn_simulator` (wildcard
keys, as the bundled configs are keyed), and per robot an entry `/robotN/dyn_controller` with its
own hold reference and `/robotN/dyn_simulator` with its own start pose. The bringup starts the four
node processes, each pair in its namespace, and drives them through their namespaced lifecycle
services. Judged from outside: the ROS graph (each robot's command topic has its own controller as
the only publisher and its own simulator as a subscriber; nothing on the root topics) and each
simulator's joint states (the ground truth of its robot), which settle at that robot's reference,
not the other's.
"""
import numpy as np
import pytest
import ros_harness  # noqa: F401  (this process's own ROS domain)
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

import dyn_control as dc
from dyn_control.nodes import qos
from dyn_control.nodes.bringup import bringup

pytestmark = pytest.mark.ros

URDF = dc.bundled_urdf("arm7")
Q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
REFERENCES = {"robot1": Q0 + 0.15, "robot2": Q0 - 0.15}
STARTS = {"robot1": Q0, "robot2": Q0 + 0.05}
RATE_HZ = 500.0
TOPICS = [(JointState, "joint_states"), (Float64MultiArray, "effort_controller/commands")]


def parameter_file(path):
    # four 500 Hz loops on a shared 2-core machine: no pinning, no SCHED_FIFO, a lenient watchdog
    text = f"""/**/dyn_controller:
  ros__parameters:
    urdf_path: {URDF}
    rate_hz: {RATE_HZ}
    reference: {{type: hold}}
    gains: {{kp: 400.0, kd: 40.0}}
    watchdog_timeout: 0.25
    gradient: {{period: 1000, twist: false}}
    realtime: {{cpu: -2, priority: 0}}
/**/dyn_simulator:
  ros__parameters:
    urdf_path: {URDF}
    rate_hz: {RATE_HZ}
    command_timeout: 0.25
"""
    for robot in REFERENCES:
        text += f"""/{robot}/dyn_controller:
  ros__parameters:
    reference: {{position: {REFERENCES[robot].tolist()}}}
/{robot}/dyn_simulator:
  ros__parameters:
    initial_positions: {STARTS[robot].tolist()}
"""
    path.write_text(text)
    return str(path)


class GraphMonitor:
    """Records each robot's topics and the root-namespace ones, and the ROS graph of each topic
    (who publishes, who subscribes) while the robots run."""

    def start(self, node):
        self.node = node
        self.subscriptions = {f"{prefix}{topic}": qos.PolledSubscription(node, msg_type, f"{prefix}{topic}",
                                                                        qos.recording(5000))
                              for prefix in ("/robot1/", "/robot2/", "/") for msg_type, topic in TOPICS}
        self.received = {topic: [] for topic in self.subscriptions}
        self.graph = {}

    def status(self, phase, elapsed):
        for topic, subscription in self.subscriptions.items():
            while (msg := subscription.take()) is not None:
                self.received[topic].append(msg)
        if phase == "run":
            for topic in self.subscriptions:
                self.graph[topic] = (
                    sorted(f"{i.node_namespace.rstrip('/')}/{i.node_name}"
                           for i in self.node.get_publishers_info_by_topic(topic)),
                    sorted(f"{i.node_namespace.rstrip('/')}/{i.node_name}"
                           for i in self.node.get_subscriptions_info_by_topic(topic)))

    def stop(self):
        self.status("stop", 0.0)


def test_two_robots_in_namespaces_each_track_their_own_reference(tmp_path):
    monitor = GraphMonitor()
    assert bringup(parameter_file(tmp_path / "robots.yaml"), 4.0, monitor) == 0
    for robot in REFERENCES:
        commands, states = f"/{robot}/effort_controller/commands", f"/{robot}/joint_states"
        publishers, subscribers = monitor.graph[commands]
        assert publishers == [f"/{robot}/dyn_controller"], monitor.graph[commands]
        assert f"/{robot}/dyn_simulator" in subscribers, monitor.graph[commands]
        publishers, subscribers = monitor.graph[states]
        assert publishers == [f"/{robot}/dyn_simulator"], monitor.graph[states]
        assert f"/{robot}/dyn_controller" in subscribers, monitor.graph[states]
        assert len(monitor.received[commands]) > 200, f"{robot}: {len(monitor.received[commands])} commands"
        positions = np.array([msg.position for msg in monitor.received[states]])
        assert len(positions) > 200, f"{robot}: {len(positions)} joint states"
        settled = positions[-len(positions) // 4:]
        np.testing.assert_allclose(settled, np.tile(REFERENCES[robot], (len(settled), 1)), atol=2e-3,
                                   err_msg=f"{robot} away from its reference")
        other = next(r for r in REFERENCES if r != robot)
        assert np.abs(settled[-1] - REFERENCES[other]).min() > 0.2, f"{robot} at {other}'s reference"
    for msg_type, topic in TOPICS:
        assert monitor.received["/" + topic] == [], f"messages on the root namespace's /{topic}"
        assert monitor.graph["/" + topic][0] == [], f"publishers of /{topic}: {monitor.graph['/' + topic]}"
