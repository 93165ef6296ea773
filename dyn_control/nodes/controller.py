"""dyn_controller: computed-torque control with a momentum observer of external wrenches and
online inertial-parameter gradients, as an rclpy LifecycleNode.

    ros2 run dyn_control controller --ros-args --params-file config/controller.yaml

configure: builds the model and the tick (control/tick.py: every buffer, one compiled kernel) and
runs that kernel once on the loop's own buffers (warm-up), so the first tick runs compiled code.
activate: starts the loop thread (timing.RealtimeLoop) at rate_hz.

A tick is constant-time: it takes the queued /joint_states serialized (qos.py), parses the newest
valid one only (wire.py), sets the flags of the tick kernel (a new sample, its stamp difference as
dt, safe mode from the watchdog) and calls it once, then publishes the command as bytes. The
every-N-ticks messages (~/desired, ~/external_torque with ~/wrench_estimate, the gradients) fall
on different ticks. The watchdog runs from the arrival of the newest valid sample.
A closed chain (mapping.name) runs the same way on control/closed_chain_tick.py's compiled tick
(computed torque, observer, force estimate and gradient in the actuated coordinates).
Parameters, topics and safety rules: README.md, "ROS 2 nodes".
"""
import math
import sys
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..control import tick as T
from ..control.closed_chain_tick import S_CLOSURE_FAILURES, ClosedChainTick
from ..control.adaptation import InertialAdaptation
from ..control.computed_torque import SAFE_MODES
from ..control.trajectory import Trajectory, from_message
from . import params, preload, qos
from .closed_chain import PARAMETER_PREFIX, node_mapping
from .inputs import ACCEPTED, JointStateReader, reference_from_point, stamp_ns
from .lifecycle import LoopNode, spin
from .params import Param
from .rcl_io import RawPublisher
from .robot import (check_forward_controller_joints, joint_indices, load_robot,
                    parameter_files, per_joint)
from .timing import RealtimeLoop, default_cpu
from .wire import RawMessage, markers

REFERENCE_TYPES = ("hold", "sine")
GRAVITY_MODES = ("controller", "robot")
MAX_RATE_HZ = 10000.0

PARAMETERS = (
    Param("robot_description", "", "string", "configure", "URDF XML of the robot (first choice)"),
    Param("urdf_path", "", "string", "configure",
          "URDF file when robot_description is empty (package://PKG/... allowed)"),
    Param("joints", [], "strings", "configure",
          "controlled joints, the order of the command array (empty: every movable joint)"),
    Param("command_topic", "/effort_controller/commands", "string", "configure",
          "std_msgs/Float64MultiArray of efforts in `joints` order"),
    Param("joint_states_topic", "/joint_states", "string", "configure",
          "sensor_msgs/JointState of the robot (e.g. /franka/joint_states)"),
    Param("mapping.name", "", "string", "configure",
          "closed-chain mapping plugin (dc.load_mapping) of an equivalent-tree URDF; its keyword "
          "arguments as mapping.parameters.* (empty: a tree robot)"),
    Param("rate_hz", 1000.0, "number", "activate", "control loop rate [Hz]", 1.0, MAX_RATE_HZ),
    Param("gains.kp", 400.0, "numbers", "live", "position gain [1/s^2], one number or one per joint"),
    Param("gains.kd", 40.0, "numbers", "live", "velocity gain [1/s], one number or one per joint"),
    Param("reference.type", "hold", "string", "activate",
          "built-in reference: hold | sine (a ~/reference message overrides it)"),
    Param("reference.position", [], "numbers", "activate",
          "hold position / sine centre [rad], one per joint (empty: the position at activation)"),
    Param("reference.amplitude", 0.1, "numbers", "activate", "sine amplitude [rad], one or one per joint"),
    Param("reference.frequency", 0.5, "number", "activate", "sine frequency [Hz]"),
    Param("estimator.frame", "", "string", "configure",
          "link whose origin the wrench estimate acts at (empty: the model's last frame, a serial arm's tip)"),
    Param("estimator.gain", 50.0, "number", "configure", "momentum observer gain K_O [1/s]"),
    Param("estimator.damping", 1e-3, "number", "configure",
          "damping of the Jacobian pseudo-inverse that maps torques to the wrench"),
    Param("estimator.compensation", False, "bool", "live",
          "subtract the estimated external torque from the command"),
    Param("gradient.period", 100, "integer", "activate", "ticks between ~/parameter_gradient messages (0: off)",
          0, 1000000),
    Param("gradient.window", 200, "integer", "configure", "samples in the gradient's sliding window", 1, 100000),
    Param("gradient.cutoff_hz", 20.0, "number", "configure", "low-pass cutoff of the acceleration estimate [Hz]"),
    Param("gradient.twist", True, "bool", "configure",
          "also publish ~/twist_gradient, the joint-twist block (about 25 us per joint state, 7 joints)"),
    Param("adaptation.enabled", False, "bool", "configure",
          "adapt the inertial parameters online (a bounded gradient step every gradient.period ticks)"),
    Param("adaptation.step_size", 2e-7, "number", "configure", "gradient step size in log-Cholesky coordinates"),
    Param("adaptation.max_step", 0.01, "number", "configure", "largest step norm per body and update"),
    Param("watchdog_timeout", 0.05, "number", "live", "no valid joint state for this long [s] -> safe mode",
          0.001, 60.0),
    Param("safe_mode", "gravity", "string", "live", "safe-mode torque: gravity (g(q) - damping v) | zero"),
    Param("safe_mode_damping", 2.0, "numbers", "live", "safe-mode damping [N m s/rad], one or one per joint"),
    Param("state_publish_period", 10, "integer", "activate",
          "ticks between ~/desired, ~/external_torque and ~/wrench_estimate messages", 1, 1000000),
    Param("gravity_compensation", "controller", "string", "configure",
          "who compensates gravity: controller (g(q) in every command) | robot (the robot adds g(q) itself, "
          "as Franka and UR do: commands leave it out)"),
    Param("realtime.priority", 50, "integer", "activate",
          "SCHED_FIFO priority of the loop thread (0: off); best effort, a warning when refused", 0, 99),
    Param("realtime.cpu", -1, "integer", "activate",
          "CPU the loop thread is pinned to (-1: the last CPU when the process may use 2 or more, else any, "
          "with the node's other threads moved off it; -2: no pinning)", -2, 4096),
    Param("realtime.spin_us", 200.0, "number", "activate",
          "the loop thread spins (instead of sleeping) this long before each deadline [us]", 0.0, 100000.0),
    Param("autostart", False, "bool", "configure", "configure and activate right after start-up"),
)


def check_values(values, njoints=None):
    """Range checks beyond the types; njoints (when known) checks per-joint list lengths."""
    def positive(name):
        if not values[name] > 0.0:
            raise ValueError(f"parameter {name}: must be > 0, got {values[name]!r}")

    def non_negative(name):
        if any(x < 0.0 for x in np.atleast_1d(values[name])):
            raise ValueError(f"parameter {name}: must be >= 0, got {values[name]!r}")

    def choice(name, options):
        if values[name] not in options:
            raise ValueError(f"parameter {name}: must be one of {', '.join(options)}, got {values[name]!r}")

    for name in ("gains.kp", "gains.kd", "safe_mode_damping"):
        if name in values:
            non_negative(name)
            if not values[name]:
                raise ValueError(f"parameter {name}: needs one number or one per joint")
    checks = {

        "estimator.gain": positive,
        "estimator.damping": non_negative,
        "gradient.cutoff_hz": positive,
        "adaptation.step_size": positive,
        "adaptation.max_step": positive,
        "reference.frequency": non_negative,
        "safe_mode": lambda n: choice(n, SAFE_MODES),
        "reference.type": lambda n: choice(n, REFERENCE_TYPES),
        "gravity_compensation": lambda n: choice(n, GRAVITY_MODES),
    }
    for name, check in checks.items():
        if name in values:
            check(name)
    params.check_ranges(PARAMETERS, values)
    if njoints is not None:
        for name in ("gains.kp", "gains.kd", "safe_mode_damping", "reference.amplitude",
                     "reference.position"):
            if name in values:
                per_joint(name, values[name], njoints, default=0.0)


class ControllerNode(LoopNode):
    """The dyn_controller lifecycle node (see the module docstring)."""

    KERNELS = staticmethod(preload.controller_kernels)

    def __init__(self, node_name="dyn_controller", **kwargs):
        super().__init__(node_name, PARAMETERS, PARAMETER_PREFIX, **kwargs)
        self.warmup_progress = ""            # "compiling k/n: <kernel>", for status displays
        self.compile_time = None             # [s] of the last warm-up

    # ---------------------------------------------------------------- lifecycle
    def on_configure(self, state):
        self.state = "configuring"
        try:
            values = params.read(self, PARAMETERS, params.PHASES)
            check_values(values)
            self._build(values)
            self._warm_up()
        except Exception as error:  # noqa: BLE001 - any failure fails the transition, the node lives
            self.get_logger().error(f"configure failed: {error}")
            self._destroy_entities()
            self.state = "unconfigured"
            return TransitionCallbackReturn.FAILURE
        self.state = "inactive"
        return super().on_configure(state)

    def on_activate(self, state):
        c = self._configured
        try:
            values = params.read(self, PARAMETERS, ("activate", "live"))
            check_values(values, len(c.controlled))
            self._apply_live(values)
            self._start(values)
        except Exception as error:  # noqa: BLE001
            self.get_logger().error(f"activate failed: {error}")
            return TransitionCallbackReturn.FAILURE
        result = super().on_activate(state)
        self.state = "active"
        self.loop.start()
        self.get_logger().info(f"control loop running at {1.0 / self.loop.period:g} Hz"
                               + (f" on CPU {self.loop.cpu}" if self.loop.cpu >= 0 else ""))
        return result

    def on_deactivate(self, state):
        self._stop_loop()
        self._publish_safe_command()
        self.state = "inactive"
        return super().on_deactivate(state)

    # ---------------------------------------------------------------- configure
    def _build(self, values):
        model, _ = load_robot(values["robot_description"], values["urdf_path"])
        for message in model.warnings:
            self.get_logger().warning(f"URDF: {message}")
        mapping, joints = None, values["joints"]
        if values["mapping.name"]:
            if values["gradient.twist"]:
                raise ValueError("parameter gradient.twist: the joint-twist gradient is not available with a "
                                 "closed-chain mapping (it needs the loop closure's derivative with respect to "
                                 "the joint twists); set gradient.twist: false")
            if values["gravity_compensation"] == "robot":
                raise ValueError("parameter gravity_compensation: robot is not available with a closed-chain mapping")
            mapping = node_mapping(self, model, values["mapping.name"])
            joints = joints or list(mapping.active_joints)
            if sorted(joints) != sorted(mapping.active_joints):
                raise ValueError(f"parameter joints: a closed chain is controlled at its active joints "
                                 f"{', '.join(mapping.active_joints)} (in any order), got {', '.join(joints)}")
        controlled = joint_indices(model, joints)
        check_forward_controller_joints(values["command_topic"], [model.actuated_joints[i] for i in controlled],
                                        parameter_files(sys.argv))
        frame = values["estimator.frame"] or (model.frame_names[-1] if mapping is None else
                                              _closed_chain_default_frame(model, mapping))
        model.frame_id(frame)    # ValueError naming an unknown frame
        nv = model.nv
        n = len(controlled)
        check_values(values, n)
        c = _Configured()
        self._configured = c
        c.model, c.controlled, c.frame, c.mapping = model, controlled, frame, mapping
        c.names = list(model.actuated_joints)
        c.controlled_names = [c.names[i] for i in controlled]
        c.uncontrolled = np.setdiff1d(np.arange(nv), controlled)
        c.twist_enabled = values["gradient.twist"] and mapping is None
        if mapping is None:
            c.tick_kernel = T.ControllerTick(model, controlled, frame, values["gradient.window"])
        else:
            c.tick_kernel = ClosedChainTick(model, mapping, controlled, frame, values["gradient.window"])
        f = c.tick_kernel.f
        c.s = f.s
        c.s[T.S_GRAVITY_BY_ROBOT] = values["gravity_compensation"] == "robot"
        c.s[T.S_WRENCH_DAMPING] = values["estimator.damping"]
        c.s[T.S_CUTOFF_HZ] = values["gradient.cutoff_hz"]
        f.observer_gain[:] = values["estimator.gain"]
        # the loop's arrays, (nv,) in the model's coordinate order, live in the tick's buffers
        c.q, c.v, c.effort, c.tau, c.tau_ext = f.q, f.v, f.effort, f.tau, f.tau_ext
        c.q_d, c.v_d, c.a_d, c.kp, c.kd, c.damping = f.q_d, f.v_d, f.a_d, f.kp, f.kd, f.damping
        c.centre, c.amplitude = f.centre, f.amplitude
        if values["adaptation.enabled"]:
            c.adaptation = InertialAdaptation(model, values["adaptation.step_size"], values["adaptation.max_step"])
        c.reader = JointStateReader(c.names, c.q, c.v, c.effort)
        # publishers and subscriptions
        c.command_pub = self.create_lifecycle_publisher(Float64MultiArray, values["command_topic"], qos.COMMAND)
        c.desired_pub = self.create_lifecycle_publisher(JointState, "~/desired", qos.STATE)
        c.external_pub = self.create_lifecycle_publisher(JointState, "~/external_torque", qos.STATE)
        c.wrench_pub = self.create_lifecycle_publisher(WrenchStamped, "~/wrench_estimate", qos.STATE)
        c.gradient_pub = self.create_lifecycle_publisher(Float64MultiArray, "~/parameter_gradient", qos.STATE)
        c.labels_pub = self.create_publisher(String, "~/parameter_labels", qos.LATCHED)
        c.twist_pub = self.create_lifecycle_publisher(Float64MultiArray, "~/twist_gradient", qos.STATE)
        c.twist_labels_pub = self.create_publisher(String, "~/twist_labels", qos.LATCHED)
        c.estimate_pub = self.create_lifecycle_publisher(Float64MultiArray, "~/inertial_parameters", qos.STATE)
        c.joint_states = qos.PolledSubscription(self, JointState, values["joint_states_topic"], qos.SENSOR_DATA,
                                                ring_capacity=qos.RING_CAPACITY)
        c.reference_sub = self.create_subscription(JointTrajectoryPoint, "~/reference", self._on_reference,
                                                   qos.STATE)
        c.trajectory_sub = self.create_subscription(JointTrajectory, "~/joint_trajectory", self._on_trajectory,
                                                    qos.STATE)
        self._build_messages()
        self._apply_live(values)
        self.get_logger().info(
            f"robot {model.name!r}: {nv} joints, controlling {', '.join(c.controlled_names)}"
            + (f" (closed chain: {values['mapping.name']})" if mapping is not None else "") + "; "
            f"command on {c.command_pub.topic_name}; wrench estimate at {frame!r} in {model.root_name!r} axes; "
            f"gravity compensated by the {values['gravity_compensation']}")

    def _build_messages(self):
        """Serialized templates of every message the loop publishes (wire.RawMessage), and the labels."""
        c = self._configured
        n, nv, nb = len(c.controlled), c.model.nv, c.model.nbodies
        command = Float64MultiArray(data=markers(n))
        command.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
        c.command_raw = RawMessage(command, {"data": command.data})
        desired = JointState(name=c.controlled_names, position=markers(n), velocity=markers(n, 100.0),
                             effort=markers(n, 200.0))
        c.desired_raw = RawMessage(desired, {"position": desired.position, "velocity": desired.velocity,
                                             "effort": desired.effort})
        external = JointState(name=c.names, effort=markers(nv))
        c.external_raw = RawMessage(external, {"effort": external.effort})
        wrench = WrenchStamped()
        wrench.header.frame_id = c.model.root_name
        w = markers(6)
        wrench.wrench.force.x, wrench.wrench.force.y, wrench.wrench.force.z = w[:3]
        wrench.wrench.torque.x, wrench.wrench.torque.y, wrench.wrench.torque.z = w[3:]
        c.wrench_raw = RawMessage(wrench, {"force": w[:3], "torque": w[3:]})
        bodies = [MultiArrayDimension(label="bodies", size=nb, stride=10 * nb),
                  MultiArrayDimension(label="parameters", size=10, stride=10)]
        gradient = Float64MultiArray(data=markers(10 * nb))
        gradient.layout.dim = bodies
        c.gradient_raw = RawMessage(gradient, {"data": gradient.data})
        c.estimate_raw = RawMessage(gradient, {"data": gradient.data})
        twist = Float64MultiArray(data=markers(6 * nb))
        twist.layout.dim = [MultiArrayDimension(label="joints", size=nb, stride=6 * nb),
                            MultiArrayDimension(label="components", size=6, stride=6)]
        c.twist_raw = RawMessage(twist, {"data": twist.data})
        for name in ("command", "desired", "external", "wrench", "gradient", "estimate", "twist"):
            setattr(c, f"{name}_out", RawPublisher(getattr(c, f"{name}_pub"), getattr(c, f"{name}_raw")))
        c.labels_pub.publish(String(data="\n".join(c.tick_kernel.labels)))
        if c.mapping is None:
            if c.twist_enabled:
                c.twist_labels_pub.publish(String(data="\n".join(c.tick_kernel.twist_labels)))

    def _warm_up(self):
        """Run the loop's compiled calls once on the loop's own buffers (the tick kernel with every
        branch on, the joint-state parser), so Numba compiles (or loads from its cache) now."""
        c = self._configured
        start = time.perf_counter()
        self.warmup_progress = "compiling 1/2: joint-state parser"
        sample = JointState(name=c.names, position=c.model.neutral_configuration().tolist(),
                            velocity=[0.1] * c.model.nv, effort=[0.2] * c.model.nv)
        c.reader.read(serialize_message(sample), 1)
        c.reader.forget()
        self.warmup_progress = "compiling 2/2: the tick"
        c.tick_kernel.warm_up()
        c.tau[:] = 0.0
        self.compile_time = time.perf_counter() - start
        self.warmup_progress = f"compiled in {self.compile_time:.1f} s"
        self.get_logger().info(f"loop kernels compiled (or loaded from the Numba cache) in "
                               f"{self.compile_time:.2f} s")

    def _destroy_entities(self):
        c, self._configured = self._configured, None
        if c is None:
            return
        for name in ("command_pub", "desired_pub", "external_pub", "wrench_pub", "gradient_pub", "twist_pub",
                     "estimate_pub"):
            if hasattr(c, name):
                self.destroy_lifecycle_publisher(getattr(c, name))
        for name in ("labels_pub", "twist_labels_pub"):
            if hasattr(c, name):
                self.destroy_publisher(getattr(c, name))
        if hasattr(c, "joint_states"):
            c.joint_states.destroy(self)
        for name in ("reference_sub", "trajectory_sub"):
            if hasattr(c, name):
                self.destroy_subscription(getattr(c, name))

    # ---------------------------------------------------------------- parameters
    def _apply_live(self, values):
        """Gains, safety settings and compensation, into the configured objects."""
        c = self._configured
        n = len(c.controlled)
        c.kp[c.controlled] = per_joint("gains.kp", values["gains.kp"], n)
        c.kd[c.controlled] = per_joint("gains.kd", values["gains.kd"], n)
        c.damping[c.controlled] = per_joint("safe_mode_damping", values["safe_mode_damping"], n)
        c.safe_mode = values["safe_mode"]
        c.watchdog_timeout = values["watchdog_timeout"]
        c.compensation = values["estimator.compensation"]
        c.s[T.S_SAFE_ZERO] = c.safe_mode == "zero"
        c.s[T.S_COMPENSATION] = c.compensation

    def _on_set_parameters(self, changes):
        reason = params.refusal(PARAMETERS, changes, self.state)
        if reason is None:
            try:
                values = params.merged(self, PARAMETERS, changes)
                # while configuring (a set may run beside it) the configuration is not complete: the live
                # values are read on activate
                c = self._configured if self.state != "configuring" else None
                check_values(values, None if c is None else len(c.controlled))
                if c is not None:
                    self._apply_live(values)
            except ValueError as error:
                reason = str(error)
        if reason is not None:
            self.get_logger().warning(f"parameter change refused: {reason}")
        return params.result(reason)

    def _on_reference(self, msg):
        c = self._configured
        try:
            c.reference_point = reference_from_point(msg, len(c.controlled))
            c.trajectory = None
        except ValueError as error:
            c.rejected_references += 1
            c.last_rejection = str(error)

    def _on_trajectory(self, msg):
        """~/joint_trajectory: the reference from now on (control/trajectory.py); a refused one is
        logged and counted, and the current motion goes on."""
        c = self._configured
        try:
            if self.state != "active" or c.reader.stamp is None:
                raise ValueError("the controller is not active with joint states yet")
            now = (c.reader.stamp - c.start_stamp) * 1e-9

            def reference_time(stamp):    # zero: now; a stamp in the past counts as now
                ns = stamp_ns(stamp)
                return now if ns == 0 else max(now, (ns - c.start_stamp) * 1e-9)
            start, indices, times, positions, velocities, accelerations = from_message(
                msg, c.controlled_names, reference_time)
            old = c.trajectory
            start_state = (c.q_d.copy(), c.v_d.copy(), c.a_d.copy())
            if old is not None:
                old.sample(start, *start_state)
            new = Trajectory.through(start, start_state, c.controlled[indices], times, positions, velocities,
                                     accelerations)
            if old is not None and now < start < old.knots[-1]:
                new = old.then(new)
        except ValueError as error:
            c.rejected_trajectories += 1
            c.last_rejection = f"~/joint_trajectory: {error}"
            self.get_logger().warning(f"~/joint_trajectory refused: {error}")
            return
        c.reference_point = None
        c.trajectory = new

    # ---------------------------------------------------------------- activate
    def _start(self, values):
        c = self._configured
        n = len(c.controlled)
        c.reader.forget()
        c.reference_sine = values["reference.type"] == "sine"
        c.reference_position = values["reference.position"]
        c.amplitude[:] = 0.0
        if c.reference_sine:
            c.amplitude[c.controlled] = per_joint("reference.amplitude", values["reference.amplitude"], n)
        c.omega = 2.0 * math.pi * values["reference.frequency"]
        c.reference_point = None
        c.applied_point = None
        c.trajectory = None
        c.start_stamp = None
        c.last_sample_time = None
        c.safe = False
        c.tick = 0
        c.publish_period = values["state_publish_period"]
        c.gradient_period = values["gradient.period"]
        c.error_sq = 0.0
        c.error_count = 0
        s = c.s
        s[T.S_OMEGA] = c.omega
        s[T.S_POINT] = 0.0
        s[T.S_ESTIMATE] = 1.0
        s[T.S_GRADIENTS] = 1.0 if c.gradient_period else 0.0
        s[T.S_TWIST] = 1.0 if c.gradient_period and c.twist_enabled else 0.0
        c.tick_kernel.reset()
        cpu = values["realtime.cpu"]
        self.loop = RealtimeLoop("dyn_controller loop", 1.0 / values["rate_hz"], self._tick,
                                 priority=values["realtime.priority"], cpu=default_cpu() if cpu == -1 else cpu,
                                 exclusive=cpu == -1, spin=values["realtime.spin_us"] * 1e-6,
                                 warn=self.get_logger().warning,
                                 on_error=self._on_loop_error)

    # ---------------------------------------------------------------- the loop
    def _tick(self, now):
        c = self._configured
        c.new_sample = self._take_joint_state(now)
        if c.new_sample:
            self._on_sample(now)
        if c.reader.stamp is None:
            return      # no joint state yet: nothing to command
        stale = now - c.last_sample_time > c.watchdog_timeout
        if stale != c.safe:
            c.safe = stale
            if stale:
                c.watchdog_trips += 1
                self.get_logger().error(f"safe mode ({c.safe_mode}): no valid joint state for "
                                        f"{now - c.last_sample_time:.3f} s")
            else:
                self.get_logger().info("joint states are back: leaving safe mode")
        t = (c.reader.stamp - c.start_stamp) * 1e-9
        k = c.tick
        publish_phase = k % c.publish_period
        gradient_phase = k % c.gradient_period if c.gradient_period else -1
        s = c.s     # the same flags for a tree's tick and a closed chain's (no twist gradient there)
        trajectory = c.trajectory
        if trajectory is not None:
            trajectory.sample(t, c.q_d, c.v_d, c.a_d)
            s[T.S_POINT] = 1.0
        elif c.reference_point is not c.applied_point:
            self._apply_point()
        s[T.S_T] = t
        s[T.S_SAFE] = c.safe
        s[T.S_WANT_WRENCH] = publish_phase == c.publish_period // 2
        s[T.S_WANT_GRADIENT] = gradient_phase == 1 % c.gradient_period and s[T.S_COUNT] > 0
        s[T.S_WANT_TWIST] = gradient_phase == 3 % c.gradient_period and c.twist_enabled and s[T.S_COUNT] > 0
        c.tick_kernel.tick()
        s[T.S_NEW_SAMPLE] = 0.0
        s[T.S_RESET] = 0.0
        c.command_raw.views["data"][:] = c.tick_kernel.f.command
        c.command_out.publish()
        c.tick += 1
        # the every-N-ticks messages, each on a tick of its own
        if publish_phase == 0:
            self._publish_desired()
        elif publish_phase == c.publish_period // 2:
            self._publish_estimates()
        if s[T.S_WANT_GRADIENT]:
            self._publish_gradient()
        if s[T.S_WANT_TWIST]:
            c.twist_raw.views["data"][:] = c.tick_kernel.f.twist_gradient
            c.twist_out.publish()

    def _take_joint_state(self, now):
        """Take every queued joint state and parse them newest first until one is accepted: the
        newest valid sample, whatever the backlog. True when a new sample was accepted."""
        c = self._configured
        messages = c.joint_states.take_all_raw()
        now_ns = time.time_ns()
        c.reader.new_time_base = c.safe    # stamps that jumped back count once the watchdog tripped
        for raw in reversed(messages):
            if c.reader.read(raw, now_ns) == ACCEPTED:
                return True
        return False

    def _on_sample(self, now):
        """A new accepted joint state: start the reference clock, flag the estimators' step (or
        their reset after a gap)."""
        c = self._configured
        reader = c.reader
        if c.start_stamp is None:
            c.start_stamp = reader.stamp
            c.centre[:] = reader.q
            if c.reference_position:
                c.centre[c.controlled] = per_joint("reference.position", c.reference_position, len(c.controlled))
            reset, dt = True, 0.0
        else:
            dt = (reader.stamp - c.previous_stamp) * 1e-9
            reset = not 0.0 < dt <= c.watchdog_timeout   # after a gap the momentum balance starts over
            c.estimator_restarts += reset
            if dt <= 0.0:
                # a new time base (a simulator reset): the reference goes on from where it was
                c.start_stamp = reader.stamp - (c.previous_stamp - c.start_stamp)
                self.get_logger().warning(f"joint-state stamps jumped back by {-dt:.3f} s: new time base, "
                                          "the reference continues from where it was")
        c.s[T.S_NEW_SAMPLE] = 1.0
        c.s[T.S_RESET] = reset
        c.s[T.S_DT] = dt
        c.s[T.S_HAS_EFFORT] = reader.has_effort
        c.previous_stamp = reader.stamp
        c.last_sample_time = now

    def _apply_point(self):
        """A new ~/reference point: the reference of the controlled joints from now on."""
        c = self._configured
        point = c.applied_point = c.reference_point
        c.q_d[c.controlled], c.v_d[c.controlled], c.a_d[c.controlled] = point
        c.s[T.S_POINT] = 1.0

    def _publish_desired(self):
        c = self._configured
        m = c.desired_raw
        m.set_stamp(c.reader.stamp)
        m.views["position"][:] = c.q_d[c.controlled]
        m.views["velocity"][:] = c.v_d[c.controlled]
        m.views["effort"][:] = c.tau[c.controlled]
        c.desired_out.publish()

    def _publish_estimates(self):
        """~/external_torque and ~/wrench_estimate (computed by this tick's kernel call)."""
        c = self._configured
        stamp = c.reader.stamp
        m = c.external_raw
        m.set_stamp(stamp)
        m.views["effort"][:] = c.tau_ext
        c.external_out.publish()
        if c.s[T.S_WRENCH_OK]:
            w = c.tick_kernel.f.wrench
            m = c.wrench_raw
            m.set_stamp(stamp)
            m.views["torque"][:] = w[:3]
            m.views["force"][:] = w[3:]
            c.wrench_out.publish()

    def _publish_gradient(self):
        """~/parameter_gradient and, when adapting, one adaptation step (on a full window) after
        which the tick uses the new estimate, published on ~/inertial_parameters."""
        c = self._configured
        gradient = c.tick_kernel.f.gradient
        if not np.isfinite(gradient).all():
            c.tick_kernel.clear_window()
            return
        c.gradient_raw.views["data"][:] = gradient
        c.gradient_out.publish()
        if c.adaptation is not None and c.s[T.S_COUNT] == c.tick_kernel.window:
            c.adaptation.update(gradient)
            old = c.tick_kernel.model
            c.tick_kernel.set_model(c.adaptation.model())
            c.tick_kernel.shift_momentum(old)
            c.estimate_raw.views["data"][:] = c.adaptation.phi
            c.estimate_out.publish()

    # ---------------------------------------------------------------- stopping
    def _publish_safe_command(self):
        """One safe-mode command at the last joint state (on deactivate, shutdown, a loop error)."""
        c = self._configured
        if c is None or c.reader.stamp is None:
            return
        s = c.s
        s[T.S_SAFE], s[T.S_ESTIMATE], s[T.S_NEW_SAMPLE], s[T.S_RESET] = 1.0, 0.0, 0.0, 0.0
        s[T.S_WANT_WRENCH] = s[T.S_WANT_GRADIENT] = s[T.S_WANT_TWIST] = 0.0
        c.tick_kernel.tick()
        c.command_raw.views["data"][:] = c.tick_kernel.f.command
        c.command_out.publish()

    def _on_loop_error(self, error):
        self.get_logger().error(f"control loop stopped by an error: {error!r}; publishing the safe command")
        self._publish_safe_command()

    # ---------------------------------------------------------------- diagnostics
    def counters(self):
        """The rejection, fallback and safety counters of /diagnostics, by their keys there."""
        c = self._configured
        values = {"rejected joint states": c.reader.rejected, "rejected references": c.rejected_references,
                  "rejected trajectories": c.rejected_trajectories,
                  "last rejected joint state": c.reader.last_rejection,
                  "last rejected reference or trajectory": c.last_rejection,
                  "watchdog trips": c.watchdog_trips}
        values["non-finite commands replaced"] = int(c.s[T.S_NON_FINITE])
        values["estimator resets"] = int(c.s[T.S_ESTIMATOR_RESETS])
        values["estimator restarts after gaps"] = c.estimator_restarts
        if c.mapping is not None:
            values["loop-closure failures"] = int(c.s[S_CLOSURE_FAILURES])
        if c.adaptation is not None:
            values["adaptation steps"] = c.adaptation.steps
        return values

    def _publish_diagnostics(self):
        status = DiagnosticStatus(name=f"{self.get_name()}: control loop", hardware_id="")
        c = self._configured
        values = {"state": self.state}
        level, message = DiagnosticStatus.OK, self.state
        if c is not None:
            status.hardware_id = c.model.name
            values.update(self.counters())
        if self.compile_time is not None:
            values["kernel compile time [s]"] = f"{self.compile_time:.3f}"
        if self.state == "active" and self.loop is not None:
            s = self.loop.stats.summary()
            values.update({
                "rate [Hz]": f"{1.0 / self.loop.period:g}",
                "period p50 [ms]": f"{s['period_p50'] * 1e3:.3f}",
                "period p99 [ms]": f"{s['period_p99'] * 1e3:.3f}",
                "period max [ms]": f"{s['period_max'] * 1e3:.3f}",
                "compute p50 [ms]": f"{s['compute_p50'] * 1e3:.3f}",
                "compute p99 [ms]": f"{s['compute_p99'] * 1e3:.3f}",
                "tick cpu p50 [ms]": f"{s['cpu_p50'] * 1e3:.3f}",
                "tick cpu p99 [ms]": f"{s['cpu_p99'] * 1e3:.3f}",
                "deadline misses": s["deadline_misses"],
                "ticks": s["ticks"],
                "safe mode": c.safe,
            })
            error_sq, error_count = c.s[T.S_ERROR_SQ], c.s[T.S_ERROR_COUNT]
            if error_count:
                values["tracking error rms [rad]"] = f"{math.sqrt(error_sq / error_count):.3e}"
                c.s[T.S_ERROR_SQ] = c.s[T.S_ERROR_COUNT] = 0.0
            if self.loop.error is not None:
                level, message = DiagnosticStatus.ERROR, f"loop stopped: {self.loop.error!r}"
            elif c.safe:
                level, message = DiagnosticStatus.ERROR, f"safe mode ({c.safe_mode}): joint states stale"
            elif c.reader.stamp is None:
                level, message = DiagnosticStatus.WARN, "waiting for /joint_states"
            else:
                message = "running"
        self._send_diagnostics(status, level, message, values)


class _Configured:
    """Everything a configured controller owns (a fresh one per configure)."""
    rejected_references = 0
    rejected_trajectories = 0
    trajectory = None
    last_rejection = ""
    watchdog_trips = 0
    estimator_restarts = 0
    reference_point = None
    safe = False
    new_sample = False
    adaptation = None


def _closed_chain_default_frame(model, mapping):
    """The estimator's frame of a closed chain without estimator.frame: the last frame on the body of
    the loop's frame A, where the branches meet (the five-bar: end_effector on link3)."""
    loop = mapping.loop_frames()
    if loop is None:
        return model.frame_names[-1]
    body = model.frame_body[model.frame_id(loop.frame_a)]
    return [name for name, b in zip(model.frame_names, model.frame_body) if b == body][-1]


def main(args=None):
    spin(ControllerNode, args)


if __name__ == "__main__":
    main()
