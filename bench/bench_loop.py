"""The ROS 2 control loop: timing at 1 kHz, and the time to the first command.

1. 30 s of the closed loop (dyn-control bringup of config/demo.yaml: dyn_controller and
   dyn_simulator, both at 1 kHz, in this process, as `make demo` runs them) while a bare rclpy
   timer at 1 kHz runs in a second process over the same 30 s: the controller's tick period p50 /
   p99 / max, compute time p99 (the tick's work; the timer's callback does none), ticks that never
   ran (both), and our deadline misses (deadlines that passed while a tick was still working, see
   nodes/timing.py).
2. Time from process start to the first command on /effort_controller/commands, for a new process
   running the same bringup: with an empty Numba cache (NUMBA_CACHE_DIR a fresh temporary folder:
   every kernel compiles) and with a warm one (the cache this run uses, filled beforehand).

Run alone: .venv/bin/python bench/run.py loop   (or python bench/bench_loop.py)
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 101))

from common import Row  # noqa: E402

DURATION = 30.0
PERIOD = 1e-3


class LoopSampler:
    """A bringup monitor that copies every tick's period and compute time out of the loop's ring
    buffer (LoopStats keeps the last 2048) four times a second."""

    def __init__(self):
        self.periods, self.computes, self.seen = [], [], 0

    def start(self, nodes, context):
        from dyn_control.nodes.controller import ControllerNode
        self.controller = next(n for n in nodes if isinstance(n, ControllerNode))

    def status(self, phase, elapsed):
        loop = self.controller.loop
        if phase != "run" or loop is None:
            return
        stats = loop.stats
        count, size = stats.count, stats.periods.shape[0]
        new = min(count - self.seen, size)
        index = np.arange(count - new, count) % size
        self.periods.append(stats.periods[index].copy())
        self.computes.append(stats.computes[index].copy())
        self.seen = count

    def stop(self):
        self.status("run", 0.0)
        self.misses = self.controller.loop.stats.deadline_misses


def bare_timer(duration):
    """Child process: an rclpy timer at 1 kHz on a SingleThreadedExecutor; prints "ready", then its
    periods and callback durations as JSON."""
    import rclpy
    rclpy.init()
    node = rclpy.create_node("bare_timer")
    starts, computes = [], []

    def callback():
        start = time.monotonic()
        starts.append(start)
        computes.append(time.monotonic() - start)
    node.create_timer(PERIOD, callback)
    executor = rclpy.executors.SingleThreadedExecutor()
    executor.add_node(node)
    print("ready", flush=True)
    end = time.monotonic() + duration
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.1)
    print(json.dumps({"periods": np.diff(starts).tolist(), "computes": computes}))
    rclpy.shutdown()


def first_command(config):
    """Child process: bring up `config` and print the wall-clock time of the first command seen on
    /effort_controller/commands."""
    from dyn_control.nodes import qos
    from dyn_control.nodes.cli import bringup
    from std_msgs.msg import Float64MultiArray

    class FirstCommand:
        def start(self, nodes, context):
            from rclpy.node import Node
            self.node = Node("first_command_probe", context=context)
            self.commands = qos.PolledSubscription(self.node, Float64MultiArray, "/effort_controller/commands",
                                                   qos.recording(10))
            self.when = None
            threading.Thread(target=self.watch, daemon=True).start()

        def watch(self):
            while self.when is None:
                if self.commands.take() is not None:
                    self.when = time.time()
                time.sleep(0.0005)

        def status(self, phase, elapsed):
            pass

        def stop(self):
            self.node.destroy_node()

    probe = FirstCommand()
    bringup(config, 1.0, probe)
    print(json.dumps({"first_command": probe.when}))


def timed_child(mode, *args, env=None):
    """(seconds from spawning `python bench_loop.py mode args` to the time it reports, its output)."""
    spawned = time.time()
    result = subprocess.run([sys.executable, os.path.abspath(__file__), mode, *args], capture_output=True,
                            text=True, env=env, timeout=600)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    return report["first_command"] - spawned


def never_ran(periods):
    """Ticks due between the first and the last tick that did not run."""
    return int(round(np.sum(periods) / PERIOD)) - len(periods)


def percentiles_us(x):
    x = np.asarray(x) * 1e6
    return np.percentile(x, 50), np.percentile(x, 99), x.max()


def run():
    from dyn_control.nodes.cli import bringup
    from dyn_control.robots import config_dir

    config = os.path.join(config_dir(), "demo.yaml")
    rows = []
    # 2. first command: warm the cache this process uses, then measure warm and cold
    timed_child("first-command", config)
    warm = timed_child("first-command", config)
    with tempfile.TemporaryDirectory() as empty:
        cold = timed_child("first-command", config, env=dict(os.environ, NUMBA_CACHE_DIR=empty))
    # 1. 30 s of our loop beside the bare timer
    timer = subprocess.Popen([sys.executable, os.path.abspath(__file__), "bare-timer", str(DURATION)],
                             stdout=subprocess.PIPE, text=True)
    assert timer.stdout.readline().strip() == "ready"
    sampler = LoopSampler()
    bringup(config, DURATION, sampler)
    timer_report = json.loads(timer.communicate(timeout=120)[0].strip().splitlines()[-1])
    periods = np.concatenate(sampler.periods)
    periods = periods[np.isfinite(periods)]
    computes = np.concatenate(sampler.computes)
    ours = percentiles_us(periods)
    ref = percentiles_us(timer_report["periods"])
    note = f"{DURATION:.0f} s at 1 kHz, {periods.size} ticks"
    for k, name in enumerate(("p50", "p99", "max")):
        rows.append(Row(f"loop period {name}", ours[k], ref[k], "rclpy timer", note))
    rows.append(Row("loop compute p99 (timer: empty callback)", percentiles_us(computes)[1],
                    percentiles_us(timer_report["computes"])[1], "rclpy timer"))
    rows.append(Row("ticks that never ran (a count, not us)", never_ran(periods),
                    note=f"rclpy timer: {never_ran(timer_report['periods'])}"))
    rows.append(Row("deadline misses (a count, not us)", sampler.misses,
                    note="ticks still working when the next one was due"))
    rows.append(Row("process start -> first command, warm cache", warm * 1e6, note=f"= {warm:.2f} s"))
    rows.append(Row("process start -> first command, empty cache", cold * 1e6, note=f"= {cold:.2f} s"))
    return rows


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "bare-timer":
        bare_timer(float(sys.argv[2]))
    elif len(sys.argv) > 1 and sys.argv[1] == "first-command":
        first_command(sys.argv[2])
    else:
        for row in run():
            print(row.format())
