"""The bringup activates the controller only once discovery has settled around it (doc/running.md, "Joint
states late in transit"). With Fast DDS a participant hears of the others at their next
announcement, every 3 s by default, and that discovery stalls every subscription of its process for
up to 0.34 s: measured 3.06-3.08 s after the node's first log line, so over 3.42 s after it. A loop
running by then trips its watchdog.

The nodes' first log lines (their ROS log timestamps, written once each node exists) are the
reference; the first command's DDS source timestamp, taken here raw, must come at least STALL_END
after the later of the two nodes' (the simulator's discovery stalls the controller too). Measured
from the node processes' spawn, the wait the bringup had before, it came 2.65 s after.
"""
import os
import re

import pytest
import ros_harness  # noqa: F401  (this process's own ROS domain)
from std_msgs.msg import Float64MultiArray

import dyn_control as dc
from dyn_control.nodes import bringup, discovery, qos
from ros_harness import write_parameter_file

pytestmark = pytest.mark.ros

URDF = dc.bundled_urdf("arm7")
STALL_END = 3.45   # [s] after a node's first log line: the latest end of the stall measured (3.08 + 0.335 s)
FIRST_LOG_LINE = re.compile(r"\[(\d+\.\d+)\] \[(dyn_controller|dyn_simulator)\]")


class FirstCommand:
    """A bringup monitor: the source timestamp [ns] of the first message on the command topic, taken
    raw on the bringup's node."""

    def start(self, node):
        self.commands = qos.PolledSubscription(node, Float64MultiArray, "/effort_controller/commands",
                                               qos.recording(100))
        self.stamp = None

    def status(self, phase, elapsed):
        taken = self.commands.take_raw()
        if self.stamp is None and taken is not None:
            self.stamp = taken[1]["source_timestamp"]

    def stop(self):
        self.status("stop", 0.0)


def test_the_controller_is_activated_after_the_discovery_stall_of_its_start(tmp_path, capfd):
    if discovery.discovery_settle() == 0.0:
        pytest.skip(f"no discovery wait with {os.environ.get('RMW_IMPLEMENTATION')} (Fast DDS only)")
    params = write_parameter_file(tmp_path / "params.yaml", {"dyn_controller": {"urdf_path": URDF},
                                                             "dyn_simulator": {"urdf_path": URDF}})
    watch = FirstCommand()
    assert bringup.bringup(params, 1.0, watch) == 0
    first_lines = {}
    for stamp, name in FIRST_LOG_LINE.findall(capfd.readouterr().err):
        first_lines.setdefault(name, float(stamp))
    assert set(first_lines) == {"dyn_controller", "dyn_simulator"}, f"log lines of {sorted(first_lines)} only"
    assert watch.stamp is not None, "no command reached the watcher"
    after = watch.stamp * 1e-9 - max(first_lines.values())
    assert after >= STALL_END, (f"the first command {after:.2f} s after the later node's first log line, "
                                f"before the end of a discovery stall ({STALL_END} s)")
