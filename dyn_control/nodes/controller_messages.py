"""The controller's messages: the serialized templates of what its loop publishes, their
publishing on the loop's ticks, the gradient labels, and the counters and status of /diagnostics."""
import math

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import TwistStamped, WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String

from ..control import tick as T
from ..control.closed_chain_tick import S_CLOSURE_FAILURES
from ..model import JOINT_PARAMETER_NAMES
from .rcl_io import RawPublisher
from .wire import RawMessage, markers, vector_pair_template


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


def attach_messages(c):
    """Serialized templates of every message the loop publishes (wire.RawMessage), and the labels."""
    for name, raw in message_templates(c.model, c.controlled_names).items():
        setattr(c, f"{name}_raw", raw)
        setattr(c, f"{name}_out", RawPublisher(getattr(c, f"{name}_pub"), raw))
    c.labels_pub.publish(String(data="\n".join(c.tick_kernel.labels)))
    if c.mapping is None:
        if c.twist_enabled:
            c.twist_labels_pub.publish(String(data="\n".join(c.tick_kernel.twist_labels)))
        c.joint_labels_pub.publish(String(data="\n".join(
            f"{joint}/{term}" for joint in c.model.joint_names for term in JOINT_PARAMETER_NAMES)))


def publish_desired(c):
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


def publish_estimates(c):
    """~/external_torque and ~/wrench_estimate (computed by this tick's kernel call)."""
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


def publish_gradient(c):
    """~/parameter_gradient and, when adapting, one adaptation step (on a full window) after
    which the tick uses the new estimate, published on ~/inertial_parameters."""
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


def diagnostic_counters(c):
    """The rejection, fallback and safety counters of /diagnostics, by their keys there."""
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


def loop_status(c, loop, values):
    """(level, message) of /diagnostics for an active loop, its figures and the supervisor's state
    added to `values` (the tracking error's RMS since the last report, which starts over)."""
    s = loop.stats.summary()
    values.update({
        "rate [Hz]": f"{1.0 / loop.period:g}",
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
    sup = c.supervisor
    if loop.error is not None:
        values["fatal"] = "true"      # dyn-control bringup exits 3
        return DiagnosticStatus.ERROR, f"loop stopped: {loop.error!r}"
    if sup.silent:
        return DiagnosticStatus.ERROR, f"joint states stale for over {sup.safe_mode_timeout:g} s: {sup.safe_mode_final}"
    if sup.safe:
        return DiagnosticStatus.ERROR, f"safe mode ({sup.safe_mode}): joint states stale"
    if c.s[T.S_COLLIDED]:
        return DiagnosticStatus.ERROR, f"collided ({c.last_collision}): ~/reset_collision resumes"
    if c.reader.stamp is None:
        return DiagnosticStatus.WARN, "waiting for /joint_states"
    return DiagnosticStatus.OK, "running"


def collision_event(c, node_name):
    """(the ~/collision message, a collision or not): the residual's new level (contact or collision),
    the joint and link it is isolated to, and the residual; a collision is c.last_collision from now."""
    s = c.s
    collided = s[T.S_COLLISIONS] != c.seen_collisions
    c.seen_contacts, c.seen_collisions = s[T.S_CONTACTS], s[T.S_COLLISIONS]
    joint = int(s[T.S_COLLISION_JOINT])
    residual = c.tick_kernel.f.collision_residual if collided else c.tau_ext
    if collided:
        c.last_collision = (f"{c.names[joint]} (link {c.model.body_names[joint]}) at t = "
                            f"{s[T.S_COLLISION_TIME]:.3f} s, residual {np.abs(residual).max():.1f} N m")
    status = DiagnosticStatus(name=f"{node_name}: collision", hardware_id=c.model.name,
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
    return event, collided
