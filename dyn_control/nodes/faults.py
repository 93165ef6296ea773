"""dyn-control faults: the controller under injected faults, judged from outside.

Each scenario brings up the bundled arm's controller and simulator (`bringup`, each node in its own
process, the demo's sine: 0.3 rad at 0.5 Hz on every joint) with a relay (relay.py, a process of its
own) between the simulator's /joint_states and the controller, which listens to
/relayed/joint_states. While the simulated robot goes on, faults come at set times:
- outages: the relay drops the joint states for 0.05, 0.2, 0.5 and 1 s; and for 0.1 and 1 s with
  the simulator holding the last command it received (as ros2_control's forward controllers do), so
  the controller's last command before it falls silent (g(q_last)) is what the robot applies through
  the outage. In 1 s the arm, blind to the controller, falls (an unstable pose of gravity); that one
  is judged from the joint states' return: the controller must brake it, never speed it up;
- pause: SIGSTOP of the controller's process for 1 s (SIGCONT after);
- stop: deactivate the controller, the simulator holding its last command (as ros2_control's
  forward controllers do); activate it again; then lifecycle shutdown from active.
A listener in the bringup process records the simulator's joint states (the true state), the
controller's ~/desired and commands (values and DDS source timestamps). Per fault,
from the fault's start (t0) to 2 s after its end (t1):
- peak speed: each joint's largest speed against the larger of 1.5 times its peak speed over the
  2 s before t0 and 0.5 rad/s, and against its URDF velocity limit (the worst joint's ratio);
- energy: the largest kinetic energy 1/2 v^T M(q) v (M from the model of the simulated robot)
  against its value at t0;
- recovery: after t1 (after a stop: after the activation that follows), how long until the
  tracking error (~/desired against the true state) stays below 1e-3 rad, but for excursions that
  begin after tracking came back and within 0.3 s of a stall of the machine (a gap of the
  simulator's states or of the controller's commands over 5 ms, or a ~/desired published over 5 ms
  after the state it carries: DDS source timestamps): those are counted ("excursions after a
  stall"), as the machine's;
- command steps: the largest change between consecutive commands against torque_rate_limit / rate.
`run_scenarios()` returns these figures; `dyn-control faults` prints them; test_ros_faults.py
asserts them.
"""
import copy
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import yaml

from .bringup import bringup

RATE_HZ = 1000.0
RATE_LIMIT = 1000.0          # [N m/s], the controller's default
TRACKING_TOLERANCE = 1e-3    # [rad]
# a gap of the states or commands over MACHINE_GAP (5 missed periods) is a stall of the machine; a
# tracking excursion within EXCURSION_AFTER_GAP of one is the machine's, not the recovery's
MACHINE_GAP, EXCURSION_AFTER_GAP = 5e-3, 0.3      # [s]
WINDOW_AFTER = 2.0           # [s] judged after a fault's end
OUTAGES = (0.05, 0.2, 0.5, 1.0)
# outages on a robot that holds the last command it received: judged like the others, and (the
# long one) from the joint states' return on, as the arm falls while the controller is blind
HELD_OUTAGE, HELD_LONG_OUTAGE = "outage 0.1 s, command held", "outage 1 s, command held: from the return"
AMPLITUDE, FREQUENCY = 0.3, 0.5      # [rad], [Hz]: the demo's sine
# joint friction of a geared arm (config/demo_mismatch.yaml's): viscous [N m s/rad], Coulomb [N m]
JOINT_FRICTION = {"viscous_friction": [1.0, 1.0, 0.8, 0.8, 0.2, 0.2, 0.1],
                  "coulomb_friction": [3.0, 3.0, 2.0, 2.0, 0.5, 0.5, 0.3]}
Q0 = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]


def configuration(urdf, hold_commands):
    """The nodes' parameters: the demo's controller on /relayed/joint_states; the simulated robot
    braking after 20 ms without a command, as Franka's and UR's stop on a lost command stream, or
    (hold_commands) holding the last command for 10 s, as ros2_control's forward controllers do,
    with the joint friction of a geared arm (the simulator's and the controller's alike): without
    it no held torque keeps this arm's pose (an unstable balance of gravity), with it the arm sticks."""
    controller = {"urdf_path": urdf, "rate_hz": RATE_HZ, "joint_states_topic": "/relayed/joint_states",
                  "reference": {"type": "sine", "amplitude": AMPLITUDE, "frequency": FREQUENCY},
                  "gains": {"kp": 400.0, "kd": 40.0}, "torque_rate_limit": RATE_LIMIT,
                  "estimator": {"frame": "arm7_tool"}}
    simulator = {"urdf_path": urdf, "rate_hz": RATE_HZ, "initial_positions": Q0,
                 "command_timeout": 10.0 if hold_commands else 0.02,
                 "realtime": {"cpu": 0, "priority": 40}}
    if hold_commands:
        simulator["robot"] = copy.deepcopy(JOINT_FRICTION)      # no YAML aliases: rcl refuses them
        controller["model"] = copy.deepcopy(JOINT_FRICTION)
    return {"dyn_controller": {"ros__parameters": controller}, "dyn_simulator": {"ros__parameters": simulator}}


class FaultMonitor:
    """A bringup monitor that records the loop and fires `events` [(seconds after activation,
    name, action(monitor))] from its status thread."""

    def __init__(self, events, config):
        self.events = sorted(events, key=lambda e: e[0])
        self.config = config
        self.windows = {}     # event name -> [t0, t1] [ns]

    def start(self, node):
        from lifecycle_msgs.srv import ChangeState
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64, Float64MultiArray

        from . import qos
        self.node = node
        self.states = qos.PolledSubscription(node, JointState, "/joint_states", qos.recording(5000))
        self.desired = qos.PolledSubscription(node, JointState, "/dyn_controller/desired", qos.recording(1000))
        self.commands = qos.PolledSubscription(node, Float64MultiArray, "/effort_controller/commands",
                                               qos.recording(5000))
        self.drops = qos.PolledSubscription(node, Float64MultiArray, "/dyn_relay/dropped", qos.recording(10))
        self.drop = node.create_publisher(Float64, "/dyn_relay/drop", qos.STATE)
        self.lifecycle = node.create_client(ChangeState, "/dyn_controller/change_state")
        self.rows = {"states": [], "desired": [], "commands": [], "drops": []}

    def status(self, phase, elapsed):
        self.poll()
        while phase == "run" and self.events and self.events[0][0] <= elapsed:
            _, name, action = self.events.pop(0)
            action(self, name)

    def stop(self):
        self.poll()

    def poll(self):
        from .inputs import stamp_ns
        for key, subscription in (("states", self.states), ("desired", self.desired)):
            while (taken := subscription.take_with_info()) is not None:
                msg, info = taken
                self.rows[key].append((info["source_timestamp"], stamp_ns(msg.header.stamp), np.array(msg.position),
                                       np.array(msg.velocity)))
        while (taken := self.commands.take_with_info()) is not None:
            self.rows["commands"].append((taken[1]["source_timestamp"], np.array(taken[0].data)))
        while (msg := self.drops.take()) is not None:
            self.rows["drops"].append(list(msg.data))


# the faults: each returns action(monitor, name), which injects it at the reference's next speed
# peak and notes its window [t0, t1]
def at_speed_peak(monitor):
    """Sleep until the sine reference is at its next speed peak (its t = 0, the stamp of the first
    ~/desired, plus a whole number of half periods), so that the arm's kinetic energy is near its
    largest when the fault starts. Stamps become this clock's time through the newest joint state's
    source timestamp."""
    monitor.poll()
    first_stamp = monitor.rows["desired"][0][1]
    source, stamp = monitor.rows["states"][-1][:2]
    offset = source - stamp
    half_period = round(0.5e9 / FREQUENCY)
    now = time.time_ns() - offset
    target = first_stamp + -(-(now - first_stamp) // half_period) * half_period + offset
    time.sleep(max(0.0, (target - time.time_ns()) * 1e-9))


def outage(seconds):
    """The relay drops the joint states for `seconds` (the window: from the relay's report)."""
    def action(monitor, name):
        from std_msgs.msg import Float64
        at_speed_peak(monitor)
        monitor.drop.publish(Float64(data=seconds))
        monitor.windows[name] = None
    return action


def pause(seconds):
    """SIGSTOP of the controller's process, SIGCONT `seconds` later."""
    def action(monitor, name):
        pid = controller_pid(monitor.config)
        at_speed_peak(monitor)
        start = time.time_ns()
        os.kill(pid, signal.SIGSTOP)
        time.sleep(seconds)
        os.kill(pid, signal.SIGCONT)
        monitor.windows[name] = [start, time.time_ns()]
    return action


def lifecycle(transition):
    """A lifecycle transition of the controller (deactivate, activate, shutdown)."""
    def action(monitor, name):
        from lifecycle_msgs.msg import Transition
        from lifecycle_msgs.srv import ChangeState
        request = ChangeState.Request()
        request.transition.id = getattr(Transition, f"TRANSITION_{transition.upper()}")
        if transition != "activate":
            at_speed_peak(monitor)
        start = time.time_ns()
        future = monitor.lifecycle.call_async(request)
        deadline = time.monotonic() + 10.0
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.005)
        monitor.windows[name] = [start, time.time_ns()]
    return action


def controller_pid(config):
    """The pid of the controller process bringup started with `config` (its command line names it)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    words = f.read().split(b"\0")
            except OSError:
                continue
            if b"dyn_control.nodes.controller" in words and config.encode() in words:
                return int(entry)
    raise RuntimeError("the controller's process was not found")


def run(events, duration, hold_commands, folder):
    """One bringup with the relay, the events fired; returns the monitor with its recording."""
    import dyn_control as dc
    config = os.path.join(folder, f"faults_{len(os.listdir(folder))}.yaml")
    with open(config, "w") as f:
        yaml.safe_dump(configuration(dc.bundled_urdf("arm7"), hold_commands), f)
    relay = subprocess.Popen([sys.executable, "-m", "dyn_control.nodes.relay"], start_new_session=True)
    monitor = FaultMonitor(events, config)
    try:
        code = bringup(config, duration, monitor)
    finally:
        relay.send_signal(signal.SIGINT)
        try:
            relay.wait(5.0)
        except subprocess.TimeoutExpired:
            relay.kill()
            relay.wait()
    monitor.code = code
    for start, end, _ in monitor.rows["drops"]:
        name = next((n for n, w in monitor.windows.items() if w is None), None)
        if name is not None:
            monitor.windows[name] = [int(start), int(end)]
    return monitor


# the bringups: (events [(seconds after activation, fault name, action)], duration [s], whether the
# robot holds the last command)
RUNS = (([(4.0 * (k + 1), f"outage {d:g} s", outage(d)) for k, d in enumerate(OUTAGES)],
         4.0 * len(OUTAGES) + 6.0, False),
        ([(4.0, HELD_OUTAGE, outage(0.1)), (8.0, HELD_LONG_OUTAGE, outage(1.0))], 13.0, True),
        ([(4.0, "SIGSTOP 1 s", pause(1.0))], 8.0, False),
        ([(4.0, "deactivate", lifecycle("deactivate")), (8.0, "activate", lifecycle("activate")),
          (12.5, "shutdown", lifecycle("active_shutdown"))], 16.0, True))


def run_scenarios(oracle=None, folder=None, stall_limit=None, attempts=1):
    """Every scenario of the module docstring: {fault name: figures (judge())}, and the exit codes
    of every bringup. oracle: the simulated robot's mass matrix and velocity limits (RobotOracle:
    Pinocchio's where installed, else this package's). A bringup in which a fault's window held a
    stall of the machine over `stall_limit` [ms] runs again, up to `attempts` times in all; each
    fault keeps the figures of its first run without such a stall (else of its last)."""
    oracle = oracle or RobotOracle()
    figures, codes = {}, []
    with tempfile.TemporaryDirectory(prefix="dyn_control_faults_") as scratch:
        for events, duration, hold_commands in RUNS:
            for _ in range(attempts):
                monitor = run(events, duration, hold_commands, folder or scratch)
                codes.append(monitor.code)
                judged = judge_run(monitor, oracle)
                for name, values in judged.items():
                    if not _clean(figures.get(name), stall_limit):
                        figures[name] = values
                if all(_clean(figures[name], stall_limit) for name in judged):
                    break
    return figures, codes


def _clean(values, stall_limit):
    """Whether a fault's figures exist and hold no stall of the machine over stall_limit [ms]."""
    return values is not None and (stall_limit is None or values["stall [ms]"] <= stall_limit)


def judge_run(monitor, oracle):
    """{fault name: figures} of one bringup's faults."""
    figures = {}
    for name, window in monitor.windows.items():
        if name == "activate":
            continue
        # tracking comes back after the fault's end, after a deactivate's next activation, never
        # after a shutdown
        recovery_after = {"deactivate": monitor.windows.get("activate"), "shutdown": None,
                          HELD_LONG_OUTAGE: None}.get(name, window)
        figures[name] = judge(monitor, window, recovery_after, oracle, stopped=name in ("deactivate", "shutdown"),
                              from_return=name == HELD_LONG_OUTAGE)
    return figures


def judge(monitor, window, recovery_after, oracle, stopped=False, from_return=False):
    """The figures of one fault (module docstring); window [t0, t1] [ns]; recovery_after: the window
    after whose end tracking must come back (None: it need not, after a shutdown). from_return:
    judged from t1 on against the state at the return: the arm's largest joint speed over
    [t1, t1 + 0.1 s] (the rate limit takes 0.1 s to ramp 100 N m towards the braking torque), or the
    re-engagement blend's 1 rad/s, allowed to every joint; the energy against its value at t1."""
    t0, t1 = window
    states = monitor.rows["states"]
    times = np.array([row[0] for row in states])
    q = np.array([row[2] for row in states])
    v = np.array([row[3] for row in states])
    if from_return:
        at_return = (times >= t1) & (times <= t1 + 0.1e9)
        allowed = max(np.abs(v[at_return]).max(), 1.0)
        start = np.argmin(np.abs(times - t1))
        after = (times >= t1) & (times <= t1 + WINDOW_AFTER * 1e9)
    else:
        before = (times >= t0 - 2e9) & (times < t0)
        allowed = np.maximum(1.5 * np.abs(v[before]).max(axis=0), 0.5)
        start = np.argmin(np.abs(times - t0))
        after = (times >= t0) & (times <= t1 + WINDOW_AFTER * 1e9)
    peak_after = np.abs(v[after]).max(axis=0)
    energy = oracle.kinetic_energy(q[after], v[after])
    energy_start = oracle.kinetic_energy(q[start:start + 1], v[start:start + 1])[0]
    figures = {"window [s]": (t1 - t0) * 1e-9,
               "peak speed / allowed": float((peak_after / allowed).max()),
               "peak speed / URDF limit": float((peak_after / oracle.velocity_limits).max()),
               "peak speed [rad/s]": float(peak_after.max()),
               "energy / energy at t0": float(energy.max() / energy_start),
               "energy at t0 [J]": float(energy_start)}
    if recovery_after is not None:
        figures["recovery [s]"], figures["excursions after a stall"] = recovery_time(
            monitor, recovery_after[1], recovery_after[0] if stopped else None)
    steps = command_steps(monitor)
    figures["command step / rate limit"] = float(steps.max() / (RATE_LIMIT / RATE_HZ))
    figures["stall [ms]"] = stall(monitor, t0, t1, stopped)
    return figures


def stall(monitor, t0, t1, stopped):
    """The machine's largest stall around a fault [ms], from DDS source timestamps: the longest gap
    between the simulator's joint states from 2 s before t0 to 2 s after t1, and between the
    controller's commands outside the fault (before t0, and from 0.3 s after t1 unless the fault
    stopped the controller). A loaded machine that stalls the loop for longer than the controller's
    watchdog (50 ms) makes a fault's figures the machine's, not the controller's."""
    def largest_gap(times, low, high):
        times = np.sort(times[(times >= low) & (times <= high)])
        return float(np.diff(times).max()) * 1e-6 if times.size > 1 else 0.0
    states = np.array([row[0] for row in monitor.rows["states"]])
    commands = np.array([row[0] for row in monitor.rows["commands"]])
    gaps = [largest_gap(states, t0 - 2e9, t1 + 2e9), largest_gap(commands, t0 - 2e9, t0)]
    if not stopped:
        gaps.append(largest_gap(commands, t1 + 0.3e9, t1 + 2e9))
    return max(gaps)


def recovery_time(monitor, t1, activated=None):
    """(seconds after t1 until the tracking error of the sine reference itself (not the blend back
    to it) stays below TRACKING_TOLERANCE (until t1 + 3 s; inf when it does not), the number of
    excursions over it left out as the machine's). An excursion (consecutive samples over the
    tolerance) is left out when it began after tracking had come back, within EXCURSION_AFTER_GAP
    of the end of a stall of the machine that began after t1 (stalls()). The sine starts at the
    first ~/desired of the run (after `activated` [ns], when given): its centre the position there,
    its time the stamp there (the controller anchors its reference at the first joint state)."""
    rows = [row for row in monitor.rows["desired"] if activated is None or row[0] >= activated]
    start_stamp, centre = rows[0][1], rows[0][2]
    by_stamp = {row[1]: row[2] for row in monitor.rows["states"]}
    omega = 2.0 * np.pi * FREQUENCY
    desired = [(row[0], np.abs(centre + AMPLITUDE * np.sin(omega * (row[1] - start_stamp) * 1e-9)
                               - by_stamp[row[1]]).max())
               for row in rows if row[1] in by_stamp and t1 <= row[0] <= t1 + 3e9]
    if not desired:
        return float("inf"), 0
    times = np.array([t for t, _ in desired])
    over = np.array([error >= TRACKING_TOLERANCE for _, error in desired])
    starts = np.flatnonzero(over & ~np.r_[False, over[:-1]])
    ends = np.flatnonzero(over & ~np.r_[over[1:], False])
    gaps = stalls(monitor, t1)
    last, excused = None, 0
    for start, end in zip(starts, ends):
        if start > 0 and any(gap_start < times[start] <= gap_end + EXCURSION_AFTER_GAP * 1e9
                             for gap_start, gap_end in gaps):
            excused += 1
        else:
            last = end
    if last is None:
        return 0.0, excused
    if last == len(desired) - 1:
        return float("inf"), excused
    return (times[last] - t1) * 1e-9, excused


def stalls(monitor, t1):
    """[(start, end)] [ns] of the machine's stalls that began after the fault's end t1 (the fault's
    own silence is not the machine's), from DDS source timestamps: the gaps over MACHINE_GAP between
    the simulator's states or between the controller's commands, and the times the controller
    acted on a joint state older than MACHINE_GAP (a ~/desired published that long after the
    simulator published the state it carries: the relay or the transport stalled, while the
    controller went on commanding from the state it had)."""
    gaps = []
    for key in ("states", "commands"):
        stamps = np.sort(np.array([row[0] for row in monitor.rows[key]]))
        long = (np.diff(stamps) > MACHINE_GAP * 1e9) & (stamps[:-1] >= t1)
        gaps += list(zip(stamps[:-1][long], stamps[1:][long]))
    published = {row[1]: row[0] for row in monitor.rows["states"]}
    for source, stamp, *_ in monitor.rows["desired"]:
        state = published.get(stamp)
        if state is not None and state >= t1 and source - state > MACHINE_GAP * 1e9:
            gaps.append((state, source))
    return gaps


def command_steps(monitor):
    """|command_k - command_k-1| of consecutive commands (by source timestamp), per joint."""
    rows = sorted(monitor.rows["commands"], key=lambda row: row[0])
    values = np.array([row[1] for row in rows])
    return np.abs(np.diff(values, axis=0)).max(axis=0)


class RobotOracle:
    """The simulated arm's mass matrix and velocity limits, from Pinocchio where it is installed (an
    independent library: the tests' oracle), else from this package."""

    def __init__(self):
        import dyn_control as dc
        urdf = dc.bundled_urdf("arm7")
        try:
            import pinocchio as pin
        except ImportError:
            model = dc.load_urdf(urdf)
            data = model.create_data()
            self.mass_matrix = lambda q: dc.crba(model, data, q)
            self.velocity_limits = np.asarray(model.velocity_limit)
            return
        model = pin.buildModelFromUrdf(urdf)
        data = model.createData()

        def mass_matrix(q):
            M = pin.crba(model, data, q)
            return np.triu(M) + np.triu(M, 1).T
        self.mass_matrix = mass_matrix
        self.velocity_limits = np.asarray(model.velocityLimit)

    def kinetic_energy(self, q, v):
        """1/2 v^T M(q) v of each row."""
        return np.array([0.5 * v[k] @ self.mass_matrix(q[k]) @ v[k] for k in range(len(q))])


def main():
    figures, codes = run_scenarios()
    print(f"\nfault injection (bundled arm, sine 0.3 rad at 0.5 Hz; bringup exit codes {codes})")
    keys = ["window [s]", "peak speed [rad/s]", "peak speed / allowed", "peak speed / URDF limit",
            "energy / energy at t0", "recovery [s]", "excursions after a stall", "command step / rate limit",
            "stall [ms]"]
    print("| fault | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for name, values in figures.items():
        print(f"| {name} | " + " | ".join(f"{values[k]:.3g}" if k in values else "-" for k in keys) + " |")
    return 0 if all(code == 0 for code in codes) else 1
