"""dyn_relay: forwards a topic's serialized messages to another topic, and drops them on request:
a flaky link between a robot and its controller, for fault injection (faults.py).

    python -m dyn_control.nodes.relay --ros-args -p source:=/joint_states -p target:=/relayed/joint_states

Each message of `source` (a sensor_msgs/JointState by default) goes out on `target` as the same
bytes, from the subscription's callback (no conversion to Python objects). A std_msgs/Float64 on
~/drop of d seconds drops every message for the next d seconds; when it ends, the window goes out
on ~/dropped (std_msgs/Float64MultiArray [start, end] in ns of this machine's clock, and the
number of messages dropped), so that whoever judges the outage knows exactly when it was.
"""
import time

import rclpy
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, Float64MultiArray

from . import qos


class RelayNode(Node):
    def __init__(self, node_name="dyn_relay", **kwargs):
        super().__init__(node_name, **kwargs)
        source = self.declare_parameter("source", "/joint_states").value
        target = self.declare_parameter("target", "/relayed/joint_states").value
        self._publisher = self.create_publisher(JointState, target, qos.STATE)
        self._dropped = self.create_publisher(Float64MultiArray, "~/dropped", qos.STATE)
        # keep last 1: behind schedule, the relay forwards the newest state (a link's delay, not a backlog)
        self.create_subscription(JointState, source, self._forward, qos.COMMAND_IN, raw=True)
        self.create_subscription(Float64, "~/drop", self._on_drop, qos.STATE)
        self._window = None          # [start, end] [ns] of the drop under way
        self._count = 0

    def _on_drop(self, msg):
        if msg.data > 0.0:
            now = time.time_ns()
            self._window = [now, now + round(msg.data * 1e9)]
            self._count = 0

    def _forward(self, raw):
        if self._window is not None:
            if time.time_ns() < self._window[1]:
                self._count += 1
                return
            self._dropped.publish(Float64MultiArray(data=[float(self._window[0]), float(time.time_ns()),
                                                          float(self._count)]))
            self._window = None
        self._publisher.publish(raw)


def main(args=None):
    rclpy.init(args=args)
    node = RelayNode()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
