"""`dyn-control demo`: bringup of config/demo.yaml with a live status line and a plot at the end."""
import copy
import os
import sys
import tempfile

import numpy as np
import yaml

from ..robots import config_dir
from .cli import bringup

RMS_WINDOW = 1.0    # [s] of tracking error in the status line's RMS
CONTROLLER_STATUS = "dyn_controller: control loop"
# the demos' configs (config/): the 7-DoF arm, and the spherical five-bar (a closed chain: the force
# estimate is the force's component in the sphere's tangent plane at the end effector)
DEMOS = {"arm": "demo.yaml", "five_bar": "five_bar_demo.yaml"}
MISMATCH = "demo_mismatch.yaml"     # the arm on a simulated robot that differs from its URDF


class DemoMonitor:
    """Records the loop's topics (Recorder) and prints one status line."""

    def __init__(self, stream=sys.stdout):
        self.stream = stream
        self.interactive = stream.isatty()
        self.recorder = None
        self._last_printed = -1.0

    def start(self, node):
        from .recorder import Recorder
        self.recorder = Recorder(node)

    def status(self, phase, elapsed):
        self.recorder.poll()
        if phase == "configure":
            line = (f"configuring ({elapsed:4.1f} s): loading the robots, compiling the kernels "
                    "(or loading them from the Numba cache)")
        elif phase == "run":
            line = f"t = {elapsed:5.1f} s | " + self._loop_status()
        else:
            return
        if self.interactive:
            self.stream.write("\r" + line.ljust(118)[:118])
            self.stream.flush()
        elif elapsed - self._last_printed >= 1.0 or elapsed < self._last_printed:
            self.stream.write(line + "\n")
            self._last_printed = elapsed

    def _loop_status(self):
        r = self.recorder
        parts = []
        t, e = r.tracking_error()
        if t.size:
            recent = e[t >= t[-1] - RMS_WINDOW * 1e9]
            parts.append(f"tracking rms {1e3 * np.sqrt(np.mean(recent ** 2)):6.3f} mrad")
        if r.count("wrench_estimate"):
            parts.append("force est " + _vector(r.values("wrench_estimate")[-1, 3:]) + " N")
        if r.count("applied_wrench"):
            parts.append("applied " + _vector(r.values("applied_wrench")[-1, 3:]) + " N")
        loop = r.diagnostics.get(CONTROLLER_STATUS, {})
        if "deadline misses" in loop:
            parts.append(f"misses {loop['deadline misses']} | safe-mode entries {loop['watchdog trips']}")
        return " | ".join(parts) if parts else "waiting for the first joint states"

    def stop(self):
        self.recorder.poll()
        if self.interactive:
            self.stream.write("\n")


def _vector(x):
    return "[" + " ".join(f"{v:6.2f}" for v in x) + "]"


def plot(recorder, path):
    """Tracking (q_d and q, and the error) and wrench estimation (estimated vs applied force) over
    time, as a PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t_state = recorder.stamps("joint_states")
    if t_state.size == 0:
        raise RuntimeError("no joint states were recorded: nothing to plot")
    t0 = t_state.min()
    seconds = lambda t: (t - t0) * 1e-9  # noqa: E731
    names = recorder.names["joint_states"]
    fig, axes = plt.subplots(3, 1, figsize=(10, 10), sharex=True)
    q = recorder.values("joint_states", 0)
    t_des = recorder.stamps("desired")
    q_d = recorder.values("desired", 0)
    desired_names = recorder.names.get("desired", [])
    for k, name in enumerate(desired_names[:4]):
        line, = axes[0].plot(seconds(t_state), q[:, names.index(name)], label=name)
        axes[0].plot(seconds(t_des), q_d[:, k], "--", color=line.get_color())
    axes[0].set_ylabel("position [rad]")
    axes[0].set_title("tracking: measured (solid) and desired (dashed)")
    axes[0].legend(loc="upper right", fontsize="small")
    t_err, error = recorder.tracking_error()
    for k, name in enumerate(desired_names):
        axes[1].plot(seconds(t_err), 1e3 * error[:, k], label=name)
    axes[1].set_ylabel("q_d - q [mrad]")
    axes[1].set_title("tracking error")
    axes[1].legend(loc="upper right", fontsize="x-small", ncol=2)
    for key, style, what in (("applied_wrench", "-", "applied"), ("wrench_estimate", "--", "estimated")):
        if recorder.count(key):
            w = recorder.values(key)
            for axis, label, color in zip((3, 4, 5), "xyz", ("C0", "C1", "C2")):
                axes[2].plot(seconds(recorder.stamps(key)), w[:, axis], style, color=color, label=f"f{label} {what}")
    axes[2].set_ylabel("force [N]")
    axes[2].set_xlabel("time [s]")
    axes[2].set_title("external force at the tool: applied by the simulator vs estimated by the controller")
    axes[2].legend(loc="upper right", fontsize="x-small", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_demo(duration=10.0, output="demo_output", robot="arm", mismatch=False, matched=False):
    """Bring up DEMOS[robot] (with mismatch: config/demo_mismatch.yaml, the arm on a simulated robot
    with friction, armature and a payload its URDF lacks; matched: the controller told those true
    values) for `duration` seconds; the plot goes to output/<config name>.png. Returns (exit code,
    the summary's figures)."""
    if robot not in DEMOS:
        raise ValueError(f"robot must be one of {', '.join(sorted(DEMOS))}, got {robot!r}")
    name = MISMATCH if mismatch else DEMOS[robot]
    config = os.path.join(config_dir(), name)
    monitor = DemoMonitor()
    with tempfile.TemporaryDirectory(prefix="dyn_control_demo_") as folder:
        if matched:
            config, name = matched_config(config, folder), name.replace(".yaml", "_matched.yaml")
        print(f"dyn-control demo: {config}, {duration:g} s (the first run compiles the Numba kernels: "
              "up to a minute; later runs load them from the cache)")
        code = bringup(config, duration, monitor)
    if code != 0:
        return code, {}
    os.makedirs(output, exist_ok=True)
    path = os.path.join(output, name.replace(".yaml", ".png"))
    plot(monitor.recorder, path)
    figures = summary(monitor.recorder)
    figures.update(loop_summary(monitor.recorder))
    print(f"plot: {path}")
    return 0, figures


def identify_demo(duration=10.0, output="demo_output", excitation_period=10.0):
    """`dyn-control demo --mismatch --identify`: identify the mismatch demo's simulated robot through
    ROS, then run the demo on the identified model. 1. An excitation designed for the URDF (one
    optimiser start: seconds); 2. the controller tracks it on the simulated robot (no push) while a
    BagRecorder writes /joint_states into an MCAP bag; 3. `identify` fits a physically consistent
    model to the bag (the simulator's efforts are half a step late: effort_delay); 4. the demo with
    the controller's model.parameters_file set to the result. Returns (exit code, the figures)."""
    from ..identification.bag import read_joint_states
    from ..identification.excitation import design_excitation
    from ..identification.identify import identify
    from ..identification.parameters_file import write_parameters
    from ..urdf import load_urdf
    from .bag_recorder import BagRecorder
    os.makedirs(output, exist_ok=True)
    with open(os.path.join(config_dir(), MISMATCH)) as f:
        tree = yaml.safe_load(f)
    controller = next(v["ros__parameters"] for k, v in tree.items() if k.endswith("dyn_controller"))
    simulator = next(v["ros__parameters"] for k, v in tree.items() if k.endswith("dyn_simulator"))
    urdf = os.path.join(config_dir(), "urdf", "arm7.urdf")
    nominal = load_urdf(urdf)
    print("identify 1/3: designing the excitation (one optimiser start)")
    excitation = design_excitation(nominal, excitation_period, 5, restarts=1, max_iterations=20)
    exciting = copy.deepcopy(tree)
    for key, value in exciting.items():
        if key.endswith("dyn_controller"):
            value["ros__parameters"]["reference"] = excitation.parameters()
        if key.endswith("dyn_simulator"):
            value["ros__parameters"].pop("external_wrench", None)
    with tempfile.TemporaryDirectory(prefix="dyn_control_identify_") as folder:
        config = os.path.join(folder, "excitation.yaml")
        with open(config, "w") as f:
            yaml.safe_dump(exciting, f)
        bag = os.path.join(output, "excitation_bag")
        if os.path.exists(bag):
            import shutil
            shutil.rmtree(bag)
        print(f"identify 2/3: the controller tracks the excitation for {excitation_period + 2.0:g} s, recording {bag}")
        code = bringup(config, excitation_period + 2.0, BagRecorder(bag, {"/joint_states": "sensor_msgs/msg/JointState"}))
        if code != 0:
            return code, {}
    print("identify 3/3: identifying the parameters from the bag")
    states = read_joint_states(bag, nominal.joint_names)
    result = identify(nominal, states, effort_delay=0.5 / simulator["rate_hz"])
    identified = os.path.abspath(os.path.join(output, "identified.yaml"))
    write_parameters(identified, result.model, "dyn-control demo --mismatch --identify")
    print(f"wrote {identified}; held-out RMS torque error, identified: "
          + ", ".join(f"{e:.1f} %" for e in 100 * result.errors["identified"].relative))
    controller.setdefault("model", {})["parameters_file"] = identified
    with tempfile.TemporaryDirectory(prefix="dyn_control_identified_") as folder:
        config = os.path.join(folder, "demo_mismatch_identified.yaml")
        with open(config, "w") as f:
            yaml.safe_dump(tree, f)
        monitor = DemoMonitor()
        code = bringup(config, duration, monitor)
    if code != 0:
        return code, {}
    path = os.path.join(output, "demo_mismatch_identified.png")
    plot(monitor.recorder, path)
    figures = summary(monitor.recorder)
    figures.update(loop_summary(monitor.recorder))
    print(f"plot: {path}")
    return 0, figures


def matched_config(path, folder):
    """A copy of the parameter file at `path` whose controller has the simulated robot's joint terms
    (robot.* -> model.*) and payload (payload.* -> model.payload.*): the controller's model is then
    the simulated robot."""
    with open(path) as f:
        tree = yaml.safe_load(f)
    simulator = next(v["ros__parameters"] for k, v in tree.items() if k.endswith("dyn_simulator"))
    controller = next(v["ros__parameters"] for k, v in tree.items() if k.endswith("dyn_controller"))
    controller.setdefault("model", {}).update(copy.deepcopy(simulator.get("robot", {})))
    if "payload" in simulator:
        controller["model"]["payload"] = copy.deepcopy(simulator["payload"])   # no YAML aliases: rcl refuses them
    out = os.path.join(folder, os.path.basename(path).replace(".yaml", "_matched.yaml"))
    with open(out, "w") as f:
        yaml.safe_dump(tree, f)
    return out


def command_gaps(times_ns):
    """Gaps [s] between consecutive commands from their DDS source timestamps."""
    return np.diff(np.sort(times_ns)) * 1e-9


def loop_summary(recorder):
    """The loop as seen from outside (the commands' source timestamps) and as the controller
    reports it (its last /diagnostics); printed, and the controller's tick CPU time and the longest
    gap between commands returned."""
    gaps = command_gaps(recorder.command_times())
    if gaps.size:
        p50, p99 = np.percentile(gaps, [50, 99]) * 1e3
        print(f"commands: {(gaps.size) / gaps.sum():.0f} per second, gaps p50 {p50:.3f} ms, p99 {p99:.3f} ms, "
              f"max {gaps.max() * 1e3:.3f} ms (DDS source timestamps)")
    loop = recorder.diagnostics.get(CONTROLLER_STATUS, {})
    if loop:
        print(f"controller: safe-mode entries {loop.get('watchdog trips', '?')}, deadline misses "
              f"{loop.get('deadline misses', '?')} in {loop.get('ticks', '?')} ticks, tick CPU p50 "
              f"{loop.get('tick cpu p50 [ms]', '?')} ms, p99 {loop.get('tick cpu p99 [ms]', '?')} ms, tick "
              f"duration p50 {loop.get('compute p50 [ms]', '?')} ms, p99 {loop.get('compute p99 [ms]', '?')} ms")
    figures = {key: float(loop[key]) for key in ("tick cpu p50 [ms]", "tick cpu p99 [ms]") if key in loop}
    if gaps.size:
        figures["longest command gap [ms]"] = float(gaps.max() * 1e3)
    return figures


def summary(recorder):
    """RMS tracking error after the start-up transient until the external force, and while it acts
    (estimator.compensation is off in the demo); the false force, the force estimate from 2 s until
    the force (none is applied: an estimate there is the model's error); the force estimate's error
    while the force acts, after the observer's settling. Printed, and returned by name."""
    figures = {}
    t, e = recorder.tracking_error()
    if t.size == 0 or recorder.count("applied_wrench") == 0:
        return figures
    applied_t = recorder.stamps("applied_wrench")
    pushed = applied_t[np.linalg.norm(recorder.values("applied_wrench")[:, 3:], axis=1) > 0]
    onset = pushed.min() if pushed.size else np.inf
    force_on = (t >= onset) & (t <= pushed.max()) if pushed.size else np.zeros(t.size, bool)
    for key, label, window in (("tracking before", "from 2 s until the force", (t >= t[0] + 2e9) & (t < onset)),
                               ("tracking pushed", "while the force pushes", force_on)):
        if window.any():
            figures[key] = float(np.sqrt(np.mean(e[window] ** 2)))
            print(f"tracking error rms {label}: {1e3 * figures[key]:.3f} mrad")
    estimate_t = recorder.stamps("wrench_estimate")
    force = recorder.values("wrench_estimate")[:, 3:]
    quiet = (estimate_t >= t[0] + 2e9) & (estimate_t < onset)
    if quiet.any():
        false_force = np.linalg.norm(force[quiet], axis=1)
        figures["false force mean"], figures["false force p95"], figures["false force max"] = (
            float(false_force.mean()), float(np.percentile(false_force, 95)), float(false_force.max()))
        print(f"false force (no force applied, from 2 s until the force): mean {false_force.mean():.3f} N, "
              f"p95 {figures['false force p95']:.3f} N, max {false_force.max():.3f} N")
    if pushed.size:
        late = (estimate_t >= pushed.min() + 0.5e9) & (estimate_t <= pushed.max())
        if late.any():
            applied = recorder.values("applied_wrench")[np.searchsorted(applied_t, estimate_t[late]), 3:]
            error = np.linalg.norm(force[late] - applied, axis=1)
            figures["force error mean"], figures["force error p95"], figures["force error max"] = (
                float(error.mean()), float(np.percentile(error, 95)), float(error.max()))
            print(f"force estimate error from 0.5 s after the onset: mean {error.mean():.3f} N, "
                  f"p95 {figures['force error p95']:.3f} N, max {error.max():.3f} N "
                  f"(applied {np.linalg.norm(applied[0]):.1f} N)")
    return figures
