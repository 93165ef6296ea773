"""What a configured controller owns and does between its ROS inputs and outputs (no node, no ROS
entity): the configured objects built from the parameters' values, the live parameters put into the
tick's gains and flags and the supervisor, the Cartesian impedance's and collision detection's
settings, the reference on activate (sine, Fourier series), at the first joint state, from a
reference point and as a scheduled trajectory, the inputs the callbacks leave for the loop, and the
frames' reach."""
import math

import numpy as np

from ..control import tick as T
from ..control import trajectory as trajectories
from ..control.adaptation import InertialAdaptation
from ..control.closed_chain_tick import ClosedChainTick
from ..control.collision import REACTIONS
from ..control.supervisor import Supervisor
from ..dynamics import gravity
from ..model import PRISMATIC
from .inputs import JointStateReader
from .robot import per_joint


class Configured:
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
    delivery_verdict = None     # () -> what the log says of an outage on leaving safe mode (the node's)
    reference_point = None
    new_sample = False
    adaptation = None
    commanded = False       # a command was published since configure


def assemble(values, model, mapping, controlled, frame, log):
    """The configured objects of a controller of `model` (with a closed-chain `mapping` or None),
    controlling the joints `controlled` (indices), its estimator's wrench at `frame`: the tick, its
    flags and arrays, the supervisor (logging through `log`), the adaptation and the joint-state
    reader, from the parameters' values."""
    nv = model.nv
    c = Configured()
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
        c.reach = reach(model, c.control_frame)
        c.pose_data = model.create_data()
    elif values["control.frame"]:
        raise ValueError("parameter control.frame: no Cartesian impedance with a closed-chain mapping")
    f = c.tick_kernel.f
    c.s = f.s
    c.supervisor = Supervisor(c.s, log)
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
    return c


def apply_live(c, values):
    """Gains, safety settings and compensation, into the configured objects."""
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
    apply_task_space(c, values, period)


def apply_task_space(c, values, period):
    """The Cartesian impedance's gains and the collision detection's settings (trees only)."""
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


def fourier_series(c, values):
    """(model indices, q0, a, b (n, L), w_f, and the series' buffers) of reference.fourier.*, a
    ValueError naming what does not fit."""
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


def reach(model, frame):
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


def closed_chain_default_frame(model, mapping):
    """The estimator's frame of a closed chain without estimator.frame: the last frame on the body of
    the loop's frame A, where the branches meet (the five-bar: end_effector on link3)."""
    loop = mapping.loop_frames()
    if loop is None:
        return model.frame_names[-1]
    body = model.frame_body[model.frame_id(loop.frame_a)]
    return [name for name, b in zip(model.frame_names, model.frame_body) if b == body][-1]


def activate(c, values):
    """On activate: the reference (sine, Fourier series or the measured position), the publishing
    and gradient periods, the control mode, the supervisor and the tick started over."""
    n = len(c.controlled)
    c.reader.forget()
    c.reference_sine = values["reference.type"] == "sine"
    c.fourier = fourier_series(c, values) if values["reference.type"] == "fourier" else None
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


def set_up_reference(c, q):
    """At the first joint state since activate (positions `q`): the sine's centre (or
    reference.position), the rate limit's seed, the held joints of a Fourier series, and the
    Cartesian impedance's posture (the one at activation by default)."""
    c.centre[:] = q
    if not c.commanded:
        seed_rate_limit(c)
    if c.fourier is not None:      # the joints the series does not move hold where they are
        c.q_d[:], c.v_d[:], c.a_d[:] = q, 0.0, 0.0
    if c.reference_position:
        c.centre[c.controlled] = per_joint("reference.position", c.reference_position, len(c.controlled))
    if c.mapping is None:      # the Cartesian impedance's posture: the one at activation by default
        posture = c.tick_kernel.f.posture
        posture[:] = q
        if c.posture:
            posture[c.controlled] = per_joint("cartesian.nullspace.posture", c.posture, len(c.controlled))


def seed_rate_limit(c):
    """Before the first command since configure there is none to limit the rate from: the robot
    holds itself (its brakes, or its own gravity compensation). The limit then starts from the
    hold torque at the first joint state, g(q) (zero when the robot compensates gravity), so that
    the first commands do not ramp up from zero while the arm sags."""
    if c.s[T.S_GRAVITY_BY_ROBOT] == 0.0 and c.mapping is None:
        c.tick_kernel.f.tau_prev[c.controlled] = gravity(c.model, c.model.create_data(), c.q)[c.controlled]


def apply_point(c):
    """A new ~/reference point: the reference of the controlled joints from now on."""
    point = c.applied_point = c.reference_point
    c.q_d[c.controlled], c.v_d[c.controlled], c.a_d[c.controlled] = point
    c.s[T.S_POINT] = 1.0


def apply_task_inputs(c, log):
    """The inputs the callbacks left for the loop: a Cartesian target, a target wrench, a collision reset."""
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
        log.info("collision reset: resuming from the measured state")


def schedule_trajectory(c, points, start_tolerance):
    """The trajectory of `points` (control/trajectory.py: Points) judged (names, values, the start
    within `start_tolerance` of the measured positions) and built from the reference the controller
    has at its start (no jump; the current trajectory runs until then), installed as the reference.
    Returns it; a ValueError (InvalidJoints for the names) says why it is refused."""
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
