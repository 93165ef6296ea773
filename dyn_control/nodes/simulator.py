"""dyn_simulator: a simulated robot for the controller, as an rclpy LifecycleNode.

    ros2 run dyn_control simulator --ros-args --params-file config/demo.yaml

Subscribes the effort command (std_msgs/Float64MultiArray in `joints` order), integrates the
dynamics at rate_hz in real time (timing.RealtimeLoop with catch-up: the simulated clock keeps pace
with the wall clock), publishes /joint_states (position, velocity, effort) and ~/applied_wrench.
Backends: builtin (dyn_control's ABA, RK4) and mujoco (MuJoCo loading the same URDF). With
`mapping.name` set, the URDF is a closed chain's equivalent tree and the builtin backend integrates
the closed chain in its actuated coordinates (simulation/closed_chain.py, one compiled call per step,
external wrenches included); /joint_states carry every tree joint, the passive ones closing the loop.

A tick takes the newest command (serialized, parsed by wire.parse_float64_array), takes one step
(the builtin backend's RK4 is one compiled call) and publishes /joint_states and ~/applied_wrench
as bytes (wire.RawMessage). Behind schedule, the loop catches up at most `max_catch_up` periods
back to back, then drops the backlog (a slip, counted in /diagnostics): a late simulator never
floods the controller with a burst of joint states.

With gravity_compensation `robot` the simulated robot adds g(q) to every command, as Franka's and
UR's torque interfaces do; its effort is then the whole joint torque it applies.

Simulated time starts at the first command when wait_for_command is true (the default): until
then the robot is held still at its initial position and /joint_states carry the current time, so a
controller that takes seconds to configure finds the robot where it started. Joint-state stamps
are start + k dt for step k: the time of the state, even when the loop catches up on a backlog.

The robot's side of what follows (waiting, the command timeout, the clamp, gravity, wrenches,
divergence) is simulation/simulated_robot.py, without ROS; this node takes the commands and
wrenches, runs the loop and publishes.

Faults, as a real robot meets them:
- Commands: the newest valid command of the backlog (a queue of qos.COMMAND_IN_DEPTH, so a flood of
  invalid commands from another publisher cannot push the valid ones out) is applied; wrong length or
  non-finite ones are rejected and counted. The applied torque is clamped to the URDF's effort
  limits, as a drive does (default_effort_limit for a joint whose URDF gives none, or 0, which some
  exporters write for "unset"); commands beyond them are counted.
- Command timeout: the last command is held for command_timeout, then command_timeout_action:
  `brake` (default; Franka and UR arms stop and brake on a lost command stream) locks every joint
  where it is (the state is held at (q_brake, 0) and not integrated) until a command comes again,
  which the drives then apply at once; `zero` applies zero effort and the arm falls.
- External wrenches above max_external_force / max_external_torque are refused (topic: counted;
  schedule: configure fails).
- Divergence: a state that is not finite, a joint faster than divergence_velocity (or moved more than
  divergence_velocity dt in one step), a step the backend refuses (singular, non-finite) or MuJoCo
  resetting itself after an unstable step stops the integration for good (until the next activate):
  the robot is held at rest at its last finite state, /joint_states go on (a stopped robot), and
  /diagnostics report ERROR with the value fatal = true, which makes `dyn-control bringup` exit 3.
  So does an exception that stops the loop.
"""

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from ..simulation.closed_chain import ClosedChainSimulator
from ..simulation.simulated_robot import TIMEOUT_ACTIONS, SimulatedRobot
from . import params, preload, qos
from .closed_chain import PARAMETER_PREFIX, active_theta, node_mapping
from .lifecycle import LoopNode, spin
from .params import Param
from .rcl_io import RawPublisher
from .robot import (coordinate_effort_limits, joint_indices, joint_term_parameters, load_robot, payload_parameters,
                    with_joint_terms, with_payload)
from .timing import RealtimeLoop
from .wire import RawMessage, markers, message_view, parse_float64_array, vector_pair_template

BACKENDS = ("builtin", "mujoco")

PARAMETERS = (
    Param("robot_description", "", "string", "configure", "URDF XML of the robot (first choice)"),
    Param("urdf_path", "", "string", "configure",
          "URDF file when robot_description is empty (package://PKG/... allowed)"),
    Param("backend", "builtin", "string", "configure", "physics: builtin (our ABA, RK4) | mujoco"),
    Param("mapping.name", "", "string", "configure",
          "closed-chain mapping plugin of an equivalent-tree URDF (builtin backend); its keyword arguments "
          "as mapping.parameters.* (empty: a tree robot)"),
    Param("rate_hz", 1000.0, "number", "configure", "integration and publishing rate [Hz]", 1.0, 10000.0),
    Param("joints", [], "strings", "configure", "joints of the command array, in order (empty: all)"),
    Param("command_topic", "effort_controller/commands", "string", "configure",
          "std_msgs/Float64MultiArray of efforts in `joints` order (relative: in the node's namespace)"),
    Param("command_timeout", 0.1, "number", "live",
          "hold the last command this long [s], then command_timeout_action", 0.001, 60.0),
    Param("command_timeout_action", "brake", "string", "live",
          "when the commands time out: brake (lock every joint where it is, as Franka and UR arms do, until "
          "a command comes again) | zero (zero effort: the arm falls)"),
    Param("default_effort_limit", 1e4, "number", "configure",
          "effort limit [N m, N] of the joints whose URDF gives none (no <limit>, or effort 0); the applied "
          "torque is clamped to the URDF's effort limits", 1e-6, 1e12),
    Param("max_external_force", 1000.0, "number", "configure",
          "largest external force [N] accepted (~/external_wrench, schedule)", 0.0, 1e9),
    Param("max_external_torque", 100.0, "number", "configure",
          "largest external torque [N m] accepted (~/external_wrench, schedule)", 0.0, 1e9),
    Param("divergence_velocity", 1000.0, "number", "configure",
          "a joint faster than this [rad/s, m/s] means the simulation diverged: it stops, holding the "
          "robot, and reports ERROR", 1e-3, 1e9),
    Param("initial_positions", [], "numbers", "configure",
          "initial joint positions, one per model joint (empty: zero, clipped into the limits); "
          "closed chain: one per active joint or per tree joint (empty: the mapping's reference)"),
    Param("wait_for_command", True, "bool", "activate", "hold the robot still until the first command"),
    Param("gravity_compensation", "controller", "string", "configure",
          "controller (commands are the joint torques) | robot (the simulated robot adds g(q) to every command)"),
    Param("realtime.priority", 0, "integer", "configure",
          "SCHED_FIFO priority of the simulation thread (0: off); best effort, a warning when refused", 0, 99),
    Param("realtime.cpu", -2, "integer", "configure",
          "CPU the simulation thread is pinned to (-2: no pinning; on a 2-core machine 0 leaves the last "
          "CPU to the controller's loop)"),
    Param("max_catch_up", 5, "integer", "configure",
          "periods the loop may fall behind and catch up back to back; beyond, the backlog is dropped", 0, 1000),
    Param("external_wrench.schedule.start", [], "numbers", "configure", "start times [s] of scheduled wrenches"),
    Param("external_wrench.schedule.end", [], "numbers", "configure", "end times [s]"),
    Param("external_wrench.schedule.frame", [], "strings", "configure", "link whose origin each wrench acts at"),
    Param("external_wrench.schedule.force", [], "numbers", "configure",
          "forces [N], 3 numbers per entry, root-frame axes"),
    Param("external_wrench.schedule.torque", [], "numbers", "configure",
          "torques [N m], 3 numbers per entry (empty: zero), root-frame axes"),
    Param("autostart", False, "bool", "configure", "configure and activate right after start-up"),
    Param("noise.position", 0.0, "number", "configure",
          "standard deviation of Gaussian noise on the published positions [rad, m] (a sensor's)", 0.0, 1.0),
    Param("noise.velocity", 0.0, "number", "configure", "... on the published velocities [rad/s, m/s]", 0.0, 100.0),
    Param("noise.effort", 0.0, "number", "configure", "... on the published efforts [N m, N]", 0.0, 1e4),
    Param("noise.seed", 0, "integer", "configure", "seed of the noise (a run repeats with the same seed)", 0,
          2 ** 31 - 1),
) + joint_term_parameters("robot.", "the simulated robot's") + payload_parameters("payload.", "the simulated robot's")


def robot_model(model, values):
    """The simulated robot: the URDF's model with the joint terms of robot.* and the payload of
    payload.*, which a controller on the same URDF does not know unless told."""
    return with_payload(with_joint_terms(model, values, "robot."), values, "payload.")


def wrench_schedule(values, model):
    """[(start, end, frame, wrench (6,) [n; f])] from the parallel arrays external_wrench.schedule.*."""
    prefix = "external_wrench.schedule."
    start, end, frames = values[prefix + "start"], values[prefix + "end"], values[prefix + "frame"]
    force, torque = values[prefix + "force"], values[prefix + "torque"]
    k = len(start)
    if len(end) != k or len(frames) != k or len(force) != 3 * k or len(torque) not in (0, 3 * k):
        raise ValueError(f"parameters {prefix}*: need the same number of entries in start, end and frame, "
                         f"3 per entry in force (and torque, or none); got {k} starts, {len(end)} ends, "
                         f"{len(frames)} frames, {len(force)} force and {len(torque)} torque numbers")
    schedule = []
    for i in range(k):
        model.frame_id(frames[i])   # ValueError naming an unknown frame
        if not end[i] > start[i]:
            raise ValueError(f"parameter {prefix}end: entry {i} ends ({end[i]}) before it starts ({start[i]})")
        wrench = np.zeros(6)
        wrench[3:] = force[3 * i:3 * i + 3]
        if torque:
            wrench[:3] = torque[3 * i:3 * i + 3]
        excess = wrench_excess(wrench, values["max_external_force"], values["max_external_torque"])
        if excess is not None:
            raise ValueError(f"parameters {prefix}*: entry {i} ({frames[i]}): {excess}")
        schedule.append((start[i], end[i], frames[i], wrench))
    return schedule


def wrench_excess(wrench, max_force, max_torque):
    """Why the wrench [n; f] (6,) is beyond the bounds (naming the bound), or None."""
    force, torque = np.linalg.norm(wrench[3:]), np.linalg.norm(wrench[:3])
    if force > max_force:
        return f"force {force:.4g} N above max_external_force ({max_force:g} N)"
    if torque > max_torque:
        return f"torque {torque:.4g} N m above max_external_torque ({max_torque:g} N m)"
    return None


def drive_effort_limits(model, default):
    """The effort limit of each coordinate (actuated joint) that the simulated drives clamp to: the
    URDF's, or `default` where the URDF gives none (no <limit> loads as inf) or 0 (written by some
    exporters for "unset"; a drive with no torque at all is not a drive)."""
    limits = coordinate_effort_limits(model)
    limits[~(limits > 0.0) | ~np.isfinite(limits)] = default
    return limits


def message_templates(model):
    """The serialized templates (wire.RawMessage) of the messages the loop publishes, by the name of
    their publisher (`<name>_pub`): joint (/joint_states) and applied (~/applied_wrench)."""
    nv = model.nv
    joint_state = JointState(name=list(model.actuated_joints), position=markers(nv), velocity=markers(nv, 100.0),
                             effort=markers(nv, 200.0))
    applied = WrenchStamped()
    return {
        "joint": RawMessage(joint_state, {"position": joint_state.position, "velocity": joint_state.velocity,
                                          "effort": joint_state.effort}),
        "applied": vector_pair_template(applied, model.root_name,
                                        {"force": applied.wrench.force, "torque": applied.wrench.torque}),
    }


def make_simulator(backend, model, urdf, dt, q0):
    if backend == "builtin":
        from ..simulation.builtin import BuiltinSimulator
        return BuiltinSimulator(model, dt, q0=q0)
    from ..simulation.mujoco_backend import MujocoSimulator
    return MujocoSimulator(model, urdf, dt, q0=q0)


class SimulatorNode(LoopNode):
    """The dyn_simulator lifecycle node (see the module docstring)."""

    KERNELS = staticmethod(preload.simulator_kernels)

    def __init__(self, node_name="dyn_simulator", **kwargs):
        super().__init__(node_name, PARAMETERS, PARAMETER_PREFIX, **kwargs)

    # ---------------------------------------------------------------- lifecycle
    def _configure(self, values):
        self._check(values)
        self._build(values)

    def on_activate(self, state):
        c = self._configured
        values = params.read(self, PARAMETERS, ("activate", "live"))
        c.robot.activate(values["command_timeout"], values["command_timeout_action"], values["wait_for_command"],
                         c.clock_ns())
        result = super().on_activate(state)
        self.state = "active"
        self.loop = RealtimeLoop("dyn_simulator loop", c.sim.dt, self._tick, catch_up=True,
                                 max_lag=c.max_catch_up * c.sim.dt, cpu=c.cpu, priority=c.priority,
                                 warn=self.get_logger().warning,
                                 on_error=self._on_loop_error)
        self.loop.start()
        self.get_logger().info(f"simulating {c.model.name!r} ({c.backend}) at {1.0 / c.sim.dt:g} Hz"
                               + (", waiting for the first command" if c.robot.waiting else ""))
        return result

    def on_deactivate(self, state):
        self._stop_loop()
        self.state = "inactive"
        return super().on_deactivate(state)

    def _check(self, values):
        if values["backend"] not in BACKENDS:
            raise ValueError(f"parameter backend: must be one of {', '.join(BACKENDS)}, got {values['backend']!r}")
        for name in ("rate_hz", "command_timeout"):
            if not values[name] > 0.0:
                raise ValueError(f"parameter {name}: must be > 0, got {values[name]!r}")
        if values["command_timeout_action"] not in TIMEOUT_ACTIONS:
            raise ValueError(f"parameter command_timeout_action: must be one of {', '.join(TIMEOUT_ACTIONS)}, "
                             f"got {values['command_timeout_action']!r}")
        params.check_ranges(PARAMETERS, values)
        if values["gravity_compensation"] not in ("controller", "robot"):
            raise ValueError(f"parameter gravity_compensation: must be one of controller, robot, got "
                             f"{values['gravity_compensation']!r}")
        if not -2 <= values["realtime.cpu"] <= 4096:
            raise ValueError(f"parameter realtime.cpu: must be in [-2, 4096], got {values['realtime.cpu']!r}")
        if not 0 <= values["max_catch_up"] <= 1000:
            raise ValueError(f"parameter max_catch_up: must be in [0, 1000], got {values['max_catch_up']!r}")

    def _build(self, values):
        model, urdf = load_robot(values["robot_description"], values["urdf_path"])
        model = robot_model(model, values)
        for message in model.warnings:
            self.get_logger().warning(f"URDF: {message}")
        c = _Configured()
        self._configured = c
        c.model = model
        c.backend = values["backend"]
        if values["mapping.name"]:
            if np.any(model.joint_terms) or values["payload.link"]:
                raise ValueError("parameters robot.*, payload.*: joint terms and payloads are not simulated on a "
                                 "closed chain")
            c.mapping = self._closed_chain(values, model)
            c.commanded = joint_indices(model, values["joints"] or list(c.mapping.active_joints))
            q0 = None
            c.sim = ClosedChainSimulator(c.mapping, model, 1.0 / values["rate_hz"],
                                         active_theta(c.mapping, model, values["initial_positions"]))
        else:
            c.commanded = joint_indices(model, values["joints"])
            q0 = values["initial_positions"] or None
            if q0 is not None and len(q0) != model.nv:
                raise ValueError(f"parameter initial_positions: {len(q0)} numbers for {model.nv} joints "
                                 f"({', '.join(model.actuated_joints)})")
            c.sim = make_simulator(c.backend, model, urdf, 1.0 / values["rate_hz"], q0)
        c.noise_std = (values["noise.position"], values["noise.velocity"], values["noise.effort"])
        c.noise = np.random.default_rng(values["noise.seed"]) if any(c.noise_std) else None
        c.noise_sample = np.zeros(model.nv)
        gravity_by_robot = values["gravity_compensation"] == "robot"
        if gravity_by_robot and c.mapping is not None:
            raise ValueError("parameter gravity_compensation: robot is not simulated on a closed chain")
        effort_limit = drive_effort_limits(model, values["default_effort_limit"])
        urdf_limits = coordinate_effort_limits(model)
        unlimited = [model.actuated_joints[k] for k in c.commanded if not 0.0 < urdf_limits[k] < np.inf]
        if unlimited:
            self.get_logger().warning(f"URDF: no effort limit (or 0) for {', '.join(unlimited)}: their drives "
                                      f"clamp to default_effort_limit = {values['default_effort_limit']:g}")
        c.max_force, c.max_torque = values["max_external_force"], values["max_external_torque"]
        c.max_catch_up = values["max_catch_up"]
        c.cpu = values["realtime.cpu"]
        c.priority = values["realtime.priority"]
        c.sim.step(np.zeros(model.nv))      # compile (or load) the kernels of a step now
        c.sim.step(np.zeros(model.nv), np.zeros(6), model.frame_names[-1])
        c.sim.reset(q0)
        c.robot = SimulatedRobot(c.sim, model, c.commanded, effort_limit, values["divergence_velocity"],
                                 gravity_by_robot, wrench_schedule(values, model), self.get_logger(),
                                 on_diverge=self._publish_diagnostics)
        c.clock_ns = lambda: self.get_clock().now().nanoseconds
        c.received = np.zeros(len(c.commanded))
        c.command_sub = qos.PolledSubscription(self, Float64MultiArray, values["command_topic"], qos.COMMAND_IN,
                                               ring_capacity=qos.COMMAND_RING_CAPACITY)
        c.wrench_sub = self.create_subscription(WrenchStamped, "~/external_wrench", self._on_wrench, qos.STATE)
        c.joint_pub = self.create_lifecycle_publisher(JointState, "joint_states", qos.STATE)
        c.applied_pub = self.create_lifecycle_publisher(WrenchStamped, "~/applied_wrench", qos.STATE)
        templates = message_templates(model)
        c.joint_raw, c.applied_raw = templates["joint"], templates["applied"]
        c.joint_out, c.applied_out = RawPublisher(c.joint_pub, c.joint_raw), RawPublisher(c.applied_pub, c.applied_raw)
        # compile (or load) the command parser now
        parse_float64_array(message_view(serialize_message(Float64MultiArray(data=[0.0]))), c.received)
        self.get_logger().info(f"robot {model.name!r} with {len(c.robot.schedule)} scheduled wrenches; "
                               f"commands on {values['command_topic']}")

    def _closed_chain(self, values, model):
        """The mapping of a closed-chain simulation; its commands reach the active joints only."""
        if values["backend"] != "builtin":
            raise ValueError("parameter backend: a closed chain (mapping.name) is simulated by the builtin backend")
        mapping = node_mapping(self, model, values["mapping.name"])
        passive = set(values["joints"]) & set(mapping.passive_joints)
        if passive:
            raise ValueError(f"parameter joints: the closed chain is actuated at {', '.join(mapping.active_joints)}; "
                             f"{', '.join(sorted(passive))} are passive")
        return mapping

    def _destroy_entities(self):
        c, self._configured = self._configured, None
        if c is None:
            return
        for name in ("joint_pub", "applied_pub"):
            if hasattr(c, name):
                self.destroy_lifecycle_publisher(getattr(c, name))
        if hasattr(c, "command_sub"):
            c.command_sub.destroy(self)
        if hasattr(c, "wrench_sub"):
            self.destroy_subscription(c.wrench_sub)

    def _on_set_parameters(self, changes):
        reason = params.refusal(PARAMETERS, changes, self.state)
        if reason is None:
            try:
                values = params.merged(self, PARAMETERS, changes)
                self._check(values)
                if self._configured is not None:
                    self._configured.robot.set_timeout(values["command_timeout"], values["command_timeout_action"])
            except ValueError as error:
                reason = str(error)
        return params.result(reason)

    def _on_wrench(self, msg):
        """~/external_wrench: held until the next message; a zero wrench removes it."""
        c = self._configured
        w = msg.wrench
        wrench = np.array([w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z])
        try:
            c.model.frame_id(msg.header.frame_id)
            if not np.isfinite(wrench).all():
                raise ValueError("non-finite wrench")
            excess = wrench_excess(wrench, c.max_force, c.max_torque)
            if excess is not None:
                raise ValueError(excess)
        except ValueError as error:
            c.rejected_wrenches += 1
            self.get_logger().warning(f"~/external_wrench rejected: {error}", throttle_duration_sec=1.0)
            return
        c.robot.set_wrench(msg.header.frame_id, wrench)

    # ---------------------------------------------------------------- the loop
    def _tick(self, now):
        c = self._configured
        self._take_command(now)
        self._publish(*c.robot.tick(now, c.clock_ns))

    def _take_command(self, now):
        """The newest valid command of the backlog to the robot; the invalid ones newer than it are
        counted, older ones are superseded unread."""
        c = self._configured
        for raw in reversed(c.command_sub.take_all_raw()):
            if parse_float64_array(message_view(raw), c.received) == c.received.shape[0]:
                c.robot.take_command(c.received, now)
                return
            c.rejected_commands += 1

    def _publish(self, stamp, applied):
        c = self._configured
        m = c.joint_raw
        m.set_stamp(stamp)
        m.views["position"][:] = c.sim.q
        m.views["velocity"][:] = c.sim.v
        m.views["effort"][:] = c.sim.effort
        if c.noise is not None:      # measurement noise: what is published, never the simulated state
            for field, std in zip(("position", "velocity", "effort"), c.noise_std):
                if std > 0.0:
                    c.noise.standard_normal(out=c.noise_sample)
                    c.noise_sample *= std
                    m.views[field][:] += c.noise_sample
        c.joint_out.publish()
        a = c.applied_raw
        a.set_stamp(stamp)
        w = c.zero6 if applied is None else applied[1]
        a.views["torque"][:] = w[:3]
        a.views["force"][:] = w[3:]
        c.applied_out.publish()

    def _on_loop_error(self, error):
        self.get_logger().error(f"simulation stopped by an error: {error!r}")
        self._publish_diagnostics()

    def _publish_diagnostics(self):
        status = DiagnosticStatus(name=f"{self.get_name()}: simulation", hardware_id="")
        c = self._configured
        values = {"state": self.state}
        level, message = DiagnosticStatus.OK, self.state
        robot = None if c is None else c.robot
        if robot is not None and self.state != "configuring":     # a configure builds c meanwhile
            status.hardware_id = c.model.name
            values.update({"backend": c.backend, "rejected commands": c.rejected_commands,
                           "clamped commands": robot.clamped_commands, "rejected wrenches": c.rejected_wrenches,
                           "brake": "engaged" if robot.braked else "released",
                           "brake engagements": robot.brake_engagements,
                           "simulated time [s]": f"{robot.step * c.sim.dt:.3f}"})
        if self.state == "active" and self.loop is not None:
            s = self.loop.stats.summary()
            values.update({"period p99 [ms]": f"{s['period_p99'] * 1e3:.3f}",
                           "deadline misses": s["deadline_misses"], "slips": s["slips"]})
            if self.loop.error is not None:
                level, message = DiagnosticStatus.ERROR, f"simulation stopped: {self.loop.error!r}"
            elif robot.diverged is not None:
                level, message = DiagnosticStatus.ERROR, robot.diverged
            elif robot.waiting:
                message = "waiting for the first command"
            elif robot.timed_out:
                level, message = DiagnosticStatus.WARN, ("no command: brakes engaged" if robot.braked else
                                                         "no command: zero effort")
            else:
                message = "running"
            if level == DiagnosticStatus.ERROR:
                values["fatal"] = "true"      # dyn-control bringup exits 3
        self._send_diagnostics(status, level, message, values)


class _Configured:
    """Everything a configured simulator owns (a fresh one per configure)."""
    rejected_commands = 0
    rejected_wrenches = 0
    mapping = None
    robot = None            # simulation.simulated_robot.SimulatedRobot, once built
    zero6 = np.zeros(6)
    noise = None


def main(args=None):
    spin(SimulatorNode, args)


if __name__ == "__main__":
    main()
