"""Shared set-up of the ROS tests (test_ros_*.py).

Importing this module gives the test process its own DDS domain (ROS_DOMAIN_ID from the pid, in
1..101), so that test runs of several developers on this machine never see each other's topics;
conftest.py has already kept discovery on localhost.
"""
import os

os.environ["ROS_DOMAIN_ID"] = str(1 + os.getpid() % 101)

import yaml  # noqa: E402

from dyn_control.nodes.bringup import bringup  # noqa: E402


def nested(parameters):
    """{"gains.kp": 1} -> {"gains": {"kp": 1}}, the layout of a ROS 2 parameter file."""
    tree = {}
    for name, value in parameters.items():
        *groups, leaf = name.split(".")
        node = tree
        for group in groups:
            node = node.setdefault(group, {})
        node[leaf] = value
    return tree


def write_parameter_file(path, nodes):
    """nodes: {node name: {parameter: value}} -> a ROS 2 parameter YAML at path."""
    with open(path, "w") as f:
        yaml.safe_dump({name: {"ros__parameters": nested(p)} for name, p in nodes.items()}, f)
    return str(path)


class RecordingMonitor:
    """A bringup monitor that records the loop's topics (dyn_control.nodes.recorder.Recorder) on
    the bringup process's node (the nodes run in processes of their own)."""

    def __init__(self):
        self.recorder = None

    def start(self, node):
        from dyn_control.nodes.recorder import Recorder
        self._node = node
        self.recorder = Recorder(node)

    def status(self, phase, elapsed):
        self.recorder.poll()

    def stop(self):
        self.recorder.poll()


def run_closed_loop(tmp_path, nodes, duration):
    """Bring up `nodes` ({name: parameters}), each in its own process, for `duration` seconds after
    activation, recording in this one; returns the monitor (its .recorder holds the run)."""
    monitor = RecordingMonitor()
    code = bringup(write_parameter_file(tmp_path / "params.yaml", nodes), duration, monitor)
    assert code == 0, f"bringup exited with {code}"
    return monitor
