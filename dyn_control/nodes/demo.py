"""`dyn-control demo`: bringup of config/demo.yaml with a live status line and a plot at the end."""
import copy
import os
import sys
import tempfile

import numpy as np
import yaml

from ..robots import config_dir
from .bringup import bringup

RMS_WINDOW = 1.0    # [s] of tracking error in the status line's RMS
# [s] before and after a reversal of the reference's velocity left out of the figures "off reversals":
# there a simulated joint's dry friction sticks and flips sign in a few ms, which the model's smooth
# sign does not (MuJoCo's friction-loss constraint: a false force of a few N for ~0.1 s with the true
# joint terms, decaying with the observer's 20 ms time constant); ~/desired comes every 10 ms
REVERSAL_WINDOW = (0.02, 0.2)
CONTROLLER_STATUS = "dyn_controller: control loop"
# the demos' configs (config/): the 7-DoF arm, and the spherical five-bar (a closed chain: the force
# estimate is the force's component in the sphere's tangent plane at the end effector)
DEMOS = {"arm": "demo.yaml", "five_bar": "five_bar_demo.yaml"}
MISMATCH = "demo_mismatch.yaml"     # the arm on a simulated robot that differs from its URDF
BACKENDS = ("builtin", "mujoco")    # the simulated robot's physics (dyn_simulator's parameter backend)
# [Hz] identify's low-pass cut-off in the demo: its loop's recordings are noise-free, and 20 Hz (10 is
# identify's default) halves the identified model's share of the push error (the truth's torques along the
# demo's sine mapped to the tool: p95 0.20 -> 0.08 N builtin, 0.27 -> 0.15 N MuJoCo) with held-out
# errors of 1-2 %; above it MuJoCo's friction sticking reaches the fit (held-out 7 % at 30 Hz)
IDENTIFY_CUTOFF = 20.0


class DemoMonitor:
    """Records the loop's topics (Recorder) and prints one status line; with `bag` (a BagRecorder)
    also writes its topics into an MCAP bag (closed at stop())."""

    def __init__(self, stream=sys.stdout, bag=None):
        self.stream = stream
        self.interactive = stream.isatty()
        self.recorder = None
        self.bag = bag
        self._last_printed = -1.0

    def start(self, node):
        from .recorder import Recorder
        self.recorder = Recorder(node)
        if self.bag is not None:
            self.bag.start(node)

    def status(self, phase, elapsed):
        self.recorder.poll()
        if self.bag is not None:
            self.bag.poll()
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
        if self.bag is not None:
            self.bag.stop()
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


def run_demo(duration=10.0, output="demo_output", robot="arm", mismatch=False, matched=False, backend=None,
             record=None):
    """Bring up DEMOS[robot] (with mismatch: config/demo_mismatch.yaml, the arm on a simulated robot
    with friction, armature and a payload its URDF lacks; matched: the controller told those true
    values) for `duration` seconds; the plot goes to output/<config name>.png. backend: the simulated
    robot's physics (builtin | mujoco; None: the config's). record: also write the joint states, the
    commands and ~/desired into an MCAP bag at this path ("": output/<config name>_bag).
    Returns (exit code, the summary's figures)."""
    if robot not in DEMOS:
        raise ValueError(f"robot must be one of {', '.join(sorted(DEMOS))}, got {robot!r}")
    name = MISMATCH if mismatch else DEMOS[robot]
    config = os.path.join(config_dir(), name)
    with tempfile.TemporaryDirectory(prefix="dyn_control_demo_") as folder:
        if matched:
            config, name = matched_config(config, folder), name.replace(".yaml", "_matched.yaml")
        if backend is not None:
            config, name = backend_config(config, folder, backend, name)
        try:
            monitor = DemoMonitor(bag=recording_bag(record, output, name))
        except ValueError as error:
            print(f"demo: {error}", file=sys.stderr)
            return 2, {}
        print(f"dyn-control demo: {config}, {duration:g} s (the first run compiles the Numba kernels: "
              "up to a minute; later runs load them from the cache)")
        code = bringup(config, duration, monitor)
    if monitor.bag is not None and monitor.bag.count:
        print(f"bag: {monitor.bag.path} ({monitor.bag.count} messages)")
    if code != 0:
        return code, {}
    os.makedirs(output, exist_ok=True)
    path = os.path.join(output, name.replace(".yaml", ".png"))
    plot(monitor.recorder, path)
    figures = summary(monitor.recorder)
    figures.update(loop_summary(monitor.recorder))
    print(f"plot: {path}")
    return 0, figures


def recording_bag(record, output, name):
    """The BagRecorder of `dyn-control demo --record [PATH]` (record None: no recording): the
    joint states, the commands and ~/desired (bag_recorder.DEFAULT_TOPICS) into a new MCAP bag at
    PATH, or with record "" at output/<config name>_bag, which replaces the bag of an earlier
    demo there (as the plot does). ValueError for a PATH that exists."""
    if record is None:
        return None
    from .bag_recorder import BagRecorder
    if record:
        if os.path.exists(record):
            raise ValueError(f"--record {record}: exists already (a bag is a new folder)")
        path = record
    else:
        path = os.path.join(output, name.replace(".yaml", "_bag"))
        if os.path.isdir(path) and os.path.isfile(os.path.join(path, "metadata.yaml")):
            import shutil
            shutil.rmtree(path)
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    return BagRecorder(path)


def backend_config(path, folder, backend, name=None):
    """A copy of the parameter file at `path` (in `folder`) whose simulator's backend is `backend`
    (builtin | mujoco), and the demo's name for it (name_<backend>.yaml; name: that of path)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    with open(path) as f:
        tree = yaml.safe_load(f)
    simulator = next(v["ros__parameters"] for k, v in tree.items() if k.endswith("dyn_simulator"))
    if "mapping" in simulator and backend != "builtin":
        raise ValueError("a closed chain is simulated by the builtin backend only")
    simulator["backend"] = backend
    name = name or os.path.basename(path)
    if backend != "builtin":
        name = name.replace(".yaml", f"_{backend}.yaml")
    out = os.path.join(folder, "backend_" + name)
    with open(out, "w") as f:
        yaml.safe_dump(tree, f)
    return out, name


def identify_demo(duration=10.0, output="demo_output", excitation_period=10.0, backend=None, record=None):
    """`dyn-control demo --mismatch --identify`: identify the mismatch demo's simulated robot through
    ROS, then run the demo on the identified model. 1. An excitation designed for the URDF (one
    optimiser start: seconds); 2. the controller tracks it on the simulated robot (no push) while a
    BagRecorder writes /joint_states and the commands into an MCAP bag; 3. `identify` fits a
    physically consistent model to the bag's states while the controller ran (while_controlled;
    cut-off IDENTIFY_CUTOFF; the simulator's efforts are half a step late: effort_delay); 4. the
    demo with the controller's model.parameters_file set to the result.
    backend: the simulated robot's physics (builtin | mujoco, the independent engine; None: the
    config's); record: the demo's bag as in run_demo. Returns (exit code, the figures: the demo's
    summary and loop figures, "excitation longest command gap [ms]" (a stall while recording makes
    the data the machine's), "excitation window [ns]" (the stamps identified: controlled_window),
    the held-out RMS torque errors [%] per joint of the prior and of the identified model
    ("held-out error prior" / "identified"), and "parameters file")."""
    from ..identification.bag import read_joint_states
    from ..identification.excitation import design_excitation
    from ..identification.identify import identify
    from ..identification.parameters_file import write_parameters
    from ..urdf import load_urdf
    from .bag_recorder import DEFAULT_TOPICS, BagRecorder
    os.makedirs(output, exist_ok=True)
    with open(os.path.join(config_dir(), MISMATCH)) as f:
        tree = yaml.safe_load(f)
    controller = next(v["ros__parameters"] for k, v in tree.items() if k.endswith("dyn_controller"))
    simulator = next(v["ros__parameters"] for k, v in tree.items() if k.endswith("dyn_simulator"))
    if backend is not None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        simulator["backend"] = backend
    engine = simulator.get("backend", "builtin")
    suffix = "" if engine == "builtin" else f"_{engine}"
    try:
        demo_bag = recording_bag(record, output, f"demo_mismatch_identified{suffix}.yaml")
    except ValueError as error:
        print(f"demo: {error}", file=sys.stderr)
        return 2, {}
    urdf = os.path.join(config_dir(), "urdf", "arm7.urdf")
    nominal = load_urdf(urdf)
    print(f"identify 1/3: designing the excitation (one optimiser start); the simulated robot: {engine}")
    excitation = design_excitation(nominal, excitation_period, 5, restarts=1, max_iterations=20)
    print(f"condition number of the excitation's base regressor: {excitation.condition_number:.4g}")
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
        bag = os.path.join(output, f"excitation_bag{suffix}")
        if os.path.exists(bag):
            import shutil
            shutil.rmtree(bag)
        print(f"identify 2/3: the controller tracks the excitation for {excitation_period + 2.0:g} s, recording {bag}")
        topics = {"/joint_states": DEFAULT_TOPICS["/joint_states"],
                  "/effort_controller/commands": DEFAULT_TOPICS["/effort_controller/commands"]}
        exciting_monitor = DemoMonitor(bag=BagRecorder(bag, topics))
        code = bringup(config, excitation_period + 2.0, exciting_monitor)
        if code != 0:
            return code, {}
    gaps = command_gaps(exciting_monitor.recorder.command_times())
    figures = {"excitation longest command gap [ms]": float(gaps.max() * 1e3) if gaps.size else float("inf")}
    print("identify 3/3: identifying the parameters from the bag")
    window = controlled_window(exciting_monitor.recorder)
    figures["excitation window [ns]"] = window
    states = while_controlled(read_joint_states(bag, nominal.joint_names), window)
    result = identify(nominal, states, IDENTIFY_CUTOFF, effort_delay=0.5 / simulator["rate_hz"])
    identified = os.path.abspath(os.path.join(output, f"identified{suffix}.yaml"))
    write_parameters(identified, result.model, f"dyn-control demo --mismatch --identify (simulated robot: {engine})")
    for which in ("prior", "identified"):
        figures[f"held-out error {which}"] = [float(e) for e in 100 * result.errors[which].relative]
    figures["parameters file"] = identified
    print(f"wrote {identified}; held-out RMS torque error, identified: "
          + ", ".join(f"{e:.1f} %" for e in figures["held-out error identified"])
          + " (prior: " + ", ".join(f"{e:.0f} %" for e in figures["held-out error prior"]) + ")")
    controller.setdefault("model", {})["parameters_file"] = identified
    with tempfile.TemporaryDirectory(prefix="dyn_control_identified_") as folder:
        config = os.path.join(folder, f"demo_mismatch_identified{suffix}.yaml")
        with open(config, "w") as f:
            yaml.safe_dump(tree, f)
        monitor = DemoMonitor(bag=demo_bag)
        code = bringup(config, duration, monitor)
    if demo_bag is not None and demo_bag.count:
        print(f"bag: {demo_bag.path} ({demo_bag.count} messages)")
    if code != 0:
        return code, {}
    path = os.path.join(output, f"demo_mismatch_identified{suffix}.png")
    plot(monitor.recorder, path)
    figures.update(summary(monitor.recorder))
    figures.update(loop_summary(monitor.recorder))
    print(f"plot: {path}")
    return 0, figures


def controlled_window(recorder):
    """(first, last) stamp [ns] of the controller's ~/desired in a recording (its outputs carry the
    stamp of the joint state they were computed from), or None: the span of the joint states
    recorded while it controlled the robot."""
    desired = recorder.stamps("desired")
    return (int(desired.min()), int(desired.max())) if desired.size else None


def while_controlled(states, window):
    """The joint states (bag.JointStates) within window = (first, last) stamp [ns] (controlled_window;
    None: all): not those of the robot held still before the first command (efforts zero against
    gravity), nor of the stop (the controller braking, then the simulator's brakes holding the robot:
    torques the efforts lack)."""
    from ..identification.bag import JointStates
    if window is None:
        return states
    stamps = states.start + np.round(states.t * 1e9).astype(np.int64)
    keep = (stamps >= window[0]) & (stamps <= window[1])
    if not keep.any():
        return states
    first = int(np.argmax(keep))
    return JointStates(states.joints, states.t[keep] - states.t[first], states.q[keep],
                       None if states.v is None else states.v[keep], states.effort[keep], start=stamps[first])


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
    near = near_reversals(recorder, estimate_t)
    if near.any():
        parts = []
        if (quiet & ~near).any():
            false_force = np.linalg.norm(force[quiet & ~near], axis=1)
            figures["false force mean off reversals"] = float(false_force.mean())
            figures["false force p95 off reversals"] = float(np.percentile(false_force, 95))
            parts.append(f"false force mean {false_force.mean():.3f} N, "
                         f"p95 {figures['false force p95 off reversals']:.3f} N")
        if pushed.size and (late & ~near).any():
            applied = recorder.values("applied_wrench")[np.searchsorted(applied_t, estimate_t[late & ~near]), 3:]
            error = np.linalg.norm(force[late & ~near] - applied, axis=1)
            figures["force error mean off reversals"] = float(error.mean())
            figures["force error p95 off reversals"] = float(np.percentile(error, 95))
            parts.append(f"force error mean {error.mean():.3f} N, p95 {figures['force error p95 off reversals']:.3f} N")
        if parts:
            print(f"off the reference's velocity reversals ({-REVERSAL_WINDOW[0]:+g} s to {REVERSAL_WINDOW[1]:+g} s "
                  "of each, where a dry friction sticks): " + "; ".join(parts))
    return figures


def near_reversals(recorder, stamps):
    """Which of `stamps` [ns] lie within REVERSAL_WINDOW of a reversal of the reference's velocity
    (a sign change of any joint's ~/desired velocity)."""
    t = recorder.stamps("desired")
    near = np.zeros(stamps.shape, bool)
    if t.size < 2:
        return near
    order = np.argsort(t)
    v = recorder.values("desired", 1)[order]
    flips = t[order][1:][np.any(np.diff(np.sign(v), axis=0) != 0, axis=1)]
    before, after = (int(w * 1e9) for w in REVERSAL_WINDOW)
    for flip in flips:
        near |= (stamps >= flip - before) & (stamps <= flip + after)
    return near
