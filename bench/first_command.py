"""`python bench/first_command.py CONFIG.yaml`: `dyn-control bringup CONFIG.yaml --duration 1` with
a probe on the bringup's own node (a plain callback subscription: the probe adds no imports to the
process whose start-up is measured); prints {"first_command": wall-clock time of the first
command}. bench_loop.py measures from just before it starts this process."""
import json
import os
import sys
import time

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

from dyn_control.nodes.bringup import bringup  # noqa: E402

COMMANDS = "/effort_controller/commands"


class FirstCommand:
    when = None

    def start(self, node):
        from std_msgs.msg import Float64MultiArray
        node.create_subscription(Float64MultiArray, COMMANDS, self.seen, 10)

    def seen(self, _):
        if self.when is None:
            self.when = time.time()

    def status(self, phase, elapsed):
        pass

    def stop(self):
        pass


if __name__ == "__main__":
    probe = FirstCommand()
    bringup(sys.argv[1], 1.0, probe)
    print(json.dumps({"first_command": probe.when}))
