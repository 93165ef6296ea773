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
Parameters: controller_parameters.py (doc/parameters.md); topics and safety rules: doc/controller.md.
"""
import math
import sys
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectoryPoint

from ..control import fourier
from ..control import tick as T
from ..control.adaptation import InertialAdaptation
from ..control.closed_chain_tick import S_CLOSURE_FAILURES, ClosedChainTick
from ..control.collision import REACTIONS
from ..control import trajectory as trajectories
from ..control.fourier import fourier_reference
from ..control.supervisor import Supervisor
from ..dynamics import frame_pose, gravity
from ..task_space import quaternion_to_rotation
from ..model import JOINT_PARAMETER_NAMES, PRISMATIC
from . import follow_joint_trajectory, params, preload, qos, trajectory_input
from .closed_chain import PARAMETER_PREFIX, node_mapping
from .controller_parameters import PARAMETERS, check_values
from .inputs import ACCEPTED, JointStateReader, reference_from_point
from .lifecycle import LoopNode, spin
from .rcl_io import RawPublisher
from .robot import (check_forward_controller_joints, resolve_path, joint_indices, load_robot, parameter_files, per_joint,
                    with_joint_terms, with_payload)
from .timing import RealtimeLoop, default_cpu
from .wire import RawMessage, header_stamp_ns, markers, vector_pair_template

STOP_SPEED = 0.02    # [rad/s] below it on every controlled joint, the arm rests (braking stops)

def message_templates(model, controlled_names):
    """The serialized templates (wire.RawMessage) of the messages the loop publishes, by the name of
    their publisher (`<name>_pub`): command (the command topic), desired, external (~/external_torque),
    wrench (~/wrench_estimate), gradient (~/parameter_gradient), estimate (~/inertial_parameters),
    twist (~/twist_gradient), joint_gradient and pose_error."""
    n, nv, nb = len(controlled_names), model.nv, model.nbodies
    command = Float64MultiArray(data=markers(n))
    command.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
    desired = JointState(name=list(controlled_names), position=markers(n), velocity=markers(n, 100.0),
                         effort=markers(n, 200.0))
    external = JointState(name=list(model.actuated_joints), effort=markers(nv))
    wrench = WrenchStamped()
    gradient = Float64MultiArray(data=markers(10 * nb))
    gradient.layout.dim = [MultiArrayDimension(label="bodies", size=nb, stride=10 * nb),
                           MultiArrayDimension(label="parameters", size=10, stride=10)]
    twist = Float64MultiArray(data=markers(6 * nb))
    twist.layout.dim = [MultiArrayDimension(label="joints", size=nb, stride=6 * nb),
                        MultiArrayDimension(label="components", size=6, stride=6)]
    joint_gradient = Float64MultiArray(data=markers(3 * nv))
    joint_gradient.layout.dim = [MultiArrayDimension(label="joints", size=nv, stride=3 * nv),
                                 MultiArrayDimension(label="terms", size=3, stride=3)]
    pose_error = TwistStamped()
    return {
        "command": RawMessage(command, {"data": command.data}),
        "desired": RawMessage(desired, {"position": desired.position, "velocity": desired.velocity,
                                        "effort": desired.effort}),
        "external": RawMessage(external, {"effort": external.effort}),
        "wrench": vector_pair_template(wrench, model.root_name,
                                       {"force": wrench.wrench.force, "torque": wrench.wrench.torque}),
        "gradient": RawMessage(gradient, {"data": gradient.data}),
        "estimate": RawMessage(gradient, {"data": gradient.data}),
        "twist": RawMessage(twist, {"data": twist.data}),
        "joint_gradient": RawMessage(joint_gradient, {"data": joint_gradient.data}),
        "pose_error": vector_pair_template(pose_error, model.root_name,
                                           {"angular": pose_error.twist.angular, "linear": pose_error.twist.linear}),
    }


class ControllerNode(LoopNode):
    """The dyn_controller lifecycle node (see the module docstring)."""

    KERNELS = staticmethod(preload.controller_kernels)
    SETTLE_DISCOVERY = True

    def __init__(self, node_name="dyn_controller", **kwargs):
        super().__init__(node_name, PARAMETERS, PARAMETER_PREFIX, **kwargs)
        self.warmup_progress = ""            # "compiling k/n: <kernel>", for status displays
        self.compile_time = None             # [s] of the last warm-up

    # ---------------------------------------------------------------- lifecycle
    def _configure(self, values):
        check_values(values)
        self._build(values)
        self._warm_up()

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
        self._stop_safely()
        self.state = "inactive"
        return super().on_deactivate(state)

    def on_shutdown(self, state):
        if self.state == "active":     # shutdown from active: the same stop as deactivate's
            self._stop_loop()
            self._stop_safely()
        return super().on_shutdown(state)

    # ---------------------------------------------------------------- configure
    def _build(self, values):
        model, _ = load_robot(values["robot_description"], values["urdf_path"])
        for message in model.warnings:
            self.get_logger().warning(f"URDF: {message}")
        model = with_payload(with_joint_terms(model, values, "model."), values, "model.payload.")
        if values["model.parameters_file"]:
            from ..identification.parameters_file import load_parameters
            model = load_parameters(model, resolve_path(values["model.parameters_file"]))
            self.get_logger().info(f"model parameters from {values['model.parameters_file']}")
        mapping, joints = None, values["joints"]
        if values["mapping.name"]:
            if np.any(model.joint_terms) or values["model.payload.link"]:
                raise ValueError("parameters model.*: joint terms (armature, friction) are not modelled on a "
                                 "closed chain; leave them empty and the URDF without <dynamics>")
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
        if mapping is None:
            c.control_frame = values["control.frame"] or frame
            c.tick_kernel.set_control_frame(model, c.control_frame)     # ValueError naming an unknown frame
            c.reach = _reach(model, c.control_frame)
            c.pose_data = model.create_data()
        elif values["control.frame"]:
            raise ValueError("parameter control.frame: no Cartesian impedance with a closed-chain mapping")
        f = c.tick_kernel.f
        c.s = f.s
        c.supervisor = Supervisor(c.s, self.get_logger())
        c.s[T.S_GRAVITY_BY_ROBOT] = values["gravity_compensation"] == "robot"
        c.s[T.S_WRENCH_DAMPING] = values["estimator.damping"]
        c.s[T.S_CUTOFF_HZ] = values["gradient.cutoff_hz"]
        f.observer_gain[:] = values["estimator.gain"]
        # the loop's arrays, (nv,) in the model's coordinate order, live in the tick's buffers
        c.q, c.v, c.effort, c.tau, c.tau_ext = f.q, f.v, f.effort, f.tau, f.tau_ext
        c.q_d, c.v_d, c.a_d, c.kp, c.kd, c.brake_gain = f.q_d, f.v_d, f.a_d, f.kp, f.kd, f.brake_gain
        c.centre, c.amplitude = f.centre, f.amplitude
        if values["adaptation.enabled"]:
            c.adaptation = InertialAdaptation(model, values["adaptation.step_size"], values["adaptation.max_step"])
            c.joint_rate = values["adaptation.joint_rate"]
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
        c.joint_gradient_pub = self.create_lifecycle_publisher(Float64MultiArray, "~/joint_gradient", qos.STATE)
        c.joint_labels_pub = self.create_publisher(String, "~/joint_gradient_labels", qos.LATCHED)
        c.estimate_pub = self.create_lifecycle_publisher(Float64MultiArray, "~/inertial_parameters", qos.STATE)
        c.joint_states = qos.PolledSubscription(self, JointState, values["joint_states_topic"], qos.SENSOR_DATA,
                                                ring_capacity=qos.RING_CAPACITY)
        c.reference_sub = self.create_subscription(JointTrajectoryPoint, "~/reference", self._on_reference,
                                                   qos.STATE)
        c.target_pose_sub = self.create_subscription(PoseStamped, "~/target_pose", self._on_target_pose, qos.STATE)
        c.target_wrench_sub = self.create_subscription(WrenchStamped, "~/target_wrench", self._on_target_wrench,
                                                       qos.STATE)
        c.pose_error_pub = self.create_lifecycle_publisher(TwistStamped, "~/pose_error", qos.STATE)
        c.collision_pub = self.create_lifecycle_publisher(DiagnosticArray, "~/collision", qos.STATE)
        c.reset_collision_srv = self.create_service(Trigger, "~/reset_collision", self._on_reset_collision)
        c.trajectory_decoder = trajectory_input.TrajectoryDecoder(values["trajectory.max_points"], c.controlled_names)
        c.trajectory_sub = trajectory_input.TrajectorySubscription(self, "~/joint_trajectory", c.trajectory_decoder,
                                                                   self._on_trajectory)
        trajectory_input.warm_up()
        motions = ["translation" if model.joint_types[model.joint_names.index(name)] == PRISMATIC else "rotation"
                   for name in c.controlled_names]
        c.action = follow_joint_trajectory.create(self, c.controlled_names, controlled, motions, nv,
                                                  values["trajectory.max_points"], mapping is None)
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
        for name, raw in message_templates(c.model, c.controlled_names).items():
            setattr(c, f"{name}_raw", raw)
            setattr(c, f"{name}_out", RawPublisher(getattr(c, f"{name}_pub"), raw))
        c.labels_pub.publish(String(data="\n".join(c.tick_kernel.labels)))
        if c.mapping is None:
            if c.twist_enabled:
                c.twist_labels_pub.publish(String(data="\n".join(c.tick_kernel.twist_labels)))
            c.joint_labels_pub.publish(String(data="\n".join(
                f"{joint}/{term}" for joint in c.model.joint_names for term in JOINT_PARAMETER_NAMES)))

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
        fourier.warm_up()
        if c.mapping is None:     # _seed_rate_limit's gravity
            gravity(c.model, c.model.create_data(), c.model.neutral_configuration())
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
                     "estimate_pub", "joint_gradient_pub", "pose_error_pub", "collision_pub"):
            if hasattr(c, name):
                self.destroy_lifecycle_publisher(getattr(c, name))
        for name in ("labels_pub", "twist_labels_pub", "joint_labels_pub"):
            if hasattr(c, name):
                self.destroy_publisher(getattr(c, name))
        if hasattr(c, "joint_states"):
            c.joint_states.destroy(self)
        for name in ("reference_sub", "target_pose_sub", "target_wrench_sub"):
            if hasattr(c, name):
                self.destroy_subscription(getattr(c, name))
        if hasattr(c, "reset_collision_srv"):
            self.destroy_service(c.reset_collision_srv)
        if hasattr(c, "trajectory_sub"):
            c.trajectory_sub.destroy(self)
        if getattr(c, "action", None) is not None:
            c.action.destroy()

    # ---------------------------------------------------------------- parameters
    def _apply_live(self, values):
        """Gains, safety settings and compensation, into the configured objects."""
        c = self._configured
        n = len(c.controlled)
        c.kp[c.controlled] = per_joint("gains.kp", values["gains.kp"], n)
        c.kd[c.controlled] = per_joint("gains.kd", values["gains.kd"], n)
        c.brake_gain[c.controlled] = per_joint("braking_gain", values["braking_gain"], n)
        c.rate_hz = values["rate_hz"]
        period = 1.0 / c.rate_hz
        f = c.tick_kernel.f
        f.max_step[c.controlled] = per_joint("torque_rate_limit", values["torque_rate_limit"], n) * period
        sup = c.supervisor
        sup.safe_mode, sup.safe_mode_final = values["safe_mode"], values["safe_mode_final"]
        sup.watchdog_timeout, sup.safe_mode_timeout = values["watchdog_timeout"], values["safe_mode_timeout"]
        c.braking_time = values["braking_time"]
        c.compensation = values["estimator.compensation"]
        c.reader.max_lead_ns = round(values["max_stamp_lead"] * 1e9)
        c.s[T.S_BLEND_TIME] = values["reengage.duration"]
        c.s[T.S_ERROR_LIMIT] = values["reengage.error_limit"]
        c.s[T.S_BLEND_SPEED] = values["reengage.max_velocity"]
        c.s[T.S_BRAKE_SPEED] = values["reengage.brake_speed"]
        c.s[T.S_COMPENSATION] = c.compensation
        self._apply_task_space(values, period)

    def _apply_task_space(self, values, period):
        """The Cartesian impedance's gains and the collision detection's settings (trees only)."""
        c = self._configured
        s, f, n = c.s, c.tick_kernel.f, len(c.controlled)
        if c.mapping is not None:
            if values["collision.enabled"]:
                raise ValueError("parameter collision.enabled: not available with a closed-chain mapping")
            return
        for name, half in (("cartesian.stiffness.rotational", f.stiffness[:3]),
                           ("cartesian.stiffness.translational", f.stiffness[3:])):
            if len(values[name]) not in (1, 3):
                raise ValueError(f"parameter {name}: one number or three (x, y, z), got {values[name]!r}")
            half[:] = values[name]
        stiffness = per_joint("cartesian.nullspace.stiffness", values["cartesian.nullspace.stiffness"], n)
        f.nullspace_stiffness[c.controlled] = stiffness
        f.nullspace_damping[c.controlled] = per_joint("cartesian.nullspace.damping",
                                                      values["cartesian.nullspace.damping"], n, 2.0 * np.sqrt(stiffness))
        s[T.S_DAMPING_RATIO] = values["cartesian.damping_ratio"]
        s[T.S_TARGET_ALPHA] = 1.0 - math.exp(-period / values["cartesian.target_time_constant"])
        s[T.S_SINGULAR_DAMPING] = values["cartesian.singularity_damping"]
        lower = per_joint("collision.lower_threshold", values["collision.lower_threshold"], n)
        upper = per_joint("collision.upper_threshold", values["collision.upper_threshold"], n)
        if np.any(upper < lower):
            raise ValueError("parameters collision.*_threshold: the upper threshold must not be below the lower one")
        f.lower_threshold[:] = f.upper_threshold[:] = np.inf      # joints not controlled: never
        f.lower_threshold[c.controlled], f.upper_threshold[c.controlled] = lower, upper
        f.float_damping[c.controlled] = per_joint("collision.float_damping", values["collision.float_damping"], n)
        s[T.S_COLLISION_ON] = values["collision.enabled"]
        s[T.S_REACTION] = REACTIONS.index(values["collision.reaction"])
        s[T.S_COLLISION_ACCEL_GAIN] = values["collision.acceleration_gain"]
        s[T.S_REFLEX_DISTANCE] = values["collision.reflex.distance"]
        s[T.S_REFLEX_DURATION] = values["collision.reflex.duration"]
        s[T.S_STOP_TIME] = values["collision.stop_time"]

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
            self._refuse_while_collided()
            c.reference_point = reference_from_point(msg, len(c.controlled))
            c.trajectory = None
        except ValueError as error:
            c.rejected_references += 1
            c.last_rejection = str(error)

    def _on_trajectory(self, raw):
        """~/joint_trajectory (serialized: trajectory_input.py): the reference from now on; a refused
        one is logged and counted, and the current motion goes on."""
        try:
            self.set_trajectory(self._configured.trajectory_decoder.decode(raw))
        except ValueError as error:
            self.refused("~/joint_trajectory", error)

    def _refuse_while_collided(self):
        if self._configured.s[T.S_COLLIDED]:
            raise ValueError("collided: the reaction holds until ~/reset_collision is called")

    def _on_target_pose(self, msg):
        """~/target_pose: the Cartesian impedance's target from the next tick on, in the root frame or
        any frame of the model (at the current joint state); refused (logged, counted) when it is not
        finite, not a rotation, outside the frame's reach, or while collided."""
        c = self._configured
        try:
            if c.mapping is not None:
                raise ValueError("no Cartesian impedance with a closed-chain mapping")
            self._refuse_while_collided()
            o, x = msg.pose.orientation, msg.pose.position
            quaternion, p = np.array([o.x, o.y, o.z, o.w]), np.array([x.x, x.y, x.z])
            if not (np.isfinite(quaternion).all() and np.isfinite(p).all()):
                raise ValueError("non-finite pose")
            if not 0.5 < np.linalg.norm(quaternion) < 2.0:
                raise ValueError(f"orientation is not a unit quaternion (norm {np.linalg.norm(quaternion):.3g})")
            R = quaternion_to_rotation(quaternion)
            frame = msg.header.frame_id
            if frame and frame != c.model.root_name:
                if c.reader.stamp is None:
                    raise ValueError(f"frame {frame!r}: no joint state yet to place it")
                pose = frame_pose(c.model, c.pose_data, c.q.copy(), frame)   # ValueError naming an unknown frame
                R, p = pose[:3, :3] @ R, pose[:3, :3] @ p + pose[:3, 3]
            distance = np.linalg.norm(p)
            if distance > c.reach:
                raise ValueError(f"outside the workspace: {distance:.3f} m from the root, the reach of "
                                 f"{c.control_frame!r} is {c.reach:.3f} m")
            c.pending_target = (R, p)
        except ValueError as error:
            c.rejected_targets += 1
            c.last_rejection = f"~/target_pose: {error}"
            self.get_logger().warning(f"~/target_pose refused: {error}", throttle_duration_sec=1.0)

    def _on_target_wrench(self, msg):
        """~/target_wrench: the feedforward wrench [n; f] the frame exerts, root-frame axes."""
        c = self._configured
        w = msg.wrench
        wrench = np.array([w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z])
        frame = msg.header.frame_id
        if not np.isfinite(wrench).all() or (frame and frame != c.model.root_name) or c.mapping is not None:
            c.rejected_targets += 1
            c.last_rejection = (f"~/target_wrench: a finite wrench in the root frame {c.model.root_name!r} "
                                f"expected, got frame {frame!r}")
            self.get_logger().warning(c.last_rejection, throttle_duration_sec=1.0)
            return
        c.pending_wrench = wrench

    def _on_reset_collision(self, request, response):
        """~/reset_collision: leave the collision reaction; the reference re-anchors at the measured state."""
        c = self._configured
        response.success = c is not None and bool(c.s[T.S_COLLIDED])
        if response.success:
            c.reset_collision_pending = True
            response.message = "collision reset: resuming from the measured state"
        else:
            response.message = "no collision to reset"
        return response

    def _publish_collision_event(self):
        """~/collision: the residual's new level (contact or collision), the joint and link it is
        isolated to, and the residual."""
        c = self._configured
        s = c.s
        collided = s[T.S_COLLISIONS] != c.seen_collisions
        c.seen_contacts, c.seen_collisions = s[T.S_CONTACTS], s[T.S_COLLISIONS]
        joint = int(s[T.S_COLLISION_JOINT])
        residual = c.tick_kernel.f.collision_residual if collided else c.tau_ext
        if collided:
            c.last_collision = (f"{c.names[joint]} (link {c.model.body_names[joint]}) at t = "
                                f"{s[T.S_COLLISION_TIME]:.3f} s, residual {np.abs(residual).max():.1f} N m")
            self.get_logger().error(f"collision on {c.last_collision}; reaction: "
                                    f"{REACTIONS[int(s[T.S_REACTION])]}")
        status = DiagnosticStatus(name=f"{self.get_name()}: collision", hardware_id=c.model.name,
                                  level=DiagnosticStatus.ERROR if collided else DiagnosticStatus.WARN,
                                  message=("collision on " + c.last_collision) if collided else "contact")
        values = [("level", "collision" if collided else "contact")]
        if collided:
            values += [("joint", c.names[joint]), ("link", c.model.body_names[joint]),
                       ("t", f"{s[T.S_COLLISION_TIME]:.4f}")]
        values += [(f"residual {name}", f"{r:.4f}") for name, r in zip(c.names, residual)]
        status.values = [KeyValue(key=k, value=v) for k, v in values]
        event = DiagnosticArray(status=[status])
        event.header.stamp.sec, event.header.stamp.nanosec = divmod(int(c.reader.stamp), 1_000_000_000)
        c.collision_pub.publish(event)

    # ---------------------------------------------------------------- trajectories (topic and action)
    def set_trajectory(self, points, start_tolerance=None):
        """The one way a trajectory becomes the reference, for ~/joint_trajectory and the
        ~/follow_joint_trajectory action: judges `points` (control/trajectory.py: Points; a start
        state at time 0 within `start_tolerance`, in the order of points.names, of the measured
        positions: check_start), builds the trajectory from the reference the controller has at its
        start (no jump; the current trajectory runs until then) and installs it. Returns the
        trajectory installed; a ValueError (InvalidJoints for the names) says why it is refused."""
        c = self._configured
        if self.state != "active" or c.reader.stamp is None:
            raise ValueError("the controller is not active with joint states yet")
        self._refuse_while_collided()
        indices = c.controlled[trajectories.check_names(points.names, c.controlled_names)]
        trajectories.check_values(points)
        trajectories.check_start(points, c.q[indices], start_tolerance)
        now = c.supervisor.time(c.reader.stamp)     # a zero stamp is now, a stamp in the past too
        start = now if points.stamp_ns == 0 else max(now, c.supervisor.time(points.stamp_ns))
        old = c.trajectory
        start_state = (c.q_d.copy(), c.v_d.copy(), c.a_d.copy())
        if old is not None:
            old.sample(start, *start_state)
        new = trajectories.Trajectory.through(start, start_state, indices, points.times, points.positions,
                                              points.velocities, points.accelerations)
        if old is not None and now < start < old.end:
            new = old.then(new)
        c.reference_point = None
        c.trajectory = new
        return new

    def hold_position(self):
        """Hold every joint at rest at its measured position from now on (the action's cancel and
        tolerance violations)."""
        c = self._configured
        c.reference_point = None
        c.trajectory = trajectories.Trajectory.hold(c.supervisor.time(c.reader.stamp), c.q.copy())

    def current_trajectory(self):
        return self._configured.trajectory

    def measured_state(self):
        """(stamp [ns], t [s] on the reference clock, (3, n) positions, velocities, accelerations
        (the acceleration estimate of a tree, else zero) of the controlled joints) of the newest
        joint state; None before the first."""
        c = self._configured
        if c.reader.stamp is None or c.supervisor.start_stamp is None:
            return None
        stamp = c.reader.stamp
        acceleration = c.tick_kernel.f.acceleration if c.mapping is None else np.zeros_like(c.q)
        state = np.stack([c.q, c.v, acceleration])[:, c.controlled]
        return stamp, c.supervisor.time(stamp), state

    def in_safe_mode(self):
        return self._configured.supervisor.safe

    def refused(self, source, error):
        """Count and log a refused trajectory (~/joint_trajectory or an action goal)."""
        c = self._configured
        c.rejected_trajectories += 1
        c.last_rejection = f"{source}: {error}"
        self.get_logger().warning(f"{source} refused: {error}")

    # ---------------------------------------------------------------- activate
    def _start(self, values):
        c = self._configured
        n = len(c.controlled)
        c.reader.forget()
        c.reference_sine = values["reference.type"] == "sine"
        c.fourier = self._fourier(values) if values["reference.type"] == "fourier" else None
        c.reference_position = values["reference.position"]
        c.amplitude[:] = 0.0
        if c.reference_sine:
            c.amplitude[c.controlled] = per_joint("reference.amplitude", values["reference.amplitude"], n)
        c.omega = 2.0 * math.pi * values["reference.frequency"]
        c.reference_point = None
        c.applied_point = None
        c.trajectory = None
        c.supervisor.restart()
        c.tick = 0
        c.publish_period = values["state_publish_period"]
        c.gradient_period = values["gradient.period"]
        c.error_sq = 0.0
        c.error_count = 0
        s = c.s
        cartesian = values["control.mode"] == "cartesian_impedance"
        if cartesian and c.mapping is not None:
            raise ValueError("parameter control.mode: cartesian_impedance is not available with a closed-chain mapping")
        s[T.S_MODE] = T.CARTESIAN_MODE if cartesian else T.JOINT_MODE
        s[T.S_TARGET_SET] = 0.0
        c.posture = values["cartesian.nullspace.posture"]
        c.pending_target = c.pending_wrench = None
        c.reset_collision_pending = False
        if c.mapping is None:
            c.tick_kernel.f.target_wrench[:] = 0.0
        c.seen_contacts, c.seen_collisions = s[T.S_CONTACTS], s[T.S_COLLISIONS]
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
        sup = c.supervisor
        if sup.watchdog(now, self._delivery_verdict):
            return      # silent: no command, and the rate limit goes on from the last one published
        limited = c.s[T.S_RATE_LIMITED]
        t = sup.time(c.reader.stamp)
        k = c.tick
        publish_phase = k % c.publish_period
        period = c.gradient_period or 1      # 0: no gradients (the phase never matches)
        gradient_phase = k % period if c.gradient_period else -1
        s = c.s     # the same flags for a tree's tick and a closed chain's (no twist gradient there)
        trajectory = c.trajectory
        if trajectory is not None:
            trajectory.sample(t, c.q_d, c.v_d, c.a_d)
            s[T.S_POINT] = 1.0
        elif c.reference_point is not c.applied_point:
            self._apply_point()
        elif c.fourier is not None and c.reference_point is None:
            joints, q0, a, b, omega, q, v, acc = c.fourier
            fourier_reference(t, q0, a, b, omega, q, v, acc)
            c.q_d[joints], c.v_d[joints], c.a_d[joints] = q, v, acc
            s[T.S_POINT] = 1.0
        if c.pending_target is not None or c.pending_wrench is not None or c.reset_collision_pending:
            self._apply_task_inputs()
        s[T.S_T] = t
        s[T.S_WANT_WRENCH] = publish_phase == c.publish_period // 2
        s[T.S_WANT_GRADIENT] = gradient_phase == 1 % period and s[T.S_COUNT] > 0
        s[T.S_WANT_TWIST] = gradient_phase == 3 % period and c.twist_enabled and s[T.S_COUNT] > 0
        c.tick_kernel.tick()
        s[T.S_NEW_SAMPLE] = 0.0
        s[T.S_RESET] = 0.0
        c.command_raw.views["data"][:] = c.tick_kernel.f.command
        c.command_out.publish()
        c.commanded = True
        if sup.safe:
            sup.hold_published = s[T.S_RATE_LIMITED] == limited     # the hold torque went out whole
        c.tick += 1
        if s[T.S_CONTACTS] != c.seen_contacts or s[T.S_COLLISIONS] != c.seen_collisions:
            self._publish_collision_event()
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

    def _apply_task_inputs(self):
        """The inputs the callbacks left for the loop: a Cartesian target, a target wrench, a collision reset."""
        c = self._configured
        f, s = c.tick_kernel.f, c.s
        if c.pending_target is not None:
            (f.target_R[:], f.target_p[:]), c.pending_target = c.pending_target, None
            s[T.S_TARGET_SET] = 1.0
        if c.pending_wrench is not None:
            f.target_wrench[:], c.pending_wrench = c.pending_wrench, None
        if c.reset_collision_pending:
            c.reset_collision_pending = False
            s[T.S_COLLIDED] = s[T.S_COLLISION_LEVEL] = 0.0
            s[T.S_ANCHOR] = 1.0
            c.reference_point = c.trajectory = None      # the reference the collision interrupted is not resumed
            c.applied_point = None
            self.get_logger().info("collision reset: resuming from the measured state")

    def _delivery_verdict(self):
        """On leaving safe mode: did the robot's side go silent, or did its joint states fail to
        reach this process? Late in transit: the ones that ended the outage arrive together, the
        oldest stamped within the watchdog's timeout of the last state taken before the outage, or
        as a full queue (the older ones pushed out). Lost in transit: the publisher's sequence
        numbers (qos.PolledSubscription.publications) went on during the outage, and some of the
        states they number never arrived. Each is counted, and said in the log ("" for a silent
        robot)."""
        c = self._configured
        backlog = c.backlog
        lost = self._lost_in_transit()
        said = ""
        if lost:
            c.lost_deliveries += 1
            said = (f"; the robot's side published {lost} more that never reached this process (their "
                    "publication sequence numbers): lost in transit")
        oldest = header_stamp_ns(backlog[0]) if len(backlog) >= 2 else None
        after = (oldest - c.supervisor.stamp_before_outage) * 1e-9 if oldest is not None else math.inf
        if len(backlog) >= 2 and (len(backlog) >= qos.SENSOR_DATA.depth or 0.0 < after <= c.supervisor.watchdog_timeout):
            c.late_deliveries += 1
            said = (f"; {len(backlog)} arrived at once, the oldest stamped {after:.3f} s after the last one "
                    f"before: they were late in transit to this process, the robot's side published on time"
                    f"{said}")
        return f"{said} (doc/running.md, \"Joint states late in transit\")" if said else ""

    def _lost_in_transit(self):
        """How many joint states the publisher of the newest one before the outage sent after it,
        up to the newest taken now, that this process never took (0 when unknown: an RMW without
        sequence numbers, or only other publishers now)."""
        c = self._configured
        before = c.joint_states.publication_before()
        if before is None or before[1] is None:
            return 0
        publisher, last = before
        taken = [number for sender, number in c.joint_states.publications()
                 if sender == publisher and number is not None]
        return max(0, max(taken) - last - len(taken)) if taken else 0

    def _take_joint_state(self, now):
        """Take every queued joint state and parse them newest first until one is accepted: the
        newest valid sample, whatever the backlog. True when a new sample was accepted."""
        c = self._configured
        messages = c.backlog = c.joint_states.take_all_raw()
        now_ns = time.time_ns()
        c.reader.new_time_base = c.supervisor.safe    # stamps that jumped back count once the watchdog tripped
        for raw in reversed(messages):
            if c.reader.read(raw, now_ns) == ACCEPTED:
                return True
        return False

    def _fourier(self, values):
        """(model indices, q0, a, b (n, L), w_f, and the series' buffers) of reference.fourier.*, a
        ValueError naming what does not fit."""
        c = self._configured
        names, harmonics = values["reference.fourier.joints"], values["reference.fourier.harmonics"]
        unknown = [name for name in names if name not in c.controlled_names]
        if not names or unknown or len(set(names)) != len(names):
            raise ValueError(f"parameter reference.fourier.joints: distinct controlled joints needed, got {names} "
                             f"(controlled: {', '.join(c.controlled_names)})")
        n = len(names)
        q0 = np.array(values["reference.fourier.q0"])
        a, b = np.array(values["reference.fourier.a"]), np.array(values["reference.fourier.b"])
        if harmonics < 1 or q0.shape != (n,) or a.shape != (n * harmonics,) or b.shape != (n * harmonics,):
            raise ValueError(f"parameters reference.fourier.*: {n} joints need {n} q0 and {n} x harmonics "
                             f"({harmonics}) a and b, got {q0.size}, {a.size} and {b.size}")
        joints = np.array([c.names.index(name) for name in names])
        return (joints, q0, a.reshape(n, harmonics), b.reshape(n, harmonics),
                2.0 * math.pi * values["reference.fourier.frequency"], np.zeros(n), np.zeros(n), np.zeros(n))

    def _on_sample(self, now):
        """A new accepted joint state: the supervisor's sample flags; the first since activate sets up
        the reference (its centre, the rate limit's seed, the posture)."""
        c = self._configured
        reader = c.reader
        if not c.supervisor.on_sample(now, reader.stamp, reader.has_effort):
            return
        c.centre[:] = reader.q
        if not c.commanded:
            self._seed_rate_limit()
        if c.fourier is not None:      # the joints the series does not move hold where they are
            c.q_d[:], c.v_d[:], c.a_d[:] = reader.q, 0.0, 0.0
        if c.reference_position:
            c.centre[c.controlled] = per_joint("reference.position", c.reference_position, len(c.controlled))
        if c.mapping is None:      # the Cartesian impedance's posture: the one at activation by default
            posture = c.tick_kernel.f.posture
            posture[:] = reader.q
            if c.posture:
                posture[c.controlled] = per_joint("cartesian.nullspace.posture", c.posture, len(c.controlled))

    def _seed_rate_limit(self):
        """Before the first command since configure there is none to limit the rate from: the robot
        holds itself (its brakes, or its own gravity compensation). The limit then starts from the
        hold torque at the first joint state, g(q) (zero when the robot compensates gravity), so that
        the first commands do not ramp up from zero while the arm sags."""
        c = self._configured
        if c.s[T.S_GRAVITY_BY_ROBOT] == 0.0 and c.mapping is None:
            c.tick_kernel.f.tau_prev[c.controlled] = gravity(c.model, c.model.create_data(), c.q)[c.controlled]

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
        f = c.tick_kernel.f       # the tracked reference: q_d blended from the last anchor
        m.views["position"][:] = f.q_r[c.controlled]
        m.views["velocity"][:] = f.v_r[c.controlled]
        m.views["effort"][:] = c.tau[c.controlled]
        c.desired_out.publish()
        if c.s[T.S_MODE] == T.CARTESIAN_MODE and c.s[T.S_POSE_OK]:
            m = c.pose_error_raw
            m.set_stamp(c.reader.stamp)
            m.views["angular"][:] = f.pose_error[:3]
            m.views["linear"][:] = f.pose_error[3:]
            c.pose_error_out.publish()

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
        if c.mapping is None:
            c.joint_gradient_raw.views["data"][:] = c.tick_kernel.f.joint_gradient
            c.joint_gradient_out.publish()
        if c.adaptation is not None and c.s[T.S_COUNT] == c.tick_kernel.window:
            c.adaptation.update(gradient)
            if c.mapping is None and c.joint_rate > 0.0:
                f = c.tick_kernel.f
                c.adaptation.update_joint_terms(f.joint_gradient, f.joint_sum_yy, c.joint_rate)
            old = c.tick_kernel.model
            c.tick_kernel.set_model(c.adaptation.model())
            c.tick_kernel.shift_momentum(old)
            c.estimate_raw.views["data"][:] = c.adaptation.phi
            c.estimate_out.publish()

    # ---------------------------------------------------------------- stopping
    def _stop_safely(self):
        """Stop the arm and leave the safe command last (on deactivate, shutdown from active, a loop
        error), at the loop's rate, on the caller's thread (the loop has stopped):
        1. brake: on each new joint state, the computed torque of a = -braking_gain v, until every
           controlled joint is slower than STOP_SPEED, braking_time has passed or the joint states
           are stale (watchdog_timeout);
        2. then the hold torque at the newest joint state (g(q), or zero with safe_mode zero), the
           rate limit ramping to it (at most 1 s); this command, with no velocity term, is what the
           robot holds;
        3. wait until every reliable subscriber of the command topic has acknowledged it (_deliver)."""
        c = self._configured
        if c is None or c.reader.stamp is None:
            return
        s = c.s
        s[T.S_ESTIMATE] = s[T.S_NEW_SAMPLE] = s[T.S_RESET] = s[T.S_ANCHOR] = 0.0
        s[T.S_WANT_WRENCH] = s[T.S_WANT_GRADIENT] = s[T.S_WANT_TWIST] = 0.0
        sup = c.supervisor
        s[T.S_SAFE_ZERO] = sup.safe_mode == "zero"
        period = 1.0 / c.rate_hz
        s[T.S_BRAKE], s[T.S_SAFE] = 1.0, 0.0
        start = now = time.monotonic()
        while now - start < c.braking_time and now - sup.last_sample_time <= sup.watchdog_timeout:
            if self._take_joint_state(now):
                sup.last_sample_time = now
                if np.all(np.abs(c.v[c.controlled]) < STOP_SPEED):
                    break
                self._publish_tick()
            time.sleep(max(0.0, period - (time.monotonic() - now)))
            now = time.monotonic()
        s[T.S_BRAKE], s[T.S_SAFE] = 0.0, 1.0
        for _ in range(int(round(1.0 / period))):
            limited = s[T.S_RATE_LIMITED]
            self._publish_tick()
            if s[T.S_RATE_LIMITED] == limited:
                break       # the hold torque went out whole
            time.sleep(period)
        self._deliver(c.command_pub, "the safe command")

    def _publish_tick(self):
        c = self._configured
        c.tick_kernel.tick()
        c.command_raw.views["data"][:] = c.tick_kernel.f.command
        c.command_out.publish()

    def _on_loop_error(self, error):
        self.get_logger().error(f"control loop stopped by an error: {error!r}; stopping the arm")
        self._stop_safely()

    # ---------------------------------------------------------------- diagnostics
    def counters(self):
        """The rejection, fallback and safety counters of /diagnostics, by their keys there."""
        c = self._configured
        values = {"rejected joint states": c.reader.rejected, "rejected references": c.rejected_references,
                  "rejected trajectories": c.rejected_trajectories,
                  "last rejected joint state": c.reader.last_rejection,
                  "last rejected reference or trajectory": c.last_rejection,
                  "watchdog trips": c.supervisor.watchdog_trips,
                  "watchdog trips on joint states late in transit": c.late_deliveries,
                  "watchdog trips on joint states lost in transit": c.lost_deliveries,
                  "joint states stamped ahead of this clock": c.reader.future_stamps,
                  "re-anchored references": int(c.s[T.S_ANCHORS]),
                  "re-anchored after large errors": int(c.s[T.S_ERROR_ANCHORS]),
                  "braked before re-anchoring": int(c.s[T.S_BRAKINGS_FIRST]),
                  "rate-limited commands": int(c.s[T.S_RATE_LIMITED])}
        values["non-finite commands replaced"] = int(c.s[T.S_NON_FINITE])
        values["estimator resets"] = int(c.s[T.S_ESTIMATOR_RESETS])
        values["estimator restarts after gaps"] = c.supervisor.estimator_restarts
        if c.mapping is not None:
            values["loop-closure failures"] = int(c.s[S_CLOSURE_FAILURES])
        if c.adaptation is not None:
            values["adaptation steps"] = c.adaptation.steps
        if c.mapping is None:
            values["rejected targets"] = c.rejected_targets
            if c.s[T.S_ESTIMATE]:
                values["joint torques for the observer"] = (
                    "the measured efforts" if c.s[T.S_EFFORT_MEASURED] else
                    "the commands (efforts all zero: a held robot; collision detection waits)" if c.s[T.S_HAS_EFFORT]
                    else "the commands (the joint states carry no efforts)")
            values["contacts"] = int(c.s[T.S_CONTACTS])
            values["collisions"] = int(c.s[T.S_COLLISIONS])
            values["collided"] = bool(c.s[T.S_COLLIDED])
            values["last collision"] = c.last_collision
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
                "safe mode": c.supervisor.safe,
                "safe mode final": c.supervisor.silent and c.supervisor.safe_mode_final,
            })
            error_sq, error_count = c.s[T.S_ERROR_SQ], c.s[T.S_ERROR_COUNT]
            if error_count:
                values["tracking error rms [rad]"] = f"{math.sqrt(error_sq / error_count):.3e}"
                c.s[T.S_ERROR_SQ] = c.s[T.S_ERROR_COUNT] = 0.0
            if self.loop.error is not None:
                level, message = DiagnosticStatus.ERROR, f"loop stopped: {self.loop.error!r}"
                values["fatal"] = "true"      # dyn-control bringup exits 3
            elif c.supervisor.silent:
                level, message = DiagnosticStatus.ERROR, (f"joint states stale for over {c.supervisor.safe_mode_timeout:g} "
                                                          f"s: {c.supervisor.safe_mode_final}")
            elif c.supervisor.safe:
                level, message = DiagnosticStatus.ERROR, f"safe mode ({c.supervisor.safe_mode}): joint states stale"
            elif c.s[T.S_COLLIDED]:
                level, message = DiagnosticStatus.ERROR, f"collided ({c.last_collision}): ~/reset_collision resumes"
            elif c.reader.stamp is None:
                level, message = DiagnosticStatus.WARN, "waiting for /joint_states"
            else:
                message = "running"
        self._send_diagnostics(status, level, message, values)


class _Configured:
    """Everything a configured controller owns (a fresh one per configure)."""
    rejected_references = 0
    rejected_trajectories = 0
    rejected_targets = 0
    last_collision = ""
    trajectory = None
    last_rejection = ""
    late_deliveries = 0     # watchdog trips ended by joint states that were late in transit
    lost_deliveries = 0     # watchdog trips after which joint states were missing (publication sequence numbers)
    backlog = ()            # the serialized joint states the tick took (valid until the next take)
    reference_point = None
    new_sample = False
    adaptation = None
    commanded = False       # a command was published since configure


def _reach(model, frame):
    """An upper bound of the distance from the root's origin to `frame`'s: the lengths of the links
    supporting it (the home offsets), the frame's own offset, and the travel of prismatic joints."""
    f_id = model.frame_id(frame)
    reach = float(np.linalg.norm(model.frame_p[f_id]))
    body = model.frame_body[f_id]
    while body >= 0:
        reach += float(np.linalg.norm(model.home_p[body]))
        if model.joint_types[body] == PRISMATIC:
            reach += max(abs(model.lower[body]), abs(model.upper[body]))
        body = model.parents[body]
    return reach


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
