"""The controller's tick in one compiled call: reference, estimators, computed torque, safety.

`ControllerTick` owns every array the tick touches, packed into two flat buffers (kernels/packed.py),
and `tick()` runs `controller_tick`, a single `@njit(nogil=True)` kernel, on them. The kernel composes
the pieces of the control laws and estimators, each in its own module (shared with the closed
chain's tick, closed_chain_tick.py): reference.py, safety.py, computed_torque.py,
momentum_observer.py, parameter_gradient.py, and the tree's cartesian_impedance.py and collision.py.
Per tick:

1. the reference (q_d, v_d, a_d): a sine about `centre` (amplitude zero: hold), or a point the
   caller wrote (trajectories); joints not controlled follow their measured state. The tracked
   reference (q_r, v_r, a_r) is q_d blended from the last anchor at the measured state
   (safety.py): the caller anchors on activation and after safe mode or a gap, the tick itself
   when the tracking error exceeds s[S_ERROR_LIMIT];
2. on a new joint-state sample, once per tick whatever the backlog, with dt the stamp difference:
   - the generalized-momentum observer (De Luca and Mattone 2003; see momentum_observer.py):
     from the momentum balance the mean external torque over the step,
       tau_mean = (p_k - p_k-1) / dt - tau_applied - (drift_k-1 + drift_k) / 2,
     p = (M(q) + diag(I_a)) v, drift = C(q, v)^T v - g(q) - F_v v - F_c sgn_s(v) (the model's joint
     friction is known, not external), and r relaxes toward it as rdot = K_O (tau_ext - r)
     does, exactly: r += (1 - exp(-K_O dt)) (tau_mean - r),
   - the acceleration estimate, a low-passed difference of velocities (AccelerationFilter),
   - the gradient window: a ring of the last `window` samples' regressors Y_k (tau = Y phi) and
     torques tau_k (the applied torque less the model's joint torque, its joint terms held), and
     running sums sum_Yt = sum_k Y_k^T tau_k, sum_YYphi = sum_k Y_k^T (Y_k phi), so that dL/dphi =
     -sum_k Y_k^T (tau_k - Y_k phi) = sum_YYphi - sum_Yt; both cost O(nnz(Y)) a sample, about linear
     in the joints (after phi changes, sum_YYphi is rebuilt from the ring a few samples a tick:
     parameter_gradient.py),
   - the joint-twist gradient's running sum of -dtau/deta_k^T (tau_k - rnea(q_k, v_k, a_k))
     (see model_derivatives.twist_derivatives), each term evaluated with the model of its sample;
   a reset (first sample, a gap in the stamps) restarts them all at the current state;
   - with s[S_COLLISION_ON], collision detection on the observer's residual (collision.py): a
     collision latches the reaction of s[S_REACTION] until the caller clears s[S_COLLIDED];
3. the torque, by mode:
   - tracking, joint mode (s[S_MODE] JOINT_MODE): computed torque rnea(q, v, a_cmd) + I_a a_cmd + F_v v_r + F_c sgn_s(v_r), a_cmd =
     a_r + kd (v_r - v) + kp (q_r - q) (minus the estimated external torque with compensation): the
     model's rotor inertia, and its joint friction as a feedforward at the reference velocity (at the
     measured one, noise around v = 0 would flip the Coulomb term's sign);
   - tracking, Cartesian mode (CARTESIAN_MODE): the Cartesian impedance at the control frame,
     + C(q, v) v + g(q) + the joint friction at the measured velocity (cartesian_impedance.py), the
     equilibrium filtered toward the target each tick and restarted at the frame's pose on an anchor;
   - reacting to a collision: stop and reflex, the joint law above on collision.reaction_reference;
     float, the braking law below at the rate float_damping (the arm yields to a push, each joint's
     damping in proportion to its inertia);
   - braking (s[S_BRAKE], fresh joint states: the stop on deactivate): rnea(q, v, a_cmd) + I_a a_cmd,
     a_cmd = -brake_gain v (zero on the joints not controlled), which brakes every joint at the rate
     brake_gain whatever its inertia (no friction compensation while not tracking);
   - holding (s[S_SAFE], stale joint states): g(q) at the last sample, or zero (s[S_SAFE_ZERO]);
     no velocity term, since a stale velocity is an open-loop torque that accelerates the joint;
   with the gravity compensated by the robot, g(q) is left out of all of them; a non-finite result
   falls back to the held torque, then to zero; the result is clamped to the effort limits, zero on
   the joints not controlled, and changes by at most max_step per tick (safety.finish_command);
4. on request, the wrench at the estimator's frame, w = (J J^T + d^2 I)^-1 J r, and the gradients:
   the inertial parameters' (above) and the joint terms' (armature, viscous, Coulomb per joint,
   dL/dtheta from their own window sums, parameter_gradient.joint_window_add), and the joint twists'.

Flags and scalars are the entries of `s` (indices S_*). A tick allocates nothing.
"""
import numpy as np

from ..jit import njit
from ..kernels.coriolis import coriolis_matrix
from ..kernels.crba import crba
from ..kernels.inputs import all_finite
from ..kernels.joint_terms import ARMATURE, add_armature_torque, add_friction_torque, add_joint_torque, friction
from ..kernels.kinematics import LOCAL_WORLD_ALIGNED, frame_jacobian
from ..kernels.packed import Packed, copy_model, field1, field2, field3, field4, field_indices
from ..kernels.regressor import regressor
from ..kernels.rnea import rnea
from ..kernels.task_space import frame_world_pose, operational_space_inertia, pose_error
from ..kernels.twist_derivatives import twist_derivatives
from ..model import PARAMETER_NAMES
from .cartesian_impedance import filter_equilibrium, impedance_torque
from .collision import (FLOAT, REFLEX, REPORT, STOP, arm_after_restart, detect, in_contact, reaction_reference,
                        start_reaction)
from .computed_torque import braking_acceleration, scale_within_limits, tracking_acceleration
from .flags import *  # noqa: F403  (the flags S_*, NS: tick.S_* for the tick's callers)
from .momentum_observer import damped_least_squares, efforts_measured, observer_step
from .parameter_gradient import (filter_acceleration, joint_window_add, joint_window_gradient, window_gradient,
                                 pack_rows, row_starts, window_push, window_pushed)
from .reference import controlled_mask, follow_measured, sine_reference
from .safety import accumulate_tracking_error, finish_command, hold_torque, tracked_reference
from .trajectory import Trajectory

TWIST_COMPONENTS = ("wx", "wy", "wz", "vx", "vy", "vz")


def float_fields(nb, nv, window, ncontrolled, nnz=1):
    # nnz: the regressor's columns that can be non-zero, over its rows (parameter_gradient.row_starts)
    npar = 10 * nb
    return [
        # the model (phi changes with adaptation)
        ("screw_axes", (nb, 6)), ("home_R", (nb, 3, 3)), ("home_p", (nb, 3)), ("phi", (nb, 10)),
        ("joint_terms", (nb, 3)), ("base_accel", (6,)), ("frame_R", (3, 3)), ("frame_p", (3,)), ("effort_limit", (nv,)),
        # gains and reference parameters
        ("kp", (nv,)), ("kd", (nv,)), ("brake_gain", (nv,)), ("observer_gain", (nv,)),
        ("centre", (nv,)), ("amplitude", (nv,)),
        # the sample, the reference, the outputs
        ("q", (nv,)), ("v", (nv,)), ("effort", (nv,)), ("q_d", (nv,)), ("v_d", (nv,)), ("a_d", (nv,)),
        ("tau", (nv,)), ("command", (ncontrolled,)), ("tau_applied", (nv,)), ("wrench", (6,)),
        ("gradient", (npar,)), ("twist_gradient", (6 * nb,)), ("s", (NS,)),
        # estimator state
        ("p_prev", (nv,)), ("drift_prev", (nv,)), ("tau_ext", (nv,)), ("v_prev", (nv,)), ("acceleration", (nv,)),
        ("Y_ring", (window, nnz)), ("samples", (window, 4, nv)), ("sum_YYphi", (npar,)),
        ("sum_Yt", (npar,)), ("phi_window", (npar,)), ("in_sum", (window,)),
        ("twist_ring", (window, 6 * nb)), ("twist_sum", (6 * nb,)),
        # workspace of the kernels
        ("R", (nb, 3, 3)), ("p", (nb, 3)), ("V", (nb, 6)), ("Vdot", (nb, 6)), ("F", (nb, 6)),
        ("tmp6", (12, 6)), ("oR", (nb, 3, 3)), ("op", (nb, 3)), ("oS", (nb, 6)), ("oV", (nb, 6)),
        ("oPsi", (nb, 6)), ("oIc", (nb, 6, 6)), ("oBc", (nb, 6, 6)), ("phi_world", (nb, 10)),
        ("C", (nv, nv)), ("M", (nv, nv)), ("phi_composite", (nb, 10)),
        ("Y", (nv, npar)), ("ophi_c", (nb, 10)), ("vectors", (9, nb, 6)), ("eta_columns", (2, nb, 6, 6)),
        ("eta_pose", (4, 3)), ("dtau_deta", (nv, 6 * nb)), ("J", (6, nv)), ("A", (6, 6)),
        ("g", (nv,)), ("hold", (nv,)), ("zero", (nv,)), ("f_ext_zero", (nb, 6)), ("scratch", (4, nv)),
        # safety (safety.py): the tracked reference (q_d blended from the anchor), the anchor's
        # offsets, the previous command and the largest change of a command per tick
        ("q_r", (nv,)), ("v_r", (nv,)), ("a_r", (nv,)), ("offset_q", (nv,)), ("offset_v", (nv,)),
        ("tau_prev", (nv,)), ("max_step", (nv,)),
        # the joint terms' gradient window: per sample and joint y = [a, v, sgn_s(v)] and the applied
        # torque less the rigid bodies' (kernels/joint_terms.py), and their running sums
        ("joint_ring", (window, nv, 4)), ("joint_sum_yy", (nv, 3, 3)), ("joint_sum_yr", (nv, 3)),
        ("joint_gradient", (3 * nv,)),
        # Cartesian impedance (cartesian_impedance.py): the control frame on its body, the target and the
        # equilibrium filtered toward it, the frame's pose and pose error, the gains, the posture; workspace
        ("control_frame_R", (3, 3)), ("control_frame_p", (3,)), ("target_R", (3, 3)), ("target_p", (3,)),
        ("equilibrium_R", (3, 3)), ("equilibrium_p", (3,)), ("pose_R", (3, 3)), ("pose_p", (3,)),
        ("pose_error", (6,)), ("stiffness", (6,)), ("target_wrench", (6,)), ("nullspace_stiffness", (nv,)),
        ("nullspace_damping", (nv,)), ("posture", (nv,)), ("J_task", (6, nv)), ("Lambda", (6, 6)),
        ("J_bar", (nv, 6)), ("M_factor", (nv, nv)), ("J_Minv", (6, nv)), ("work33", (2, 3, 3)), ("work6", (2, 6)),
        # collision detection (collision.py): thresholds, float damping, the position at the collision
        # (moved by a push the stop gives way to), the retreat's direction, the residual at the last
        # collision, each joint's stop time
        ("lower_threshold", (nv,)), ("upper_threshold", (nv,)), ("float_damping", (nv,)), ("q_c", (nv,)),
        ("v_c", (nv,)), ("retreat", (nv,)), ("collision_residual", (nv,)), ("stop_times", (nv,)),
    ]


def int_fields(nb, ncontrolled):
    # columns: per joint, the range of the regressor's columns that can be non-zero (its subtree's
    # bodies); row_starts: where each row's columns start in the window's packed regressors
    return [("parents", (nb,)), ("columns", (nb, 2)), ("path", (nb,)), ("controlled", (ncontrolled,)),
            ("dims", (4,)),     # nb, window, frame body, number of controlled joints
            ("row_starts", (nb + 1,)),
            ("control_body", (1,))]     # the body of the Cartesian impedance's frame


_F = field_indices(float_fields(1, 1, 1, 1))
_I = field_indices(int_fields(1, 1))
(SCREW_AXES, HOME_R, HOME_P, PHI, JOINT_TERMS, BASE_ACCEL, FRAME_R, FRAME_P, EFFORT_LIMIT, KP, KD, BRAKE_GAIN,
 OBSERVER_GAIN, CENTRE, AMPLITUDE, Q, V_, EFFORT, Q_D, V_D, A_D, TAU, COMMAND, TAU_APPLIED, WRENCH,
 GRADIENT, TWIST_GRADIENT, S, P_PREV, DRIFT_PREV, TAU_EXT, V_PREV, ACCELERATION, Y_RING,
 SAMPLES, SUM_YYPHI, SUM_YT, PHI_WINDOW, IN_SUM, TWIST_RING, TWIST_SUM, R_, P_, BODY_V, BODY_VDOT, BODY_F,
 TMP6, OR, OP, OS, OV, OPSI, OIC, OBC, PHI_WORLD, C_, M_, PHI_COMPOSITE, Y_, OPHI_C, VECTORS, ETA_COLUMNS,
 ETA_POSE, DTAU_DETA, J_, A_, G_, HOLD, ZERO, F_EXT_ZERO, SCRATCH, Q_R, V_R, A_R, OFFSET_Q, OFFSET_V, TAU_PREV,
 MAX_STEP, JOINT_RING, JOINT_SUM_YY, JOINT_SUM_YR, JOINT_GRADIENT, CONTROL_FRAME_R, CONTROL_FRAME_P, TARGET_R,
 TARGET_P, EQUILIBRIUM_R, EQUILIBRIUM_P, POSE_R, POSE_P, POSE_ERROR, STIFFNESS, TARGET_WRENCH, NULLSPACE_STIFFNESS,
 NULLSPACE_DAMPING, POSTURE, J_TASK, LAMBDA, J_BAR, M_FACTOR, J_MINV, WORK33, WORK6, LOWER_THRESHOLD,
 UPPER_THRESHOLD, FLOAT_DAMPING, Q_C, V_C, RETREAT, COLLISION_RESIDUAL, STOP_TIMES) = range(len(_F))
PARENTS, COLUMNS, PATH, CONTROLLED, DIMS, ROW_STARTS, CONTROL_BODY = range(len(_I))


class TickBuffers:
    """What ControllerTick and closed_chain_tick.ClosedChainTick share around their compiled call:
    the packed float and int fields `f` and `i` and `kernel`, the compiled tick called with them
    (all set by the subclass), the flags `s`, and the warm-up, reset and window clearing.
    WINDOW_SUMS: the running sums of the gradient window."""

    WINDOW_SUMS = ("sum_YYphi", "sum_Yt", "in_sum")

    @property
    def s(self):
        return self.f.s

    def set_model(self, model):
        """Use `model` (the same robot, e.g. adapted inertial parameters) from the next tick on."""
        copy_model(model, self.f)
        self.model = model

    def tick(self):
        self.kernel(self.f.flat, self.f.offsets, self.i.flat, self.i.offsets)

    def warm_up(self):
        """Run the kernel with every branch on (estimators, gradients, the wrench, safe mode), on
        these buffers, and the trajectory sampler, so Numba compiles them (or loads them from its
        cache) now; then reset(). (A closed chain's kernel has no twist gradient: it ignores those
        flags.)"""
        s, f = self.f.s, self.f
        f.v[:] = 0.0
        for flag in (S_ESTIMATE, S_RESET, S_GRADIENTS, S_TWIST, S_WANT_WRENCH, S_WANT_GRADIENT, S_WANT_TWIST):
            s[flag] = 1.0
        s[S_DT] = 1e-3
        self.tick()
        s[S_RESET], s[S_NEW_SAMPLE] = 0.0, 1.0
        self.tick()
        s[S_SAFE] = 1.0
        self.tick()
        s[S_SAFE], s[S_BRAKE], s[S_ANCHOR] = 0.0, 1.0, 1.0
        self.tick()
        for flag in (S_ESTIMATE, S_GRADIENTS, S_TWIST, S_BRAKE):
            s[flag] = 0.0
        f.tau_prev[:] = 0.0
        s[S_ANCHORS] = s[S_ERROR_ANCHORS] = s[S_RATE_LIMITED] = 0.0
        Trajectory.through(0.0, (f.q, f.v, f.a_d), np.arange(1), np.ones(1), np.zeros((1, 1))).sample(
            0.5, f.q_d, f.v_d, f.a_d)     # the trajectory sampler the loop calls
        self.reset()

    def set_safety_defaults(self):
        """No torque-rate limit, no error limit, a blend of 1 s at least and at most 0.5 rad/s (the
        node sets its parameters)."""
        self.f.max_step[:] = np.inf
        self.f.s[S_ERROR_LIMIT] = np.inf
        self.f.s[S_BLEND_TIME] = 1.0
        self.f.s[S_BLEND_SPEED] = 0.5
        self.f.s[S_BRAKE_SPEED] = np.inf

    def reset(self):
        """No sample seen: estimators, window, per-tick flags, the blend and the tracking-error sums
        cleared (the counters of replaced commands and estimator resets stay, and so does the
        previous command, which the robot may still hold: the rate limit starts from it)."""
        f, s = self.f, self.f.s
        for k in (S_NEW_SAMPLE, S_RESET, S_SAFE, S_BRAKE, S_ANCHOR, S_BLENDING, S_POINT, S_WANT_WRENCH,
                  S_WANT_GRADIENT, S_WANT_TWIST, S_ERROR_SQ, S_ERROR_COUNT, S_WRENCH_OK, S_POSE_OK, S_COLLIDED,
                  S_COLLISION_LEVEL, S_BRAKING_FIRST):
            s[k] = 0.0
        for array in (f.p_prev, f.drift_prev, f.tau_ext, f.acceleration, f.tau):
            array[:] = 0.0
        self.clear_window()

    def clear_window(self):
        self.f.s[S_COUNT] = 0.0
        self.f.s[S_NEXT] = 0.0
        for name in self.WINDOW_SUMS:
            getattr(self.f, name)[:] = 0.0


class ControllerTick(TickBuffers):
    """Everything one tick of the controller computes with, and the call that computes it.

    model: a tree Model (no mimic coupling); controlled: indices of the controlled coordinates (the
    order of `command`); frame: the estimator's frame; window: samples in the gradient window."""

    WINDOW_SUMS = ("sum_YYphi", "sum_Yt", "in_sum", "twist_sum", "joint_sum_yy", "joint_sum_yr")

    def warm_up(self):
        """TickBuffers.warm_up, then the Cartesian impedance and every collision reaction."""
        super().warm_up()
        s, f = self.f.s, self.f
        saved = {name: getattr(f, name).copy() for name in ("lower_threshold", "upper_threshold", "tau_prev")}
        s[S_ESTIMATE] = s[S_RESET] = 1.0
        s[S_MODE] = CARTESIAN_MODE
        s[S_DAMPING_RATIO] = 1.0
        self.tick()
        s[S_RESET], s[S_NEW_SAMPLE], s[S_COLLISION_ON] = 0.0, 1.0, 1.0
        f.lower_threshold[:] = f.upper_threshold[:] = -1.0      # any residual is a collision
        s[S_DETECT_FROM] = -np.inf
        for reaction in (STOP, FLOAT, REFLEX):
            s[S_REACTION] = reaction
            s[S_COLLIDED] = s[S_COLLISION_LEVEL] = 0.0
            self.tick()
        for flag in (S_ESTIMATE, S_MODE, S_COLLISION_ON, S_REACTION, S_COLLIDED, S_COLLISION_LEVEL, S_CONTACTS,
                     S_COLLISIONS, S_COLLISION_JOINT, S_COLLISION_TIME, S_DETECT_FROM, S_POSE_OK, S_DAMPING_RATIO,
                     S_ANCHORS,
                     S_RATE_LIMITED, S_NON_FINITE):
            s[flag] = 0.0
        for name, value in saved.items():
            getattr(f, name)[:] = value
        self.reset()

    def set_model(self, model):
        """TickBuffers.set_model, the model's joint terms included."""
        super().set_model(model)
        self.f.joint_terms[:] = model.joint_terms

    def __init__(self, model, controlled, frame, window):
        if model.coupling is not None:
            raise ValueError("ControllerTick: mimic-coupled models are not supported (load with mimic=False)")
        nb, nv = model.nbodies, model.nv
        controlled = np.asarray(controlled, dtype=np.int64)
        self.nb, self.nv, self.window = nb, nv, int(window)
        columns = np.stack([10 * np.arange(nb), 10 * (subtree_ends(model.parents) + 1)], axis=1)
        starts = row_starts(columns)
        self.f = Packed(float_fields(nb, nv, self.window, controlled.size, starts[-1]))
        self.i = Packed(int_fields(nb, controlled.size), dtype=np.int64)
        self.kernel = controller_tick
        f, i = self.f, self.i
        i.parents[:] = model.parents
        i.columns[:] = columns
        i.row_starts[:] = starts
        i.controlled[:] = controlled
        f_id = model.frame_id(frame)
        i.dims[:] = nb, self.window, model.frame_body[f_id], controlled.size
        f.frame_R[:] = model.frame_R[f_id]
        f.frame_p[:] = model.frame_p[f_id]
        self.set_control_frame(model, frame)
        limits = np.array([model.effort_limit[model.joint_names.index(n)] for n in model.actuated_joints])
        f.effort_limit[:] = limits
        self.set_model(model)
        f.s[S_CUTOFF_HZ] = 20.0      # the controller's default cutoff of the acceleration filter [Hz]
        self.set_safety_defaults()
        self.labels = [f"{body}/{p}" for body in model.body_names for p in PARAMETER_NAMES]
        self.twist_labels = [f"{joint}/{c}" for joint in model.joint_names for c in TWIST_COMPONENTS]

    def set_control_frame(self, model, frame):
        """The Cartesian impedance's frame (a link or joint frame of the model)."""
        f_id = model.frame_id(frame)
        self.i.control_body[0] = model.frame_body[f_id]
        self.f.control_frame_R[:] = model.frame_R[f_id]
        self.f.control_frame_p[:] = model.frame_p[f_id]

    def shift_momentum(self, old_model):
        """After set_model: shift the observer's last momentum by the change of (M(q) + diag(I_a)) v at
        the current sample, so the estimate goes on without a jump (call once, with the model used
        before). M(q) v is rnea(q, 0, v) without gravity, linear in phi: its change is that rnea with
        the change of phi, one pass on the tick's workspace (with set_model 29 us on tiago's 48 joints,
        where two crba on new Data took 8.7 ms of the loop thread at every adaptation step)."""
        f, i = self.f, self.i
        shift = np.empty(self.nv)
        no_gravity = f.f_ext_zero[0]
        rnea(i.parents, f.screw_axes, f.home_R, f.home_p, self.model.phi - old_model.phi, f.q, f.zero, f.v,
             no_gravity, f.f_ext_zero, f.R, f.p, f.V, f.Vdot, f.F, f.tmp6, shift)
        shift += (self.model.joint_terms[:, ARMATURE] - old_model.joint_terms[:, ARMATURE]) * f.v
        f.p_prev += shift

    def window_samples(self):
        """The gradient window's samples (count, 4, nv): q, v, a and the applied torque less the model's
        joint torque, oldest first (a copy)."""
        count, slot = int(self.f.s[S_COUNT]), int(self.f.s[S_NEXT])
        order = (np.arange(count) + (slot - count)) % self.window
        return self.f.samples[order].copy()


def subtree_ends(parents):
    """Last body of each body's subtree (bodies in depth-first order: a subtree is contiguous)."""
    nb = len(parents)
    end = np.arange(nb)
    for i in range(nb - 1, -1, -1):
        j = parents[i]
        if j >= 0:
            end[j] = max(end[j], end[i])
    return end


@njit(cache=True, nogil=True)
def controller_tick(f, fo, ints, io):
    dims = field1(ints, io, DIMS, 4)
    nb, frame_body, nc = dims[0], dims[2], dims[3]
    nv = nb
    npar = 10 * nb
    controlled = field1(ints, io, CONTROLLED, nc)
    s = field1(f, fo, S, NS)
    parents, screw_axes, home_R, home_p, phi, base_accel = _model(f, fo, ints, io, nb)
    q = field1(f, fo, Q, nv)
    v = field1(f, fo, V_, nv)
    q_d = field1(f, fo, Q_D, nv)
    v_d = field1(f, fo, V_D, nv)
    a_d = field1(f, fo, A_D, nv)
    tau = field1(f, fo, TAU, nv)
    tau_ext = field1(f, fo, TAU_EXT, nv)
    g = field1(f, fo, G_, nv)
    hold = field1(f, fo, HOLD, nv)
    zero = field1(f, fo, ZERO, nv)
    f_ext_zero = field2(f, fo, F_EXT_ZERO, nb, 6)
    R = field3(f, fo, R_, nb, 3, 3)
    p = field2(f, fo, P_, nb, 3)
    V = field2(f, fo, BODY_V, nb, 6)
    Vdot = field2(f, fo, BODY_VDOT, nb, 6)
    F = field2(f, fo, BODY_F, nb, 6)
    tmp6 = field2(f, fo, TMP6, 12, 6)
    robot_gravity = s[S_GRAVITY_BY_ROBOT] != 0.0

    # 1. the reference q_d (reference.py) and the tracked reference q_r: q_d blended from the last
    #    anchor (safety.py)
    if s[S_POINT] == 0.0:
        sine_reference(s[S_T], s[S_OMEGA], field1(f, fo, CENTRE, nv), field1(f, fo, AMPLITUDE, nv), q_d, v_d, a_d)
    mask = field1(f, fo, SCRATCH, nv)      # 1 on controlled joints (scratch row 0)
    controlled_mask(controlled, mask)
    follow_measured(mask, q, v, q_d, v_d, a_d)
    tracking = s[S_SAFE] == 0.0 and s[S_BRAKE] == 0.0
    q_r = field1(f, fo, Q_R, nv)
    v_r = field1(f, fo, V_R, nv)
    a_r = field1(f, fo, A_R, nv)
    if s[S_ANCHOR] != 0.0:
        s[S_POSE_OK] = 0.0      # the Cartesian equilibrium restarts at the frame's pose too
    # (a large joint tracking error re-anchors in joint mode only, and not while a collision reaction
    # holds the arm: the Cartesian law and the reaction have references of their own)
    if tracked_reference(s, tracking and s[S_MODE] == JOINT_MODE and s[S_COLLIDED] == 0.0, mask, controlled, q, v,
                         q_d, v_d, a_d, field1(f, fo, OFFSET_Q, nv), field1(f, fo, OFFSET_V, nv), q_r, v_r, a_r):
        tracking = False        # too fast to re-anchor: brake first (safety.py)

    # g(q): the hold torque, the observer and, with the robot compensating gravity, the command
    rnea(parents, screw_axes, home_R, home_p, phi, q, zero, zero, base_accel, f_ext_zero, R, p, V, Vdot,
         F, tmp6, g)
    hold_torque(s[S_SAFE_ZERO] != 0.0 or robot_gravity, g, hold)

    # 2. estimators, once per new sample
    if s[S_ESTIMATE] != 0.0 and (s[S_NEW_SAMPLE] != 0.0 or s[S_RESET] != 0.0):
        tau_applied = field1(f, fo, TAU_APPLIED, nv)
        effort = field1(f, fo, EFFORT, nv)
        measured = efforts_measured(s[S_HAS_EFFORT] != 0.0, effort)
        if measured:
            tau_applied[:] = effort                      # measured: the whole joint torque
        else:
            tau_applied[:] = tau                         # the last command, in effect until now
            if robot_gravity:
                for k in range(nv):
                    tau_applied[k] += g[k]
        # a change of the torque's source (a held robot starts reporting what it applies) starts the
        # momentum balance over, and detection after the observer has settled on it (collision.py)
        switched = s[S_RESET] == 0.0 and measured != (s[S_EFFORT_MEASURED] != 0.0)
        s[S_EFFORT_MEASURED] = 1.0 if measured else 0.0
        if s[S_RESET] != 0.0 or switched or not _estimators_step(f, fo, ints, io, s[S_DT]):
            if s[S_RESET] == 0.0 and not switched:
                s[S_ESTIMATOR_RESETS] += 1.0
            _reset_estimators(f, fo, ints, io)
            arm_after_restart(s, field1(f, fo, OBSERVER_GAIN, nv))

    # collision detection on the observer's residual, once per new sample while tracking and no reaction
    # holds, and not while the joint states carry efforts that are all zero (a held robot: collision.py)
    held = s[S_HAS_EFFORT] != 0.0 and s[S_EFFORT_MEASURED] == 0.0
    if (s[S_COLLISION_ON] != 0.0 and tracking and s[S_NEW_SAMPLE] != 0.0 and s[S_ESTIMATE] != 0.0 and not held
            and s[S_COLLIDED] == 0.0):
        # the thresholds grow with the joint reference's acceleration, or in Cartesian mode (no joint
        # reference) with the estimated one
        acceleration = a_r if s[S_MODE] == JOINT_MODE else field1(f, fo, ACCELERATION, nv)
        if detect(s, tau_ext, field1(f, fo, LOWER_THRESHOLD, nv), field1(f, fo, UPPER_THRESHOLD, nv), acceleration,
                  mask, field1(f, fo, COLLISION_RESIDUAL, nv)) and s[S_REACTION] != REPORT:
            # the inertia at the collision, the rotors' with it: how fast each joint may stop
            M = field2(f, fo, M_, nv, nv)
            crba(parents, screw_axes, home_R, home_p, phi, q, R, p, field3(f, fo, OR, nb, 3, 3),
                 field2(f, fo, OP, nb, 3), field2(f, fo, OS, nb, 6), field2(f, fo, PHI_COMPOSITE, nb, 10), F, M)
            joint_terms = field2(f, fo, JOINT_TERMS, nb, 3)
            for k in range(nv):
                M[k, k] += joint_terms[k, ARMATURE]
            start_reaction(s, q, v, tau_ext, mask, M, field1(f, fo, MAX_STEP, nv), field1(f, fo, EFFORT_LIMIT, nv),
                           field1(f, fo, Q_C, nv), field1(f, fo, V_C, nv), field1(f, fo, RETREAT, nv),
                           field1(f, fo, STOP_TIMES, nv))

    # 3. the torque. Held (stale joint states): g(q) or zero. Braking (fresh joint states): the
    #    computed torque of a_cmd = -brake_gain v. Reacting to a collision: stop or reflex, the
    #    computed torque toward collision.reaction_reference; float, the computed torque of
    #    a_cmd = -float_damping v.
    #    Tracking: the computed torque on the tracked reference (joint mode) or the Cartesian impedance.
    reacting = tracking and s[S_COLLIDED] != 0.0 and s[S_REACTION] != REPORT
    if s[S_SAFE] != 0.0:
        tau[:] = hold
    elif tracking and not reacting and s[S_MODE] == CARTESIAN_MODE:
        if not _cartesian_torque(f, fo, ints, io, tau):
            tau[0] = np.nan
        if robot_gravity:
            for k in range(nv):
                tau[k] -= g[k]
    else:
        floating = reacting and s[S_REACTION] == FLOAT
        if reacting and not floating:
            # giving way while the residual shows a push (collision.py)
            pushed = s[S_ESTIMATE] != 0.0 and in_contact(s, tau_ext, field1(f, fo, LOWER_THRESHOLD, nv), a_r, mask)
            reaction_reference(s[S_T] - s[S_COLLISION_TIME], field1(f, fo, STOP_TIMES, nv), s[S_REFLEX_DURATION],
                               s[S_REFLEX_DISTANCE] if s[S_REACTION] == REFLEX else 0.0, q, pushed,
                               field1(f, fo, Q_C, nv), field1(f, fo, V_C, nv), field1(f, fo, RETREAT, nv),
                               q_r, v_r, a_r)
        a_cmd = field2(f, fo, SCRATCH, 4, nv)[1]
        if tracking and not floating:
            tracking_acceleration(q_r, v_r, a_r, q, v, field1(f, fo, KP, nv), field1(f, fo, KD, nv), a_cmd)
        else:
            braking_acceleration(v, field1(f, fo, FLOAT_DAMPING if floating else BRAKE_GAIN, nv), mask, a_cmd)
        finite = rnea(parents, screw_axes, home_R, home_p, phi, q, v, a_cmd, base_accel, f_ext_zero, R, p,
                      V, Vdot, F, tmp6, tau)
        if not finite:
            tau[0] = np.nan
        joint_terms = field2(f, fo, JOINT_TERMS, nb, 3)
        add_armature_torque(joint_terms, a_cmd, tau)
        if tracking and not floating:
            add_friction_torque(joint_terms, v_r, tau)
        elif finite:        # braking, floating: scaled as a whole within the effort limits (computed_torque.py)
            bias = field2(f, fo, SCRATCH, 4, nv)[2]
            if rnea(parents, screw_axes, home_R, home_p, phi, q, v, zero, base_accel, f_ext_zero, R, p,
                    V, Vdot, F, tmp6, bias):
                scale_within_limits(tau, bias, field1(f, fo, EFFORT_LIMIT, nv), mask)
        for k in range(nv):
            if robot_gravity:
                tau[k] -= g[k]
            if tracking and not reacting and s[S_COMPENSATION] != 0.0:
                tau[k] -= tau_ext[k]
        if tracking and not reacting and s[S_NEW_SAMPLE] != 0.0:
            accumulate_tracking_error(s, q_r, q, controlled)
    finish_command(s, tau, hold, mask, field1(f, fo, EFFORT_LIMIT, nv), field1(f, fo, TAU_PREV, nv),
                   field1(f, fo, MAX_STEP, nv), controlled, field1(f, fo, COMMAND, nc))

    # 4. requested outputs
    if s[S_WANT_WRENCH] != 0.0:
        s[S_WRENCH_OK] = 1.0 if _wrench(f, fo, ints, io, frame_body, s[S_WRENCH_DAMPING]) else 0.0
    if s[S_WANT_GRADIENT] != 0.0:
        starts = field1(ints, io, ROW_STARTS, nb + 1)
        window_gradient(field2(f, fo, Y_RING, dims[1], starts[nb]), field2(ints, io, COLUMNS, nb, 2), starts,
                        int(s[S_NEXT]), int(s[S_COUNT]), field1(f, fo, PHI, npar), field1(f, fo, PHI_WINDOW, npar),
                        field1(f, fo, IN_SUM, dims[1]), field1(f, fo, SUM_YYPHI, npar), field1(f, fo, SUM_YT, npar),
                        field1(f, fo, GRADIENT, npar))
        joint_window_gradient(field3(f, fo, JOINT_SUM_YY, nv, 3, 3), field2(f, fo, JOINT_SUM_YR, nv, 3),
                              field2(f, fo, JOINT_TERMS, nb, 3), field1(f, fo, JOINT_GRADIENT, 3 * nv))
    if s[S_WANT_TWIST] != 0.0:
        field1(f, fo, TWIST_GRADIENT, 6 * nb)[:] = field1(f, fo, TWIST_SUM, 6 * nb)


@njit(cache=True, nogil=True)
def _cartesian_torque(f, fo, ints, io, tau):
    """The Cartesian impedance torque (cartesian_impedance.py) at the control frame, plus C v + g and
    the model's joint friction at the measured velocity: the equilibrium filtered one step toward
    the target (the equilibrium set to the frame's pose on an anchor, and so is the target when
    none was given: the law starts where the arm is). False when a piece is not finite or not positive definite."""
    nb = field1(ints, io, DIMS, 4)[0]
    nv = nb
    s = field1(f, fo, S, NS)
    parents, screw_axes, home_R, home_p, phi, base_accel = _model(f, fo, ints, io, nb)
    q = field1(f, fo, Q, nv)
    v = field1(f, fo, V_, nv)
    R, p, oR, op, _ = _kinematics(f, fo, nb)
    body = field1(ints, io, CONTROL_BODY, 1)[0]
    frame_R = field2(f, fo, CONTROL_FRAME_R, 3, 3)
    frame_p = field1(f, fo, CONTROL_FRAME_P, 3)
    J = field2(f, fo, J_TASK, 6, nv)
    if not frame_jacobian(parents, screw_axes, home_R, home_p, q, field1(ints, io, PATH, nb), R, p, oR, op, body,
                          frame_R, frame_p, LOCAL_WORLD_ALIGNED, J):
        return False
    pose_R = field2(f, fo, POSE_R, 3, 3)
    pose_p = field1(f, fo, POSE_P, 3)
    frame_world_pose(oR, op, body, frame_R, frame_p, pose_R, pose_p)
    equilibrium_R = field2(f, fo, EQUILIBRIUM_R, 3, 3)
    equilibrium_p = field1(f, fo, EQUILIBRIUM_P, 3)
    target_R = field2(f, fo, TARGET_R, 3, 3)
    target_p = field1(f, fo, TARGET_P, 3)
    work33 = field3(f, fo, WORK33, 2, 3, 3)
    work6 = field2(f, fo, WORK6, 2, 6)
    if s[S_POSE_OK] == 0.0:        # the first Cartesian tick since an anchor: start at the pose
        equilibrium_R[:, :] = pose_R
        equilibrium_p[:] = pose_p
        if s[S_TARGET_SET] == 0.0:
            target_R[:, :] = pose_R
            target_p[:] = pose_p
        s[S_POSE_OK] = 1.0
    filter_equilibrium(s[S_TARGET_ALPHA], target_R, target_p, equilibrium_R, equilibrium_p, work33, work6[0, :3])
    e = field1(f, fo, POSE_ERROR, 6)
    if not pose_error(pose_R, pose_p, equilibrium_R, equilibrium_p, e):
        return False
    M = field2(f, fo, M_, nv, nv)
    crba(parents, screw_axes, home_R, home_p, phi, q, R, p, oR, op, field2(f, fo, OS, nb, 6),
         field2(f, fo, PHI_COMPOSITE, nb, 10), field2(f, fo, BODY_F, nb, 6), M)
    joint_terms = field2(f, fo, JOINT_TERMS, nb, 3)
    for k in range(nv):
        M[k, k] += joint_terms[k, ARMATURE]
    Lambda = field2(f, fo, LAMBDA, 6, 6)
    J_bar = field2(f, fo, J_BAR, nv, 6)
    if not operational_space_inertia(M, J, s[S_SINGULAR_DAMPING], field2(f, fo, M_FACTOR, nv, nv),
                                     field2(f, fo, J_MINV, 6, nv), field2(f, fo, A_, 6, 6), Lambda, J_bar):
        return False
    impedance_torque(J, J_bar, Lambda, v, q, e, field1(f, fo, STIFFNESS, 6), s[S_DAMPING_RATIO],
                     field1(f, fo, TARGET_WRENCH, 6), field1(f, fo, NULLSPACE_STIFFNESS, nv),
                     field1(f, fo, NULLSPACE_DAMPING, nv), field1(f, fo, POSTURE, nv), work6,
                     field2(f, fo, SCRATCH, 4, nv)[1], tau)
    bias = field2(f, fo, SCRATCH, 4, nv)[2]      # C(q, v) v + g(q)
    zero = field1(f, fo, ZERO, nv)
    if not rnea(parents, screw_axes, home_R, home_p, phi, q, v, zero, base_accel, field2(f, fo, F_EXT_ZERO, nb, 6),
                R, p, field2(f, fo, BODY_V, nb, 6), field2(f, fo, BODY_VDOT, nb, 6), field2(f, fo, BODY_F, nb, 6),
                field2(f, fo, TMP6, 12, 6), bias):
        return False
    for k in range(nv):
        tau[k] += bias[k]
    add_friction_torque(joint_terms, v, tau)
    return True


@njit(cache=True, nogil=True, inline="always")
def _model(f, fo, ints, io, nb):
    """Views of the model: parents, screw axes, home rotations and translations, inertial
    parameters, base acceleration."""
    return (field1(ints, io, PARENTS, nb), field2(f, fo, SCREW_AXES, nb, 6), field3(f, fo, HOME_R, nb, 3, 3),
            field2(f, fo, HOME_P, nb, 3), field2(f, fo, PHI, nb, 10), field1(f, fo, BASE_ACCEL, 6))


@njit(cache=True, nogil=True, inline="always")
def _kinematics(f, fo, nb):
    """Views of the kinematics' buffers: each body's rotation and translation from its parent, its
    rotation and origin in the root frame, its joint's screw in the root frame."""
    return (field3(f, fo, R_, nb, 3, 3), field2(f, fo, P_, nb, 3), field3(f, fo, OR, nb, 3, 3),
            field2(f, fo, OP, nb, 3), field2(f, fo, OS, nb, 6))


@njit(cache=True, nogil=True)
def _reset_estimators(f, fo, ints, io):
    """Observer, acceleration filter and windows start over at the current sample."""
    dims = field1(ints, io, DIMS, 4)
    nb = dims[0]
    nv = nb
    s = field1(f, fo, S, NS)
    v = field1(f, fo, V_, nv)
    _momentum_terms(f, fo, ints, io, field1(f, fo, P_PREV, nv), field1(f, fo, DRIFT_PREV, nv))
    field1(f, fo, TAU_EXT, nv)[:] = 0.0
    field1(f, fo, ACCELERATION, nv)[:] = 0.0
    field1(f, fo, V_PREV, nv)[:] = v
    s[S_FILTER_STARTED] = 1.0
    s[S_COUNT] = 0.0
    s[S_NEXT] = 0.0
    field1(f, fo, SUM_YYPHI, 10 * nb)[:] = 0.0
    field1(f, fo, SUM_YT, 10 * nb)[:] = 0.0
    field1(f, fo, IN_SUM, dims[1])[:] = 0.0
    field1(f, fo, TWIST_SUM, 6 * nb)[:] = 0.0
    field1(f, fo, JOINT_SUM_YY, 9 * nb)[:] = 0.0
    field1(f, fo, JOINT_SUM_YR, 3 * nb)[:] = 0.0


@njit(cache=True, nogil=True)
def _momentum_terms(f, fo, ints, io, momentum, drift):
    """At the current sample: momentum = (M(q) + diag(I_a)) v and drift = C(q, v)^T v - g(q) -
    F_v v - F_c sgn_s(v), the terms of pdot = tau + drift + tau_ext (the model's joint friction is a
    known torque, not an external one; g from this tick's field g); M and C into their fields."""
    nb = field1(ints, io, DIMS, 4)[0]
    nv = nb
    parents, screw_axes, home_R, home_p, phi, _ = _model(f, fo, ints, io, nb)
    q = field1(f, fo, Q, nv)
    v = field1(f, fo, V_, nv)
    g = field1(f, fo, G_, nv)
    R, p, oR, op, oS = _kinematics(f, fo, nb)
    M = field2(f, fo, M_, nv, nv)
    C = field2(f, fo, C_, nv, nv)
    coriolis_matrix(parents, screw_axes, home_R, home_p, phi, q, v, R, p, oR, op, oS,
                    field2(f, fo, OV, nb, 6), field2(f, fo, OPSI, nb, 6), field3(f, fo, OIC, nb, 6, 6),
                    field3(f, fo, OBC, nb, 6, 6), field2(f, fo, PHI_WORLD, nb, 10), field2(f, fo, TMP6, 12, 6),
                    C)
    crba(parents, screw_axes, home_R, home_p, phi, q, R, p, oR, op, oS, field2(f, fo, PHI_COMPOSITE, nb, 10),
         field2(f, fo, BODY_F, nb, 6), M)
    joint_terms = field2(f, fo, JOINT_TERMS, nb, 3)
    for i in range(nv):
        ctv = 0.0
        mv = joint_terms[i, ARMATURE] * v[i]
        for j in range(nv):
            ctv += C[j, i] * v[j]
            mv += M[i, j] * v[j]
        drift[i] = ctv - g[i] - friction(joint_terms, i, v[i])
        momentum[i] = mv


@njit(cache=True, nogil=True)
def _estimators_step(f, fo, ints, io, dt):
    """Observer, acceleration filter and the gradient windows over one sample step of dt seconds.
    False (the caller resets) when a result is not finite."""
    dims = field1(ints, io, DIMS, 4)
    nb, window = dims[0], dims[1]
    nv = nb
    npar = 10 * nb
    s = field1(f, fo, S, NS)
    parents, screw_axes, home_R, home_p, phi, base_accel = _model(f, fo, ints, io, nb)
    q = field1(f, fo, Q, nv)
    v = field1(f, fo, V_, nv)
    tau_applied = field1(f, fo, TAU_APPLIED, nv)
    R, p, oR, op, oS = _kinematics(f, fo, nb)
    tmp6 = field2(f, fo, TMP6, 12, 6)
    scratch = field2(f, fo, SCRATCH, 4, nv)
    momentum, drift = scratch[3], scratch[2]

    # momentum observer (momentum_observer.py)
    _momentum_terms(f, fo, ints, io, momentum, drift)
    r = field1(f, fo, TAU_EXT, nv)
    observer_step(dt, momentum, drift, tau_applied, field1(f, fo, OBSERVER_GAIN, nv), field1(f, fo, P_PREV, nv),
                  field1(f, fo, DRIFT_PREV, nv), r)
    if not all_finite(r):
        return False

    # acceleration (parameter_gradient.py)
    a = field1(f, fo, ACCELERATION, nv)
    filter_acceleration(dt, s[S_CUTOFF_HZ], v, field1(f, fo, V_PREV, nv), a)
    if not all_finite(a):
        return False
    if s[S_GRADIENTS] == 0.0:
        return True

    # the gradient windows: slot `slot` takes this sample, the oldest leaves the sums first
    slot = int(s[S_NEXT])
    count = int(s[S_COUNT])
    full = count == window
    columns = field2(ints, io, COLUMNS, nb, 2)
    starts = field1(ints, io, ROW_STARTS, nb + 1)
    Y_ring = field2(f, fo, Y_RING, window, starts[nb])
    samples = field3(f, fo, SAMPLES, window, 4, nv)
    tau_ring = samples[:, 3]
    flat_phi = field1(f, fo, PHI, npar)
    phi_window = field1(f, fo, PHI_WINDOW, npar)
    in_sum = field1(f, fo, IN_SUM, window)
    sum_YYphi = field1(f, fo, SUM_YYPHI, npar)
    sum_Yt = field1(f, fo, SUM_YT, npar)
    Y = field2(f, fo, Y_, nv, npar)
    window_push(Y_ring, tau_ring, columns, starts, slot, count, flat_phi, phi_window, in_sum, sum_YYphi, sum_Yt)
    if not regressor(parents, screw_axes, home_R, home_p, q, v, a, base_accel, R, p, oR, op, oS,
                     field2(f, fo, BODY_V, nb, 6), field2(f, fo, BODY_VDOT, nb, 6), tmp6, Y):
        return False
    # the rigid bodies' share of the applied torque: less the model's joint torque (its joint terms
    # are held, the gradient is the inertial parameters')
    tau_rigid = scratch[1]
    tau_rigid[:] = 0.0
    add_joint_torque(field2(f, fo, JOINT_TERMS, nb, 3), v, a, tau_rigid)
    for k in range(nv):
        tau_rigid[k] = tau_applied[k] - tau_rigid[k]
    samples[slot, 0] = q
    samples[slot, 1] = v
    samples[slot, 2] = a
    samples[slot, 3] = tau_rigid
    pack_rows(Y, columns, starts, Y_ring[slot])
    count = window_pushed(Y_ring, tau_ring, columns, starts, slot, count, phi_window, in_sum, sum_YYphi, sum_Yt)
    joint_window_add(Y, flat_phi, columns, v, a, tau_applied,
                     field3(f, fo, JOINT_RING, window, nv, 4)[slot], full, field3(f, fo, JOINT_SUM_YY, nv, 3, 3),
                     field2(f, fo, JOINT_SUM_YR, nv, 3))
    if s[S_TWIST] != 0.0:
        twist_ring = field2(f, fo, TWIST_RING, window, 6 * nb)
        twist_sum = field1(f, fo, TWIST_SUM, 6 * nb)
        term = twist_ring[slot]
        if full:
            for c in range(6 * nb):
                twist_sum[c] -= term[c]
        residual = scratch[2]
        if not rnea(parents, screw_axes, home_R, home_p, phi, q, v, a, base_accel, field2(f, fo, F_EXT_ZERO, nb, 6),
                    R, p, field2(f, fo, BODY_V, nb, 6), field2(f, fo, BODY_VDOT, nb, 6),
                    field2(f, fo, BODY_F, nb, 6), tmp6, residual):
            return False
        for k in range(nv):
            residual[k] = tau_rigid[k] - residual[k]
        dtau_deta = field2(f, fo, DTAU_DETA, nv, 6 * nb)
        if not twist_derivatives(parents, screw_axes, home_R, home_p, phi, q, v, a, base_accel,
                                 field2(f, fo, F_EXT_ZERO, nb, 6), R, p, oR, op, field2(f, fo, OPHI_C, nb, 10),
                                 field3(f, fo, VECTORS, 9, nb, 6),
                                 field4(f, fo, ETA_COLUMNS, 2, nb, 6, 6),
                                 field2(f, fo, ETA_POSE, 4, 3), tmp6, dtau_deta):
            return False
        for c in range(6 * nb):
            total = 0.0
            for k in range(nv):
                total -= dtau_deta[k, c] * residual[k]
            term[c] = total
            twist_sum[c] += total
    s[S_NEXT] = (slot + 1) % window
    s[S_COUNT] = count
    return True


@njit(cache=True, nogil=True)
def _wrench(f, fo, ints, io, frame_body, damping):
    """wrench = (J J^T + damping^2 I)^-1 J tau_ext at the estimator's frame (local_world_aligned
    Jacobian); False when it is not finite."""
    dims = field1(ints, io, DIMS, 4)
    nb = dims[0]
    nv = nb
    J = field2(f, fo, J_, 6, nv)
    parents, screw_axes, home_R, home_p, _, _ = _model(f, fo, ints, io, nb)
    frame_jacobian(parents, screw_axes, home_R, home_p, field1(f, fo, Q, nv), field1(ints, io, PATH, nb),
                   field3(f, fo, R_, nb, 3, 3), field2(f, fo, P_, nb, 3), field3(f, fo, OR, nb, 3, 3),
                   field2(f, fo, OP, nb, 3), frame_body, field2(f, fo, FRAME_R, 3, 3), field1(f, fo, FRAME_P, 3),
                   LOCAL_WORLD_ALIGNED, J)
    return damped_least_squares(J, field1(f, fo, TAU_EXT, nv), damping, field2(f, fo, A_, 6, 6),
                                field1(f, fo, WRENCH, 6))
