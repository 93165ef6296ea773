"""dyn_controller: computed-torque control with a momentum observer of external wrenches and
online inertial-parameter gradients, as an rclpy LifecycleNode.

    ros2 run dyn_control controller --ros-args --params-file config/controller.yaml

configure: builds the model and the tick (control/tick.py, or control/closed_chain_tick.py for a
mapping.name: every buffer, one compiled kernel) and runs it once (warm-up). activate: starts the
loop thread (timing.RealtimeLoop) at rate_hz. A tick is constant-time: it takes the queued
/joint_states serialized (qos.py), parses the newest valid one only (wire.py), sets the tick's
flags (control/supervisor.py: a new sample, its dt, safe mode from the watchdog), calls it once and
publishes the command as bytes; the every-N-ticks messages fall on different ticks.

Here: the transitions, the ROS entities, the callbacks and the tick's I/O. Beside it:
controller_parameters.py (the schema and its checks: doc/parameters.md), controller_assembly.py
(the configured objects and the parameters' values in them, the reference's set-up and scheduling;
no ROS entity), controller_messages.py (what the loop publishes, /diagnostics), delivery.py (why joint
states stopped), inputs.py (the inputs' parsing). Topics and safety rules: doc/controller.md.
"""
import functools
import sys
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectoryPoint

from ..control import fourier
from ..control import tick as T
from ..control.collision import REACTIONS
from ..control import trajectory as trajectories
from ..dynamics import gravity
from ..model import PRISMATIC
from . import follow_joint_trajectory, params, preload, qos, trajectory_input
from .closed_chain import PARAMETER_PREFIX, node_mapping
from .controller_assembly import (activate, apply_live, apply_point, apply_task_inputs, assemble,
                                  closed_chain_default_frame, schedule_trajectory, set_up_reference)
from .delivery import delivery_verdict
from .controller_messages import (attach_messages, collision_event, diagnostic_counters, loop_status,
                                  publish_desired, publish_estimates, publish_gradient)
from .controller_parameters import PARAMETERS, check_closed_chain_values, check_values
from .inputs import ACCEPTED, cartesian_target, reference_from_point
from .lifecycle import LoopNode, spin
from .robot import (check_forward_controller_joints, joint_indices, load_robot, parameter_files, resolve_path,
                    with_joint_terms, with_payload)
from .timing import RealtimeLoop, default_cpu

_LIFECYCLE_PUBLISHERS = ("command_pub", "desired_pub", "external_pub", "wrench_pub", "gradient_pub", "twist_pub",
                         "estimate_pub", "joint_gradient_pub", "pose_error_pub", "collision_pub")
STOP_SPEED = 0.02    # [rad/s] below it on every controlled joint, the arm rests (braking stops)


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
            apply_live(self._configured, values)
            activate(self._configured, values)
            self._start_loop(values)
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
            check_closed_chain_values(values, model)
            mapping = node_mapping(self, model, values["mapping.name"])
            joints = joints or list(mapping.active_joints)
            if sorted(joints) != sorted(mapping.active_joints):
                raise ValueError(f"parameter joints: a closed chain is controlled at its active joints "
                                 f"{', '.join(mapping.active_joints)} (in any order), got {', '.join(joints)}")
        controlled = joint_indices(model, joints)
        check_forward_controller_joints(values["command_topic"], [model.actuated_joints[i] for i in controlled],
                                        parameter_files(sys.argv))
        frame = values["estimator.frame"] or (model.frame_names[-1] if mapping is None else
                                              closed_chain_default_frame(model, mapping))
        model.frame_id(frame)    # ValueError naming an unknown frame
        nv = model.nv
        n = len(controlled)
        check_values(values, n)
        c = self._configured = assemble(values, model, mapping, controlled, frame, self.get_logger())
        c.delivery_verdict = functools.partial(delivery_verdict, c)     # made once: the tick allocates nothing
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
        attach_messages(c)
        apply_live(self._configured, values)
        self.get_logger().info(
            f"robot {model.name!r}: {nv} joints, controlling {', '.join(c.controlled_names)}"
            + (f" (closed chain: {values['mapping.name']})" if mapping is not None else "") + "; "
            f"command on {c.command_pub.topic_name}; wrench estimate at {frame!r} in {model.root_name!r} axes; "
            f"gravity compensated by the {values['gravity_compensation']}")

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
        for names, destroy in ((_LIFECYCLE_PUBLISHERS, self.destroy_lifecycle_publisher),
                               (("labels_pub", "twist_labels_pub", "joint_labels_pub"), self.destroy_publisher),
                               (("reference_sub", "target_pose_sub", "target_wrench_sub"), self.destroy_subscription),
                               (("reset_collision_srv",), self.destroy_service)):
            for name in names:
                if hasattr(c, name):
                    destroy(getattr(c, name))
        for name in ("joint_states", "trajectory_sub"):
            if hasattr(c, name):
                getattr(c, name).destroy(self)
        if getattr(c, "action", None) is not None:
            c.action.destroy()

    # ---------------------------------------------------------------- parameters
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
                    apply_live(self._configured, values)
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
            c.pending_target = cartesian_target(msg, c.model, c.pose_data, c.q if c.reader.stamp is not None else None,
                                                c.control_frame, c.reach)
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

    # ---------------------------------------------------------------- trajectories (topic and action)
    def set_trajectory(self, points, start_tolerance=None):
        """The one way a trajectory becomes the reference, for ~/joint_trajectory and the
        ~/follow_joint_trajectory action (controller_assembly.schedule_trajectory): a ValueError while
        inactive, before the first joint state, collided, or for `points` it refuses. Returns the
        trajectory installed."""
        c = self._configured
        if self.state != "active" or c.reader.stamp is None:
            raise ValueError("the controller is not active with joint states yet")
        self._refuse_while_collided()
        return schedule_trajectory(c, points, start_tolerance)

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
    def _start_loop(self, values):
        """The real-time loop of the ticks (started by on_activate)."""
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
        if sup.watchdog(now, c.delivery_verdict):
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
            apply_point(c)
        elif c.fourier is not None and c.reference_point is None:
            joints, q0, a, b, omega, q, v, acc = c.fourier
            fourier.fourier_reference(t, q0, a, b, omega, q, v, acc)
            c.q_d[joints], c.v_d[joints], c.a_d[joints] = q, v, acc
            s[T.S_POINT] = 1.0
        if c.pending_target is not None or c.pending_wrench is not None or c.reset_collision_pending:
            apply_task_inputs(c, self.get_logger())
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
            event, collided = collision_event(c, self.get_name())
            if collided:
                self.get_logger().error(f"collision on {c.last_collision}; reaction: "
                                        f"{REACTIONS[int(s[T.S_REACTION])]}")
            c.collision_pub.publish(event)
        # the every-N-ticks messages, each on a tick of its own
        if publish_phase == 0:
            publish_desired(c)
        elif publish_phase == c.publish_period // 2:
            publish_estimates(c)
        if s[T.S_WANT_GRADIENT]:
            publish_gradient(c)
        if s[T.S_WANT_TWIST]:
            c.twist_raw.views["data"][:] = c.tick_kernel.f.twist_gradient
            c.twist_out.publish()

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

    def _on_sample(self, now):
        """A new accepted joint state: the supervisor's sample flags; the first since activate sets up
        the reference."""
        c = self._configured
        if c.supervisor.on_sample(now, c.reader.stamp, c.reader.has_effort):
            set_up_reference(c, c.reader.q)

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
        return diagnostic_counters(self._configured)

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
            level, message = loop_status(c, self.loop, values)
        self._send_diagnostics(status, level, message, values)


def main(args=None):
    spin(ControllerNode, args)


if __name__ == "__main__":
    main()
