"""The ROS 2 control loop at 1 kHz, measured from outside, and the time to the first command.

1. 30 s of `dyn-control bringup config/demo.yaml` (dyn_controller and dyn_simulator in processes of
   their own, as `make demo` runs them) while, in processes of their own,
   - a listener takes the command topic serialized (cheap) with the DDS source timestamps, and
     /diagnostics (watchdog trips, deadline misses, the controller's tick CPU time and duration p50 /
     p99; the last figures published while joint states still came, so that the run's end is not
     counted), and /joint_states with
     their source timestamps (the simulator's gaps: a watchdog trip where the joint states stopped
     for longer than the watchdog's timeout is the robot's side stalling, which the watchdog is
     there for, not the controller);
   - a bare rclpy timer at 1 kHz runs on a SingleThreadedExecutor (the reference: what rclpy itself
     reaches on this machine).
   Reported: commands per second, gaps between consecutive commands' source timestamps p50 / p99 /
   max (ours; the timer's periods beside them), watchdog trips (and those that ended with joint
   states late or lost in transit, as the controller counts them) beside the joint states' gaps over
   the watchdog's timeout and the timer's periods over it, deadline misses, tick CPU time (the loop
   thread's) and duration (wall clock).
2. The same with one more process: a callback-based subscriber of /joint_states and the command
   topic (an executor calling Python per message, as `ros2 topic hz` or a plotter does).
3. The bundled arm in each control mode (MODES: collision detection on; the Cartesian impedance with
   it), a light-listener run each: the tick's CPU time p50 / p99 and commands per second
   (`python bench/bench_loop.py modes` runs only these).
4. The loop against the number of joints, gradients on (the demo's settings: the parameter and
   joint-twist gradients every 100 ticks over a window of 200 samples): the demo's run above (the
   bundled arm7, 7 joints), then the same file on example-robot-data's talos_reduced (fixed base,
   32 joints) and tiago (48 joints) against the builtin simulator, each a light-listener run:
   commands per second, gap p99, tick CPU p50 / p99, and the tick CPU per joint.
5. Time from process start to the first command on /effort_controller/commands, for a new bringup
   (bench/first_command.py: the bringup with a probe on its own node, started as a new process):
   with an empty Numba cache (NUMBA_CACHE_DIR a fresh temporary folder: every kernel compiles) and
   with a warm one (WARM_STARTS times: median and range).

Run alone: .venv/bin/python bench/run.py loop   (or python bench/bench_loop.py)
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 101))

from common import Row  # noqa: E402

DURATION = 30.0
WARM_STARTS = 5
PERIOD = 1e-3
COMMANDS = "/effort_controller/commands"
CONTROLLER_STATUS = "dyn_controller: control loop"


def listener(duration):
    """Child process: takes the command topic and /joint_states raw (source timestamps) and
    /diagnostics for `duration` s after "ready"; prints the timestamps and the controller's last
    loop figures."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from dyn_control.nodes import qos
    rclpy.init()
    node = rclpy.create_node("bench_listener")
    commands = qos.PolledSubscription(node, Float64MultiArray, COMMANDS, qos.recording(1000))
    states = qos.PolledSubscription(node, JointState, "/joint_states", qos.recording(1000))
    diagnostics = qos.PolledSubscription(node, DiagnosticArray, "/diagnostics", qos.recording(100))
    stamps, state_stamps, loop = [], [], {}
    last_state = -1.0
    print("ready", flush=True)
    end = time.monotonic() + duration
    while time.monotonic() < end:
        while (taken := commands.take_raw()) is not None:
            stamps.append(taken[1]["source_timestamp"])
        while (taken := states.take_raw()) is not None:
            state_stamps.append(taken[1]["source_timestamp"])
            last_state = time.monotonic()
        while (msg := diagnostics.take()) is not None:
            for status in msg.status:
                values = {kv.key: kv.value for kv in status.values}
                # the loop's figures while the simulator runs, not those of the bringup's end
                if status.name == CONTROLLER_STATUS and "ticks" in values and time.monotonic() - last_state < 0.1:
                    loop = values
        time.sleep(0.01)
    print(json.dumps({"stamps": stamps, "state_stamps": state_stamps, "loop": loop}))
    rclpy.shutdown()


def callback_subscriber(duration):
    """Child process: Python callbacks on /joint_states and the command topic (what `ros2 topic
    hz` does); prints how many messages it got."""
    import rclpy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    rclpy.init()
    node = rclpy.create_node("bench_callback_subscriber")
    counts = {"joint_states": 0, "commands": 0}

    def count(key):
        def callback(msg):
            counts[key] += 1
        return callback
    node.create_subscription(JointState, "/joint_states", count("joint_states"), 10)
    node.create_subscription(Float64MultiArray, COMMANDS, count("commands"), 10)
    executor = rclpy.executors.SingleThreadedExecutor()
    executor.add_node(node)
    print("ready", flush=True)
    end = time.monotonic() + duration
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.1)
    print(json.dumps(counts))
    rclpy.shutdown()


def bare_timer(duration):
    """Child process: an rclpy timer at 1 kHz on a SingleThreadedExecutor; prints "ready", then its
    periods as JSON."""
    import rclpy
    rclpy.init()
    node = rclpy.create_node("bare_timer")
    starts = []
    node.create_timer(PERIOD, lambda: starts.append(time.monotonic()))
    executor = rclpy.executors.SingleThreadedExecutor()
    executor.add_node(node)
    print("ready", flush=True)
    end = time.monotonic() + duration
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.1)
    print(json.dumps({"periods": np.diff(starts).tolist()}))
    rclpy.shutdown()


def child(mode, *args, env=None):
    """A `python bench_loop.py mode args` process that has printed "ready"."""
    process = subprocess.Popen([sys.executable, os.path.abspath(__file__), mode, *map(str, args)],
                               stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout.readline().strip() == "ready"
    return process


def report(process):
    return json.loads(process.communicate(timeout=120)[0].strip().splitlines()[-1])


def time_to_first_command(config, env=None):
    spawned = time.time()
    result = subprocess.run([sys.executable, os.path.join(HERE, "first_command.py"), config],
                            capture_output=True, text=True, env=env, timeout=900)
    return json.loads(result.stdout.strip().splitlines()[-1])["first_command"] - spawned


def loop_run(config, with_callbacks):
    """One DURATION s run of the demo's loop beside the bare timer; the listener's report, the
    timer's, and the callback subscriber's counts (or None)."""
    from dyn_control.nodes.bringup import bringup
    extra = child("callback-subscriber", DURATION + 20) if with_callbacks else None
    timer = child("bare-timer", DURATION + 10)
    watcher = child("listener", DURATION + 10)
    assert bringup(config, DURATION) == 0
    listened = report(watcher)
    listened["watchdog"] = watchdog_timeout(config)
    return listened, report(timer), (report(extra) if extra is not None else None)


def watchdog_timeout(config):
    """The controller's watchdog_timeout [s] in the parameter file `config`."""
    import yaml
    with open(config) as stream:
        nodes = yaml.safe_load(stream)
    return next(node["ros__parameters"]["watchdog_timeout"] for key, node in nodes.items() if "controller" in key)


def loop_rows(label, listened, timer):
    gaps = np.diff(np.sort(np.array(listened["stamps"], dtype=np.int64))) * 1e-9
    periods = np.array(timer["periods"])
    loop = listened["loop"]
    ours = np.percentile(gaps, [50, 99]) * 1e6
    ref = np.percentile(periods, [50, 99]) * 1e6
    rate = gaps.size / gaps.sum()
    rows = [Row(f"{label}: command gap p50", ours[0], ref[0], "rclpy timer period"),
            Row(f"{label}: command gap p99", ours[1], ref[1], "rclpy timer period"),
            Row(f"{label}: command gap max", gaps.max() * 1e6, periods.max() * 1e6, "rclpy timer period"),
            Row(f"{label}: commands per second (a rate, not us)", rate, periods.size / periods.sum(),
                "rclpy timer: callbacks per second"),
            Row(f"{label}: watchdog trips / deadline misses (counts)", float(loop.get("watchdog trips", "nan")),
                note=f"deadline misses {loop.get('deadline misses', '?')} in {loop.get('ticks', '?')} ticks; "
                     f"trips on joint states late in transit "
                     f"{loop.get('watchdog trips on joint states late in transit', '?')}, lost in transit "
                     f"{loop.get('watchdog trips on joint states lost in transit', '?')}; "
                     + stalls(listened, periods)),
            Row(f"{label}: controller tick CPU p50", float(loop.get("tick cpu p50 [ms]", "nan")) * 1e3,
                note="the loop thread's CPU time"),
            Row(f"{label}: controller tick CPU p99", float(loop.get("tick cpu p99 [ms]", "nan")) * 1e3,
                note="the loop thread's CPU time"),
            Row(f"{label}: controller tick duration p50", float(loop.get("compute p50 [ms]", "nan")) * 1e3,
                note="wall clock: with preemption and GIL waits"),
            Row(f"{label}: controller tick duration p99", float(loop.get("compute p99 [ms]", "nan")) * 1e3,
                note="wall clock: with preemption and GIL waits")]
    return rows


def stalls(listened, periods):
    """What a watchdog trip is set against: the joint states' gaps (their source timestamps) and
    the bare timer's periods longer than the watchdog's timeout."""
    timeout = listened["watchdog"]
    states = np.diff(np.sort(np.array(listened["state_stamps"], dtype=np.int64))) * 1e-9
    if states.size == 0:
        return "no joint states heard"
    return (f"joint-state gaps over the {timeout * 1e3:.0f} ms watchdog {int(np.sum(states > timeout))} "
            f"(max {states.max() * 1e3:.1f} ms), timer periods over it {int(np.sum(periods > timeout))}")


def robot_config(config, urdf, directory):
    """The demo's parameter file on another robot (its URDF path): no scheduled wrench, the
    simulator's initial positions its default (zero, clipped into the limits), the estimator's frame
    the controller's default (the last frame). Returns the new file's path."""
    import yaml
    with open(config) as stream:
        nodes = yaml.safe_load(stream)
    for key, node in nodes.items():
        params = node["ros__parameters"]
        params["urdf_path"] = urdf
        params.pop("initial_positions", None)
        params.pop("external_wrench", None)
        params.get("estimator", {}).pop("frame", None)
    path = os.path.join(directory, os.path.basename(urdf).replace(".urdf", ".yaml"))
    with open(path, "w") as stream:
        yaml.safe_dump(nodes, stream)
    return path


def scaling_rows(config, arm_run):
    """The light-listener loop on talos_reduced and tiago beside the arm's run (robot, nv, the
    listener's report, the timer's): each robot's loop rows, and its tick CPU p50 / p99 per joint."""
    import dyn_control as dc
    from common import robot_urdf
    runs = [("arm7", 7) + arm_run]
    with tempfile.TemporaryDirectory() as directory:
        for name in ("talos_reduced", "tiago"):
            urdf = robot_urdf(name)
            listened, timer, _ = loop_run(robot_config(config, urdf, directory), with_callbacks=False)
            runs.append((name, dc.load_urdf(urdf).nv, listened, timer))
    rows = []
    for name, nv, listened, timer in runs[1:]:
        rows += [row for row in loop_rows(f"{name} ({nv} joints)", listened, timer)
                 if "duration" not in row.case and "max" not in row.case]
    for name, nv, listened, _ in runs:
        p50, p99 = (float(listened["loop"].get(f"tick cpu {p} [ms]", "nan")) * 1e3 for p in ("p50", "p99"))
        rows.append(Row(f"tick CPU p50 / joint, {name} ({nv} joints)", p50 / nv,
                        note=f"p99 / joint {p99 / nv:.1f} us; p50 {p50:.0f} us, p99 {p99:.0f} us"))
    return rows


def mode_config(config, controller, directory, name):
    """The demo's parameter file with the controller's parameters `controller` added (dotted names)."""
    import yaml
    with open(config) as stream:
        nodes = yaml.safe_load(stream)
    for key, node in nodes.items():
        if "controller" in key:
            params = node["ros__parameters"]
            for dotted, value in controller.items():
                *groups, leaf = dotted.split(".")
                level = params
                for group in groups:
                    level = level.setdefault(group, {})
                level[leaf] = value
    path = os.path.join(directory, name + ".yaml")
    with open(path, "w") as stream:
        yaml.safe_dump(nodes, stream)
    return path


MODES = {   # the control laws of the tick beside the demo's (joint computed torque, gradients on)
    "joint + collision detection": {"collision.enabled": True, "collision.reaction": "report"},
    "cartesian_impedance + collision detection": {"control.mode": "cartesian_impedance",
                                                  "collision.enabled": True, "collision.reaction": "report"},
}


def mode_rows(config, arm_run):
    """The light-listener loop of the bundled arm in each control mode: commands per second and the
    tick's CPU time p50 / p99."""
    runs = [("joint (the demo)",) + arm_run]
    with tempfile.TemporaryDirectory() as directory:
        for index, (mode, controller) in enumerate(MODES.items()):
            listened, timer, _ = loop_run(mode_config(config, controller, directory, f"mode{index}"),
                                          with_callbacks=False)
            runs.append((mode, listened, timer))
    rows = []
    for mode, listened, _ in runs:
        loop = listened["loop"]
        gaps = np.diff(np.sort(np.array(listened["stamps"], dtype=np.int64))) * 1e-9
        p50, p99 = (float(loop.get(f"tick cpu {p} [ms]", "nan")) * 1e3 for p in ("p50", "p99"))
        rows.append(Row(f"arm7, {mode}: tick CPU p99", p99,
                        note=f"p50 {p50:.0f} us; {gaps.size / gaps.sum():.0f} commands/s"))
    return rows


def run():
    from dyn_control.robots import config_dir

    config = os.path.join(config_dir(), "demo.yaml")
    rows = []
    time_to_first_command(config)                  # fills the cache this run uses
    warm = [time_to_first_command(config) for _ in range(WARM_STARTS)]
    with tempfile.TemporaryDirectory() as empty:
        cold = time_to_first_command(config, env=dict(os.environ, NUMBA_CACHE_DIR=empty))
    listened, timer, _ = loop_run(config, with_callbacks=False)
    rows += loop_rows("light listener", listened, timer)
    arm_run = (listened, timer)
    listened, timer, counts = loop_run(config, with_callbacks=True)
    rows += loop_rows("+ callback subscriber", listened, timer)
    rows.append(Row("callback subscriber: messages it got (a count)", counts["commands"] + counts["joint_states"],
                    note=f"{counts['commands']} commands, {counts['joint_states']} joint states"))
    rows.append(Row("process start -> first command, warm cache (median)", float(np.median(warm)) * 1e6,
                    note=f"= {np.median(warm):.2f} s, {WARM_STARTS} starts: {min(warm):.2f}-{max(warm):.2f} s"))
    rows.append(Row("process start -> first command, empty cache", cold * 1e6, note=f"= {cold:.2f} s"))
    rows += mode_rows(config, arm_run)
    rows += scaling_rows(config, arm_run)
    return rows


if __name__ == "__main__":
    modes = {"bare-timer": bare_timer, "listener": listener, "callback-subscriber": callback_subscriber}
    if len(sys.argv) > 1 and sys.argv[1] in modes:
        modes[sys.argv[1]](float(sys.argv[2]))
    elif sys.argv[1:] == ["modes"]:         # the control modes only
        from dyn_control.robots import config_dir
        demo = os.path.join(config_dir(), "demo.yaml")
        for row in mode_rows(demo, loop_run(demo, with_callbacks=False)[:2]):
            print(row.format())
    elif sys.argv[1:] == ["scaling"]:       # the loop against the number of joints only
        from dyn_control.robots import config_dir
        demo = os.path.join(config_dir(), "demo.yaml")
        for row in scaling_rows(demo, loop_run(demo, with_callbacks=False)[:2]):
            print(row.format())
    else:
        for row in run():
            print(row.format())
