"""dyn-control: start the package's nodes without ros2 launch.

    dyn-control bringup CONFIG.yaml [--duration S]
    dyn-control demo [--duration S] [--output DIR]

bringup starts the nodes of a ROS 2 parameter file (the `node_name: ros__parameters: {...}` format
that the launch files pass too) in one process with a MultiThreadedExecutor, and drives their
lifecycle itself: configure every node, then activate the controllers and then the simulators.
The file reaches the nodes through rcl's own parser (`--ros-args --params-file CONFIG.yaml`), so
wildcards (`/**`) and namespaces behave as under ros2 launch. Entries for other nodes (e.g. a
controller_manager) are skipped.

demo is bringup of the bundled config/demo.yaml (7-DoF arm, builtin simulator, sine reference, a
10 N force at the tool between 3 s and 6 s) with a live status line and, at the end, a plot of
tracking and wrench estimation in demo_output/.

DDS discovery stays on this machine: main() sets ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST unless the
environment already sets it.
"""
import argparse
import os
import sys
import threading
import time

import yaml

NODE_TYPES = {"dyn_controller": "controller", "dyn_simulator": "simulator"}
STATUS_PERIOD = 0.25     # [s] between status-line updates


def nodes_in_config(path):
    """[(namespace, name)] of the dyn_control nodes a parameter file configures, and the names of
    the other nodes it holds."""
    with open(path) as f:
        tree = yaml.safe_load(f) or {}
    if not isinstance(tree, dict):
        raise ValueError(f"{path}: not a ROS 2 parameter file (expected `node_name: ros__parameters: ...`)")
    found, others = [], []

    def walk(prefix, subtree):
        for key, value in subtree.items():
            if not isinstance(value, dict):
                continue
            full = f"{prefix}/{str(key).strip('/')}"
            if "ros__parameters" in value:
                namespace, _, name = full.rpartition("/")
                if name in NODE_TYPES:
                    found.append((namespace or "/", name))
                elif name != "**":
                    others.append(full)
            else:
                walk(full, value)

    walk("", tree)
    return found, others


def bringup(config, duration=None, monitor=None):
    """Run the dyn_control nodes of parameter file `config` for `duration` seconds after activation
    (None: until Ctrl-C). monitor (optional): an object with start(nodes, context), status(phase,
    elapsed) called every STATUS_PERIOD from its own thread, and stop(). Returns an exit code."""
    import rclpy
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    from .controller import ControllerNode
    from .simulator import SimulatorNode

    found, others = nodes_in_config(config)
    if not found:
        print(f"{config}: no dyn_control node ({', '.join(NODE_TYPES)}) in this file", file=sys.stderr)
        return 2
    if others:
        print(f"bringup: skipping the other nodes of {os.path.basename(config)}: {', '.join(others)}")
    context = rclpy.Context()
    rclpy.init(args=["--ros-args", "--params-file", config], context=context,
               signal_handler_options=SignalHandlerOptions.NO)
    classes = {"controller": ControllerNode, "simulator": SimulatorNode}
    nodes = [classes[NODE_TYPES[name]](name, namespace=namespace, context=context) for namespace, name in found]
    executor = MultiThreadedExecutor(context=context)
    for node in nodes:
        executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, name="bringup executor", daemon=True)
    spinner.start()
    phase = {"name": "configure", "since": time.monotonic()}
    status = None
    code = 0
    try:
        if monitor is not None:
            monitor.start(nodes, context)
            status = _StatusThread(monitor, phase)
            status.start()
        # simulators first (fast), then controllers (Numba warm-up); activate controllers first so
        # they are listening when the simulators start publishing
        for node in sorted(nodes, key=lambda n: isinstance(n, ControllerNode)):
            if not _transition(node, "configure", "inactive"):
                return 1
        for node in sorted(nodes, key=lambda n: not isinstance(n, ControllerNode)):
            if not _transition(node, "activate", "active"):
                return 1
        phase.update(name="run", since=time.monotonic())
        deadline = None if duration is None else time.monotonic() + duration
        while deadline is None or time.monotonic() < deadline:
            time.sleep(0.05 if deadline is None else max(0.0, min(0.05, deadline - time.monotonic())))
    except KeyboardInterrupt:
        code = 130
    finally:
        phase.update(name="stop", since=time.monotonic())
        for node in nodes:
            if node.state == "active":
                node.trigger_deactivate()
        if status is not None:
            status.stop()
            monitor.stop()
        executor.shutdown()
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=context)
        spinner.join(1.0)
    return code


def _transition(node, transition, expected):
    getattr(node, "trigger_" + transition)()
    if node.state != expected:
        print(f"bringup: {node.get_name()} failed to {transition} (see its log above)", file=sys.stderr)
        return False
    return True


class _StatusThread:
    """Calls monitor.status(phase, seconds in it) every STATUS_PERIOD."""

    def __init__(self, monitor, phase):
        self.monitor, self.phase = monitor, phase
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="status", daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join(2.0)

    def _run(self):
        while not self._stop.wait(STATUS_PERIOD):
            self.monitor.status(self.phase["name"], time.monotonic() - self.phase["since"])


def main(argv=None):
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    parser = argparse.ArgumentParser(prog="dyn-control", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("bringup", help="start the nodes of a ROS 2 parameter file")
    up.add_argument("config", help="parameter YAML (node_name: ros__parameters: ...)")
    up.add_argument("--duration", type=float, default=None, help="seconds to run after activation "
                    "(default: until Ctrl-C)")
    demo_args = commands.add_parser("demo", help="closed-loop demo on the bundled 7-DoF arm")
    demo_args.add_argument("--duration", type=float, default=10.0, help="seconds to run (default 10)")
    demo_args.add_argument("--output", default="demo_output", help="folder for the plot (default demo_output)")
    args = parser.parse_args(argv)
    if args.command == "bringup":
        if not os.path.isfile(args.config):
            parser.error(f"no such file: {args.config}")
        return bringup(os.path.abspath(args.config), args.duration)
    from .demo import run_demo
    return run_demo(args.duration, args.output)


if __name__ == "__main__":
    sys.exit(main())
