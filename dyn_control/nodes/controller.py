"""dyn_controller: computed-torque control with a momentum observer of external wrenches and
online inertial-parameter gradients, as an rclpy LifecycleNode.

    ros2 run dyn_control controller --ros-args --params-file config/controller.yaml

configure: builds the model, the control laws and every buffer, and runs each Numba kernel the
loop calls once (warm-up), so the first tick runs compiled code. activate: starts the loop thread
(timing.RealtimeLoop) at rate_hz. Each tick takes the newest /joint_states (polled, see qos.py),
evaluates the reference at the joint state's stamp, computes the torque and publishes it.
Parameters, topics and safety rules: README.md, "ROS 2 nodes".
"""
import math
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from rclpy.lifecycle import TransitionCallbackReturn
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String
from trajectory_msgs.msg import JointTrajectoryPoint

from ..control.adaptation import InertialAdaptation
from ..control.computed_torque import SAFE_MODES, ComputedTorque, clamp_effort
from ..control.momentum_observer import MomentumObserver, wrench_from_joint_torque
from ..control.parameter_gradient import AccelerationFilter, ParameterGradient
from . import params, qos
from .closed_chain import PARAMETER_PREFIX, node_mapping
from .inputs import ACCEPTED, JointStateReader, reference_from_point, set_stamp
from .lifecycle import LoopNode, spin
from .params import Param
from .robot import coordinate_effort_limits, joint_indices, load_robot, per_joint
from .timing import RealtimeLoop
from .twist_gradient import TwistGradient

REFERENCE_TYPES = ("hold", "sine")
MAX_RATE_HZ = 10000.0

PARAMETERS = (
    Param("robot_description", "", "string", "configure", "URDF XML of the robot (first choice)"),
    Param("urdf_path", "", "string", "configure",
          "URDF file when robot_description is empty (package://PKG/... allowed)"),
    Param("joints", [], "strings", "configure",
          "controlled joints, the order of the command array (empty: every movable joint)"),
    Param("command_topic", "/effort_controller/commands", "string", "configure",
          "std_msgs/Float64MultiArray of efforts in `joints` order"),
    Param("mapping.name", "", "string", "configure",
          "closed-chain mapping plugin (dc.load_mapping) of an equivalent-tree URDF; its keyword "
          "arguments as mapping.parameters.* (empty: a tree robot)"),
    Param("rate_hz", 1000.0, "number", "activate", "control loop rate [Hz]"),
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
    Param("gradient.period", 100, "integer", "activate", "ticks between ~/parameter_gradient messages (0: off)"),
    Param("gradient.window", 200, "integer", "configure", "samples in the gradient's sliding window"),
    Param("gradient.cutoff_hz", 20.0, "number", "configure", "low-pass cutoff of the acceleration estimate [Hz]"),
    Param("gradient.twist", True, "bool", "configure",
          "also publish ~/twist_gradient, the joint-twist block (about 25 us per joint state, 7 joints)"),
    Param("adaptation.enabled", False, "bool", "configure",
          "adapt the inertial parameters online (a bounded gradient step every gradient.period ticks)"),
    Param("adaptation.step_size", 2e-7, "number", "configure", "gradient step size in log-Cholesky coordinates"),
    Param("adaptation.max_step", 0.01, "number", "configure", "largest step norm per body and update"),
    Param("watchdog_timeout", 0.05, "number", "live", "no valid joint state for this long [s] -> safe mode"),
    Param("safe_mode", "gravity", "string", "live", "safe-mode torque: gravity (g(q) - damping v) | zero"),
    Param("safe_mode_damping", 2.0, "numbers", "live", "safe-mode damping [N m s/rad], one or one per joint"),
    Param("state_publish_period", 10, "integer", "activate",
          "ticks between ~/desired, ~/external_torque and ~/wrench_estimate messages"),
    Param("realtime.priority", 0, "integer", "activate", "SCHED_FIFO priority of the loop thread (0: off)"),
    Param("realtime.cpu", -1, "integer", "activate", "CPU the loop thread is pinned to (-1: any)"),
    Param("autostart", False, "bool", "configure", "configure and activate right after start-up"),
)


def check_values(values, njoints=None):
    """Range checks beyond the types; njoints (when known) checks per-joint list lengths."""
    def positive(name, upper=math.inf):
        if not 0.0 < values[name] <= upper:
            raise ValueError(f"parameter {name}: must be > 0 and <= {upper:g}, got {values[name]!r}")

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
        "rate_hz": lambda n: positive(n, MAX_RATE_HZ),
        "watchdog_timeout": positive,
        "estimator.gain": positive,
        "estimator.damping": non_negative,
        "gradient.cutoff_hz": positive,
        "adaptation.step_size": positive,
        "adaptation.max_step": positive,
        "reference.frequency": non_negative,
        "gradient.period": non_negative,
        "safe_mode": lambda n: choice(n, SAFE_MODES),
        "reference.type": lambda n: choice(n, REFERENCE_TYPES),
    }
    for name, check in checks.items():
        if name in values:
            check(name)
    for name, low, high in (("gradient.window", 1, 100000), ("state_publish_period", 1, 1000000),
                            ("realtime.priority", 0, 99), ("realtime.cpu", -1, 4096)):
        if name in values and not low <= values[name] <= high:
            raise ValueError(f"parameter {name}: must be in [{low}, {high}], got {values[name]!r}")
    if njoints is not None:
        for name in ("gains.kp", "gains.kd", "safe_mode_damping", "reference.amplitude",
                     "reference.position"):
            if name in values:
                per_joint(name, values[name], njoints, default=0.0)


class ControllerNode(LoopNode):
    """The dyn_controller lifecycle node (see the module docstring)."""

    def __init__(self, node_name="dyn_controller", **kwargs):
        super().__init__(node_name, PARAMETERS, PARAMETER_PREFIX, **kwargs)
        self.warmup_progress = ""            # "compiling k/n: <kernel>", for status displays
        self.compile_time = None             # [s] of the last warm-up

    # ---------------------------------------------------------------- lifecycle
    def on_configure(self, state):
        try:
            values = params.read(self, PARAMETERS, params.PHASES)
            check_values(values)
            self._build(values)
            self._warm_up()
        except Exception as error:  # noqa: BLE001 - any failure fails the transition, the node lives
            self.get_logger().error(f"configure failed: {error}")
            self._destroy_entities()
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
        self.get_logger().info(f"control loop running at {1.0 / self.loop.period:g} Hz")
        return result

    def on_deactivate(self, state):
        self._stop_loop()
        self._publish_safe_command()
        self.state = "inactive"
        return super().on_deactivate(state)

    # ---------------------------------------------------------------- configure
    def _build(self, values):
        model, _ = load_robot(values["robot_description"], values["urdf_path"])
        mapping, joints = None, values["joints"]
        if values["mapping.name"]:
            if values["adaptation.enabled"]:
                raise ValueError("parameter adaptation.enabled: not available with a closed-chain mapping")
            mapping = node_mapping(self, model, values["mapping.name"])
            joints = joints or list(mapping.active_joints)
            if sorted(joints) != sorted(mapping.active_joints):
                raise ValueError(f"parameter joints: a closed chain is controlled at its active joints "
                                 f"{', '.join(mapping.active_joints)} (in any order), got {', '.join(joints)}")
        controlled = joint_indices(model, joints)
        frame = values["estimator.frame"] or model.frame_names[-1]
        model.frame_id(frame)    # ValueError naming an unknown frame
        nv = model.nv
        n = len(controlled)
        check_values(values, n)
        c = _Configured()
        self._configured = c
        c.model, c.controlled, c.frame = model, controlled, frame
        c.mapping = mapping
        c.mapping_data = model.create_data()
        c.names = list(model.actuated_joints)
        c.controlled_names = [c.names[i] for i in controlled]
        c.uncontrolled = np.setdiff1d(np.arange(nv), controlled)
        c.limits = coordinate_effort_limits(model)
        c.law = ComputedTorque(model, 0.0, 0.0)
        c.observer = MomentumObserver(model, values["estimator.gain"], 1.0 / values["rate_hz"])
        c.wrench_data = model.create_data()
        c.wrench_damping = values["estimator.damping"]
        c.gradient = ParameterGradient(model, values["gradient.window"])
        if values["gradient.twist"]:
            c.twist = TwistGradient(model, values["gradient.window"])
            c.twist_out = np.zeros(c.twist.nparams)
        if values["adaptation.enabled"]:
            c.adaptation = InertialAdaptation(model, values["adaptation.step_size"], values["adaptation.max_step"])
        c.cutoff_hz = values["gradient.cutoff_hz"]
        c.reader = JointStateReader(c.names)
        # loop buffers, all (nv,) in the model's coordinate order
        for name in ("q_d", "v_d", "a_d", "tau", "tau_applied", "tau_ext", "kp", "kd", "damping",
                     "centre", "amplitude"):
            setattr(c, name, np.zeros(nv))
        c.gradient_out = np.zeros(c.gradient.nparams)
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
        c.joint_states = qos.PolledSubscription(self, JointState, "/joint_states", qos.SENSOR_DATA)
        c.reference_sub = self.create_subscription(JointTrajectoryPoint, "~/reference", self._on_reference,
                                                   qos.STATE)
        # preallocated messages
        c.command_msg = Float64MultiArray()
        c.command_msg.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
        c.desired_msg = JointState(name=c.controlled_names)
        c.external_msg = JointState(name=c.names)
        c.wrench_msg = WrenchStamped()
        c.wrench_msg.header.frame_id = model.root_name
        nb = model.nbodies
        c.gradient_msg = Float64MultiArray()
        c.gradient_msg.layout.dim = [
            MultiArrayDimension(label="bodies", size=nb, stride=10 * nb),
            MultiArrayDimension(label="parameters", size=10, stride=10)]
        c.labels_pub.publish(String(data="\n".join(c.gradient.labels)))
        c.estimate_msg = Float64MultiArray(layout=c.gradient_msg.layout)
        c.twist_msg = Float64MultiArray()
        c.twist_msg.layout.dim = [
            MultiArrayDimension(label="joints", size=nb, stride=6 * nb),
            MultiArrayDimension(label="components", size=6, stride=6)]
        if c.twist is not None:
            c.twist_labels_pub.publish(String(data="\n".join(c.twist.labels)))
        self._apply_live(values)
        self.get_logger().info(
            f"robot {model.name!r}: {nv} joints, controlling {', '.join(c.controlled_names)}"
            + (f" (closed chain: {values['mapping.name']})" if mapping is not None else "") + "; "
            f"command on {c.command_pub.topic_name}; wrench estimate at {frame!r} in {model.root_name!r} axes")

    def _warm_up(self):
        """Run every kernel the loop calls once, so Numba compiles (or loads from its cache) now."""
        c = self._configured
        model = c.model
        q = np.ascontiguousarray(model.neutral_configuration(), dtype=np.float64)
        v = np.full(model.nv, 0.1)
        a = np.full(model.nv, 0.2)
        steps = (
            ("computed torque", lambda: c.law.compute(q, v, q, v, a, out=c.tau)),
            ("safe torque", lambda: c.law.safe_torque(q, v, c.damping, "gravity", out=c.tau)),
            ("effort clamp", lambda: clamp_effort(c.tau, c.limits, out=c.tau)),
            ("momentum observer", lambda: (c.observer.reset(q, v), c.observer.update(q, v, c.tau, out=c.tau_ext))),
            ("wrench estimate", lambda: wrench_from_joint_torque(model, c.wrench_data, q, c.tau_ext, c.frame,
                                                                 c.wrench_damping)),
            ("parameter gradient", lambda: (c.gradient.add_sample(q, v, a, c.tau), c.gradient.gradient(
                out=c.gradient_out))),
            ("acceleration filter", lambda: AccelerationFilter(model.nv, 1e-3, c.cutoff_hz).update(v)),
        )
        if c.twist is not None:
            steps += (("twist gradient", lambda: (c.twist.add_sample(q, v, a, c.tau), c.twist.gradient(c.twist_out))),)
        if c.mapping is not None:
            closed = c.mapping.reference_configuration
            steps += (("closed-chain computed torque", lambda: self._computed_torque(closed, v, c.tau)),)
        start = time.perf_counter()
        for k, (name, call) in enumerate(steps, 1):
            self.warmup_progress = f"compiling {k}/{len(steps)}: {name}"
            call()
        self.compile_time = time.perf_counter() - start
        self.warmup_progress = f"compiled in {self.compile_time:.1f} s"
        c.gradient.clear()
        if c.twist is not None:
            c.twist.clear()
        c.tau[:] = 0.0
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
        if hasattr(c, "reference_sub"):
            self.destroy_subscription(c.reference_sub)

    # ---------------------------------------------------------------- parameters
    def _apply_live(self, values):
        """Gains, safety settings and compensation, into the configured objects."""
        c = self._configured
        n = len(c.controlled)
        kp = per_joint("gains.kp", values["gains.kp"], n)
        kd = per_joint("gains.kd", values["gains.kd"], n)
        c.kp[:] = 0.0
        c.kd[:] = 0.0
        c.kp[c.controlled] = kp
        c.kd[c.controlled] = kd
        c.law.set_gains(c.kp, c.kd)
        c.damping[c.controlled] = per_joint("safe_mode_damping", values["safe_mode_damping"], n)
        c.safe_mode = values["safe_mode"]
        c.watchdog_timeout = values["watchdog_timeout"]
        c.compensation = values["estimator.compensation"]

    def _on_set_parameters(self, changes):
        reason = params.refusal(PARAMETERS, changes, self.state)
        if reason is None:
            try:
                values = params.merged(self, PARAMETERS, changes)
                c = self._configured
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
        except ValueError as error:
            c.rejected_references += 1
            c.last_rejection = str(error)

    # ---------------------------------------------------------------- activate
    def _start(self, values):
        c = self._configured
        n = len(c.controlled)
        period = 1.0 / values["rate_hz"]
        c.observer.dt = period
        c.acceleration = AccelerationFilter(c.model.nv, period, c.cutoff_hz)
        c.gradient.clear()
        c.reader.forget()
        c.reference_type = values["reference.type"]
        c.reference_position = values["reference.position"]
        c.amplitude[:] = 0.0
        c.amplitude[c.controlled] = per_joint("reference.amplitude", values["reference.amplitude"], n)
        c.omega = 2.0 * math.pi * values["reference.frequency"]
        c.reference_point = None
        c.start_stamp = None
        c.last_sample_time = None
        c.safe = False
        c.tick = 0
        c.publish_period = values["state_publish_period"]
        c.gradient_period = 0 if c.mapping is not None else values["gradient.period"]
        c.error_sq = 0.0
        c.error_count = 0
        self.loop = RealtimeLoop("dyn_controller loop", period, self._tick, priority=values["realtime.priority"],
                                 cpu=values["realtime.cpu"], warn=self.get_logger().warning,
                                 on_error=self._on_loop_error)

    # ---------------------------------------------------------------- the loop
    def _tick(self, now):
        c = self._configured
        reader = c.reader
        new_sample = False
        while True:
            msg = c.joint_states.take()
            if msg is None:
                break
            if reader.read(msg, time.time_ns()) == ACCEPTED:
                self._on_sample(now)
                new_sample = True
        if reader.stamp is None:
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
        q, v, tau = reader.q, reader.v, c.tau
        self._reference((reader.stamp - c.start_stamp) * 1e-9, q, v)
        if c.safe:
            self._law_safe_torque(q, v, tau)
        else:
            self._computed_torque(q, v, tau)
            if c.compensation:
                tau -= c.tau_ext
            if new_sample:
                e = c.q_d[c.controlled] - q[c.controlled]
                c.error_sq += float(e @ e) / len(e)
                c.error_count += 1
        if not np.isfinite(tau).all():
            c.non_finite_commands += 1
            self._safe_torque(q, v, tau)
        clamp_effort(tau, c.limits, out=tau)
        tau[c.uncontrolled] = 0.0     # tau is now what the robot is told to apply
        c.command_msg.data = tau[c.controlled]
        c.command_pub.publish(c.command_msg)
        c.tick += 1
        if c.tick % c.publish_period == 0:
            self._publish_state()
        if c.gradient_period and c.tick % c.gradient_period == 0 and c.gradient.count:
            self._gradients()

    def _computed_torque(self, q, v, out):
        """The computed torque on the tree, or with a mapping on the closed chain: the reference and
        the gains of the active joints, tau_a = mapping.inverse_dynamics(theta_a, dtheta_a, a_cmd),
        a_cmd = a_d + kd (v_d - v) + kp (q_d - q), zero on the passive joints. Where the loop
        closure fails (a measured state off the closed chain, a singular configuration) the safe
        torque replaces it."""
        c = self._configured
        if c.mapping is None:
            c.law.compute(q, v, c.q_d, c.v_d, c.a_d, out=out)
            return
        active = c.mapping.active_indices
        a_cmd = c.a_d[active] + c.kd[active] * (c.v_d[active] - v[active]) + c.kp[active] * (c.q_d[active] - q[active])
        try:
            tau_a = c.mapping.inverse_dynamics(c.model, c.mapping_data, q[active], v[active], a_cmd, guess=q)
        except ValueError:
            c.closure_failures += 1
            self._safe_torque(q, v, out)
            return
        out[:] = 0.0
        out[active] = tau_a

    def _gradients(self):
        """~/parameter_gradient, ~/twist_gradient and, when adapting, one adaptation step (on a full
        window) after which the control laws use the new estimate, published on ~/inertial_parameters."""
        c = self._configured
        phi = None if c.adaptation is None else c.adaptation.phi
        c.gradient.gradient(phi, out=c.gradient_out)
        if not np.isfinite(c.gradient_out).all():
            c.gradient.clear()
            return
        c.gradient_msg.data = c.gradient_out
        c.gradient_pub.publish(c.gradient_msg)
        if c.twist is not None and c.twist.count:
            c.twist.gradient(out=c.twist_out)
            if np.isfinite(c.twist_out).all():
                c.twist_msg.data = c.twist_out
                c.twist_pub.publish(c.twist_msg)
        if c.adaptation is not None and c.gradient.count == c.gradient.window:
            c.adaptation.update(c.gradient_out)
            model = c.adaptation.model()
            c.law.set_model(model)
            c.observer.set_model(model, c.reader.q, c.reader.v)
            if c.twist is not None:
                c.twist.set_model(model)
            c.estimate_msg.data = c.adaptation.phi
            c.estimate_pub.publish(c.estimate_msg)

    def _on_sample(self, now):
        """A new accepted joint state: start the reference clock, update the estimators."""
        c = self._configured
        reader = c.reader
        if c.start_stamp is None:
            c.start_stamp = reader.stamp
            c.centre[:] = reader.q
            if c.reference_position:
                c.centre[c.controlled] = per_joint("reference.position", c.reference_position, len(c.controlled))
            self._reset_estimators()
        elif (reader.stamp - c.previous_stamp) * 1e-9 > c.watchdog_timeout:
            self._reset_estimators()    # after a gap the momentum balance starts over
        else:
            try:
                if c.mapping is None:    # the tree's estimators do not model the loop closure
                    self._update_estimators((reader.stamp - c.previous_stamp) * 1e-9)
            except ValueError:          # a state so extreme that the estimates overflow
                c.estimator_resets += 1
                self._reset_estimators()
        c.previous_stamp = reader.stamp
        c.last_sample_time = now

    def _update_estimators(self, dt):
        """Momentum observer, acceleration filter and gradient window over one sample step."""
        c = self._configured
        q, v = c.reader.q, c.reader.v
        # the torque applied over the last step: measured, else what we commanded
        c.tau_applied[:] = c.reader.effort if c.reader.has_effort else c.tau
        c.observer.dt = dt
        c.observer.update(q, v, c.tau_applied, out=c.tau_ext)
        if not np.isfinite(c.tau_ext).all():
            raise ValueError("non-finite external torque estimate")
        a = c.acceleration.update(v)
        if c.gradient_period:
            c.gradient.add_sample(q, v, a, c.tau_applied)
            if c.twist is not None:
                c.twist.add_sample(q, v, a, c.tau_applied)

    def _reset_estimators(self):
        c = self._configured
        c.tau_ext[:] = 0.0
        c.acceleration.reset()
        c.gradient.clear()
        if c.twist is not None:
            c.twist.clear()
        if c.mapping is None:
            c.observer.reset(c.reader.q, c.reader.v)

    def _reference(self, t, q, v):
        """q_d, v_d, a_d at time t [s] since the first joint state; joints not controlled follow
        their measured state (no feedback on them)."""
        c = self._configured
        point = c.reference_point
        if point is not None:
            c.q_d[c.controlled], c.v_d[c.controlled], c.a_d[c.controlled] = point
        elif c.reference_type == "sine":
            s, co = math.sin(c.omega * t), math.cos(c.omega * t)
            np.multiply(c.amplitude, s, out=c.q_d)
            c.q_d += c.centre
            np.multiply(c.amplitude, c.omega * co, out=c.v_d)
            np.multiply(c.amplitude, -c.omega * c.omega * s, out=c.a_d)
        else:
            c.q_d[:] = c.centre
            c.v_d[:] = 0.0
            c.a_d[:] = 0.0
        if c.uncontrolled.size:
            c.q_d[c.uncontrolled] = q[c.uncontrolled]
            c.v_d[c.uncontrolled] = v[c.uncontrolled]
            c.a_d[c.uncontrolled] = 0.0

    def _law_safe_torque(self, q, v, out):
        """The safe-mode torque; with a mapping the tree's g(q) - damping v mapped to the actuators
        (map_torque, eq. 13 of the seed), zero on the passive joints."""
        c = self._configured
        c.law.safe_torque(q, v, c.damping, c.safe_mode, out=out)
        if c.mapping is not None:
            tau_a = c.mapping.map_torque(q, out)
            out[:] = 0.0
            out[c.mapping.active_indices] = tau_a

    def _safe_torque(self, q, v, out):
        """The safe-mode torque into out, zero if even that is not finite."""
        try:
            self._law_safe_torque(q, v, out)
        except ValueError:
            out[:] = 0.0
        if not np.isfinite(out).all():
            out[:] = 0.0

    def _publish_state(self):
        c = self._configured
        reader = c.reader
        stamp = reader.stamp
        d = c.desired_msg
        set_stamp(d.header.stamp, stamp)
        d.position = c.q_d[c.controlled]
        d.velocity = c.v_d[c.controlled]
        d.effort = c.tau[c.controlled]
        c.desired_pub.publish(d)
        if c.mapping is not None:
            return      # no external-torque or wrench estimate on a closed chain
        x = c.external_msg
        set_stamp(x.header.stamp, stamp)
        x.effort = c.tau_ext
        c.external_pub.publish(x)
        try:
            w = wrench_from_joint_torque(c.model, c.wrench_data, reader.q, c.tau_ext, c.frame, c.wrench_damping)
        except (ValueError, np.linalg.LinAlgError):
            return      # a state so extreme that the Jacobian overflows: no estimate this time
        m = c.wrench_msg
        set_stamp(m.header.stamp, stamp)
        m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z = float(w[0]), float(w[1]), float(w[2])
        m.wrench.force.x, m.wrench.force.y, m.wrench.force.z = float(w[3]), float(w[4]), float(w[5])
        c.wrench_pub.publish(m)

    def _publish_safe_command(self):
        """One safe-mode command at the last joint state (on deactivate)."""
        c = self._configured
        if c is None or c.reader.stamp is None:
            return
        self._safe_torque(c.reader.q, c.reader.v, c.tau)
        clamp_effort(c.tau, c.limits, out=c.tau)
        c.command_msg.data = c.tau[c.controlled]
        c.command_pub.publish(c.command_msg)

    def _on_loop_error(self, error):
        self.get_logger().error(f"control loop stopped by an error: {error!r}; publishing the safe command")
        self._publish_safe_command()

    # ---------------------------------------------------------------- diagnostics
    def _publish_diagnostics(self):
        status = DiagnosticStatus(name=f"{self.get_name()}: control loop", hardware_id="")
        c = self._configured
        values = {"state": self.state}
        level, message = DiagnosticStatus.OK, self.state
        if c is not None:
            status.hardware_id = c.model.name
            values["rejected joint states"] = c.reader.rejected
            values["rejected references"] = c.rejected_references
            values["last rejection"] = c.reader.last_rejection or c.last_rejection
            values["watchdog trips"] = c.watchdog_trips
            values["non-finite commands replaced"] = c.non_finite_commands
            values["estimator resets"] = c.estimator_resets
            if c.mapping is not None:
                values["loop-closure failures"] = c.closure_failures
            if c.adaptation is not None:
                values["adaptation steps"] = c.adaptation.steps
        if self.compile_time is not None:
            values["kernel compile time [s]"] = f"{self.compile_time:.3f}"
        if self.state == "active" and self.loop is not None:
            s = self.loop.stats.summary()
            values.update({
                "rate [Hz]": f"{1.0 / self.loop.period:g}",
                "period p50 [ms]": f"{s['period_p50'] * 1e3:.3f}",
                "period p99 [ms]": f"{s['period_p99'] * 1e3:.3f}",
                "period max [ms]": f"{s['period_max'] * 1e3:.3f}",
                "compute p99 [ms]": f"{s['compute_p99'] * 1e3:.3f}",
                "deadline misses": s["deadline_misses"],
                "ticks": s["ticks"],
                "safe mode": c.safe,
            })
            if c.error_count:
                values["tracking error rms [rad]"] = f"{math.sqrt(c.error_sq / c.error_count):.3e}"
                c.error_sq, c.error_count = 0.0, 0
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
    last_rejection = ""
    watchdog_trips = 0
    non_finite_commands = 0
    estimator_resets = 0
    reference_point = None
    safe = False
    closure_failures = 0
    twist = None
    adaptation = None


def main(args=None):
    spin(ControllerNode, args)


if __name__ == "__main__":
    main()
