"""The controller's tick for a closed chain, in one compiled call: the closed-chain counterpart of
tick.py's ControllerTick, with the same fields and flags (`s`, indices tick.S_*), so the node drives
both alike. The chain is its equivalent tree plus a mapping whose loop_frames() describes the loop.

Per tick, in the actuated coordinates theta_a (the active joints; the passive joints of the measured
q only warm-start the loop closure, and the tree velocity is rebuilt as v = G dtheta_a):
1. the reference, as tick.py (a sine about `centre`, or a point the caller wrote);
2. the loop closure: Newton on the passive joints, G = dq/dtheta_a, the bias Gdot dtheta_a
   (kernels/loop_closure.py); when it fails (a state off the chain, singular passive joints) the
   tick commands zero torque and counts it (s[S_CLOSURE_FAILURES]);
3. on a new sample, with dt the stamp difference, the estimators on the reduced dynamics
   M_a ddtheta_a + h_a = tau_a + tau_ext (kernels/reduced_dynamics.py):
   - the generalized-momentum observer (De Luca and Mattone 2003) on p_a = M_a dtheta_a = G^T M v,
       dp_a/dt = tau_a + tau_ext + G^T (C^T v - g) + Gdot^T M v
     (from the tree's dp/dt = tau + C^T v - g projected by G^T, G^T K^T = 0 removing the loop's
     constraint forces); its step is tick.py's with drift = G^T (C^T v - g) + Gdot^T M v, and r
     estimates the external torque at the actuated joints;
   - the acceleration estimate of theta_a (low-passed difference of dtheta_a, as tick.py);
   - the gradient window of the reduced regressor Y_a = G^T Y(q, v, G ddtheta_a + Gdot dtheta_a)
     (tau_a = Y_a phi) as tick.py's: a ring of Y_a and tau_a and the running sums sum_YYphi = sum
     Y_a^T (Y_a phi), sum_Yt = sum Y_a^T tau_a, so dL/dphi = sum_YYphi - sum_Yt (parameter_gradient.py);
4. the torque: tau_a = G^T rnea(q, v, G a_cmd + Gdot dtheta_a), a_cmd = a_r + kd (v_r - v) + kp (q_r - q)
   on the active joints (the tracked reference q_r of tick.py; minus the estimated external torque
   with compensation); braking: a_cmd = -brake_gain dtheta_a; holding (stale joint states):
   G^T g(q), or zero; non-finite: the held torque, then zero; clamped to the effort limits; zero on
   the passive joints; rate-limited as tick.py's;
5. on request, the force at the estimator's frame. A 2-DoF chain feels only the two force components
   that its end effector can move along: with J_a = J_v G (3, n_active), J_v the frame's linear
   ("local_world_aligned") Jacobian of the tree, the damped least-squares force
       f = (J_a J_a^T + d^2 I)^-1 J_a tau_ext
   is the applied force's component in the span of J_a (the five-bar: the sphere's tangent plane at
   the end effector); the moment and the normal force are not observable and the published torque is
   zero. And the gradient.
The joint-twist gradient is not available: it needs the loop closure's derivative with respect to
the joint twists. A tick allocates nothing.
"""
import numpy as np

from ..jit import njit
from ..kernels.closed_chain_packed import (A_BIAS, ACTIVE, BASE_ACCEL, CHAIN_DIMS, DTHETA, G, HOME_P, HOME_R, K_P,
                                           OP, OR, OS, OV, P_, P_A, PARENTS, PASSIVE, PATH, PHI, PIVOTS, Q, R_,
                                           R_A, RHS, SCREW_AXES, SIGN, THETA, TMP6, V, COMPONENTS,
                                           chain_float_fields, chain_int_fields, chain_loop, close_packed, fill_chain)
from ..kernels.coriolis import coriolis_matrix
from ..kernels.crba import crba
from ..kernels.inputs import all_finite
from ..kernels.kinematics import LOCAL_WORLD_ALIGNED, frame_jacobian
from ..kernels.loop_closure import CLOSED, completion_jacobian_rate
from ..kernels.packed import Packed, field1, field2, field3, field_indices
from ..kernels.reduced_dynamics import project, reduced_inverse_dynamics, reduced_regressor
from ..kernels.rnea import rnea
from ..model import PARAMETER_NAMES
from .computed_torque import braking_acceleration, tracking_acceleration
from .flags import (NS, S_BRAKE, S_COMPENSATION, S_COUNT, S_CUTOFF_HZ, S_DT, S_EFFORT_MEASURED, S_ESTIMATE,
                    S_ESTIMATOR_RESETS, S_FILTER_STARTED, S_GRADIENTS, S_HAS_EFFORT, S_NEW_SAMPLE, S_NEXT,
                    S_OMEGA, S_POINT, S_RESET, S_SAFE, S_SAFE_ZERO, S_T, S_WANT_GRADIENT, S_WANT_WRENCH,
                    S_WRENCH_DAMPING, S_WRENCH_OK)
from .momentum_observer import damped_least_squares, efforts_measured, observer_step
from .parameter_gradient import filter_acceleration, row_starts, window_gradient, window_push, window_pushed
from .reference import controlled_mask, follow_measured, sine_reference
from .safety import accumulate_tracking_error, finish_command, hold_torque, tracked_reference
from .tick import TickBuffers

S_CLOSURE_FAILURES = NS          # ticks whose loop closure failed (zero torque commanded)
NS_CHAIN = NS + 1


def float_fields(nb, na, nc, window, ncontrolled):
    nv = nb
    npar = 10 * nb
    return chain_float_fields(nb, na, nc) + [
        ("s", (NS_CHAIN,)), ("frame_R", (3, 3)), ("frame_p", (3,)), ("effort_limit", (nv,)),
        # gains and reference parameters (tree order; the active entries count)
        ("kp", (nv,)), ("kd", (nv,)), ("brake_gain", (nv,)), ("observer_gain", (na,)), ("centre", (nv,)),
        ("amplitude", (nv,)),
        # the sample, the reference, the outputs
        ("q_sample", (nv,)), ("effort", (nv,)), ("q_d", (nv,)), ("v_d", (nv,)), ("a_d", (nv,)), ("tau", (nv,)),
        ("command", (ncontrolled,)), ("tau_applied", (na,)), ("wrench", (6,)), ("gradient", (npar,)),
        # estimator state: tau_ext in tree order (zero on the passive joints)
        ("p_prev", (na,)), ("drift_prev", (na,)), ("tau_ext", (nv,)), ("dtheta_prev", (na,)), ("acceleration", (na,)),
        ("Y_ring", (window, na, npar)), ("tau_ring", (window, na)), ("sum_YYphi", (npar,)), ("sum_Yt", (npar,)),
        ("phi_window", (npar,)), ("in_sum", (window,)),
        # workspace
        ("Gdot", (nv, na)), ("M", (nv, nv)), ("C", (nv, nv)), ("oPsi", (nb, 6)), ("oIc", (nb, 6, 6)),
        ("oBc", (nb, 6, 6)), ("phi_world", (nb, 10)), ("phi_composite", (nb, 10)),
        ("F", (nb, 6)), ("V_body", (nb, 6)), ("Vdot_body", (nb, 6)), ("f_ext_zero", (nb, 6)), ("g", (nv,)),
        ("zero", (nv,)), ("tau_tree", (nv,)), ("a_tree", (nv,)), ("Y", (nv, npar)), ("Y_a", (na, npar)),
        ("J", (6, nv)), ("J_a", (3, na)), ("A3", (3, 3)), ("scratch", (4, nv)), ("reduced", (4, na)),
        ("hold", (nv,)), ("tau_ext_a", (na,)),
        # safety (tick.py, safety.py)
        ("q_r", (nv,)), ("v_r", (nv,)), ("a_r", (nv,)), ("offset_q", (nv,)), ("offset_v", (nv,)),
        ("tau_prev", (nv,)), ("max_step", (nv,)),
    ]


def int_fields(nb, na, nc, ncontrolled):
    return chain_int_fields(nb, na, nc) + [
        ("controlled", (ncontrolled,)),
        ("columns", (na, 2)),    # the reduced regressor's rows may be non-zero in every column
        ("tick_dims", (3,)),     # window, estimator frame's body, number of controlled joints
        ("row_starts", (na + 1,))]   # parameter_gradient.row_starts: the window's packed rows are whole rows


_F = field_indices(float_fields(1, 1, 1, 1, 1))
_I = field_indices(int_fields(1, 1, 1, 1))
(S, FRAME_R, FRAME_P, EFFORT_LIMIT, KP, KD, BRAKE_GAIN, OBSERVER_GAIN, CENTRE, AMPLITUDE, Q_SAMPLE, EFFORT, Q_D,
 V_D, A_D, TAU, COMMAND, TAU_APPLIED, WRENCH, GRADIENT, P_PREV, DRIFT_PREV, TAU_EXT, DTHETA_PREV,
 ACCELERATION, Y_RING, TAU_RING, SUM_YYPHI, SUM_YT, PHI_WINDOW, IN_SUM, GDOT, M_, C_, OPSI, OIC, OBC, PHI_WORLD,
 PHI_COMPOSITE, F_, V_BODY, VDOT_BODY, F_EXT_ZERO, G_TREE, ZERO, TAU_TREE, A_TREE, Y_, Y_A, J_, J_A, A3, SCRATCH,
 REDUCED, HOLD, TAU_EXT_A, Q_R, V_R, A_R, OFFSET_Q, OFFSET_V, TAU_PREV, MAX_STEP) = (
    _F[name] for name, _ in float_fields(1, 1, 1, 1, 1)[len(chain_float_fields(1, 1, 1)):])
CONTROLLED, COLUMNS, TICK_DIMS, ROW_STARTS = _I["controlled"], _I["columns"], _I["tick_dims"], _I["row_starts"]


class ClosedChainTick(TickBuffers):
    """Everything one tick of a closed chain's controller computes with, and the call that computes
    it; the interface of tick.ControllerTick. model: the equivalent tree; mapping: its
    ClosedChainMapping (loop_frames() must not be None); controlled: the active joints' tree indices,
    in command order; frame: the estimator's frame; window: samples in the gradient window."""

    def __init__(self, model, mapping, controlled, frame, window):
        loop = chain_loop(mapping, model, "closed-chain tick")
        controlled = np.asarray(controlled, dtype=np.int64)
        if sorted(controlled.tolist()) != sorted(loop.active):
            raise ValueError("ClosedChainTick: controlled must be the mapping's active joints")
        nb, na, nc = model.nbodies, len(loop.active), len(loop.passive)
        self.nb, self.nv, self.window = nb, model.nv, int(window)
        self.f = Packed(float_fields(nb, na, nc, self.window, controlled.size))
        self.i = Packed(int_fields(nb, na, nc, controlled.size), dtype=np.int64)
        self.kernel = closed_chain_tick
        f, i = self.f, self.i
        fill_chain(f, i, model, loop)
        i.controlled[:] = controlled
        i.columns[:, 1] = 10 * nb
        i.row_starts[:] = row_starts(i.columns)
        f_id = model.frame_id(frame)
        i.tick_dims[:] = self.window, model.frame_body[f_id], controlled.size
        f.frame_R[:] = model.frame_R[f_id]
        f.frame_p[:] = model.frame_p[f_id]
        f.effort_limit[:] = [model.effort_limit[model.joint_names.index(n)] for n in model.actuated_joints]
        f.q[:] = mapping.reference_configuration if hasattr(mapping, "reference_configuration") else 0.0
        self.mapping = mapping
        self.model = model
        f.s[S_CUTOFF_HZ] = 20.0
        self.set_safety_defaults()
        self.labels = [f"{body}/{p}" for body in model.body_names for p in PARAMETER_NAMES]

    @property
    def q(self):
        """The tree configuration: written by the caller (the measurement), completed by the tick."""
        return self.f.q

    @property
    def v(self):
        return self.f.v

    def shift_momentum(self, old_model):
        """After set_model: shift the observer's last momentum by the change of G^T M(q) v at the current
        sample."""
        from ..dynamics import crba as crba_api
        f = self.f
        shift = crba_api(self.model, self.model.create_data(), f.q) @ f.v
        shift -= crba_api(old_model, old_model.create_data(), f.q) @ f.v
        f.p_prev += f.G.T @ shift

    def warm_up(self):
        super().warm_up()
        self.f.s[S_CLOSURE_FAILURES] = 0.0


@njit(cache=True, nogil=True)
def closed_chain_tick(f, fo, ints, io):
    dims = field1(ints, io, CHAIN_DIMS, 6)
    nb, na = dims[0], dims[1]
    nv = nb
    npar = 10 * nb
    tick_dims = field1(ints, io, TICK_DIMS, 3)
    nc = tick_dims[2]
    controlled = field1(ints, io, CONTROLLED, nc)
    active = field1(ints, io, ACTIVE, na)
    s = field1(f, fo, S, NS_CHAIN)
    q = field1(f, fo, Q, nv)
    v = field1(f, fo, V, nv)
    q_d = field1(f, fo, Q_D, nv)
    v_d = field1(f, fo, V_D, nv)
    a_d = field1(f, fo, A_D, nv)
    tau = field1(f, fo, TAU, nv)
    tau_ext = field1(f, fo, TAU_EXT, nv)
    hold = field1(f, fo, HOLD, nv)
    Gm = field2(f, fo, G, nv, na)
    reduced = field2(f, fo, REDUCED, 4, na)
    tau_a = reduced[0]

    # 1. the reference (tick.py)
    if s[S_POINT] == 0.0:
        sine_reference(s[S_T], s[S_OMEGA], field1(f, fo, CENTRE, nv), field1(f, fo, AMPLITUDE, nv), q_d, v_d, a_d)
    mask = field2(f, fo, SCRATCH, 4, nv)[0]      # 1 on controlled joints
    controlled_mask(controlled, mask)
    follow_measured(mask, q, v, q_d, v_d, a_d)
    tracking = s[S_SAFE] == 0.0 and s[S_BRAKE] == 0.0
    q_r = field1(f, fo, Q_R, nv)
    v_r = field1(f, fo, V_R, nv)
    a_r = field1(f, fo, A_R, nv)
    if tracked_reference(s, tracking, mask, controlled, q, v, q_d, v_d, a_d, field1(f, fo, OFFSET_Q, nv),
                         field1(f, fo, OFFSET_V, nv), q_r, v_r, a_r):
        tracking = False        # too fast to re-anchor: brake first (safety.py)

    # 2. the loop closure from the measured state
    q_sample = field1(f, fo, Q_SAMPLE, nv)
    q_sample[:] = q
    theta = field1(f, fo, THETA, na)
    dtheta = field1(f, fo, DTHETA, na)
    for k in range(na):
        theta[k] = q[active[k]]
        dtheta[k] = v[active[k]]
    closed = close_packed(f, fo, ints, io) == CLOSED
    if not closed:
        s[S_CLOSURE_FAILURES] += 1.0
        q[:] = q_sample
    g = field1(f, fo, G_TREE, nv)
    if closed:
        closed = _gravity(f, fo, ints, io, nb, g)
    # the torque without fresh joint states: G^T g(q), or zero, in tree order (zero on the passive joints)
    hold[:] = 0.0
    if closed:
        tau_tree = field1(f, fo, TAU_TREE, nv)
        hold_torque(s[S_SAFE_ZERO] != 0.0, g, tau_tree)
        hold_a = reduced[1]
        project(Gm, tau_tree, hold_a)
        for k in range(na):
            hold[active[k]] = hold_a[k]

    # 3. estimators, once per new sample
    if closed and s[S_ESTIMATE] != 0.0 and (s[S_NEW_SAMPLE] != 0.0 or s[S_RESET] != 0.0):
        tau_applied = field1(f, fo, TAU_APPLIED, na)
        effort = field1(f, fo, EFFORT, nv)
        measured = efforts_measured(s[S_HAS_EFFORT] != 0.0, effort)
        source = effort if measured else tau
        for k in range(na):
            tau_applied[k] = source[active[k]]
        # a change of the torque's source starts the momentum balance over (tick.py)
        switched = s[S_RESET] == 0.0 and measured != (s[S_EFFORT_MEASURED] != 0.0)
        s[S_EFFORT_MEASURED] = 1.0 if measured else 0.0
        if s[S_RESET] != 0.0 or switched or not _estimators_step(f, fo, ints, io, s[S_DT]):
            if s[S_RESET] == 0.0 and not switched:
                s[S_ESTIMATOR_RESETS] += 1.0
            _reset_estimators(f, fo, ints, io)

    # 4. the torque
    if not closed:
        tau_a[:] = 0.0
    elif s[S_SAFE] != 0.0:
        for k in range(na):
            tau_a[k] = hold[active[k]]
    else:
        a_tree = field1(f, fo, A_TREE, nv)
        if tracking:
            tracking_acceleration(q_r, v_r, a_r, q, v, field1(f, fo, KP, nv), field1(f, fo, KD, nv), a_tree)
        else:
            braking_acceleration(v, field1(f, fo, BRAKE_GAIN, nv), mask, a_tree)
        a_cmd = reduced[1]
        for k in range(na):
            a_cmd[k] = a_tree[active[k]]
        a_bias = field1(f, fo, A_BIAS, nv)
        for k in range(nv):
            total = a_bias[k]
            for i in range(na):
                total += Gm[k, i] * a_cmd[i]
            a_tree[k] = total
        if not _reduced_torque(f, fo, ints, io, nb, v, a_tree, tau_a):
            tau_a[0] = np.nan
        if tracking and s[S_COMPENSATION] != 0.0:
            for k in range(na):
                tau_a[k] -= tau_ext[active[k]]
        if tracking and s[S_NEW_SAMPLE] != 0.0:
            accumulate_tracking_error(s, q_r, q, controlled)
    tau[:] = 0.0
    for k in range(na):
        tau[active[k]] = tau_a[k]
    finish_command(s, tau, hold, mask, field1(f, fo, EFFORT_LIMIT, nv), field1(f, fo, TAU_PREV, nv),
                   field1(f, fo, MAX_STEP, nv), controlled, field1(f, fo, COMMAND, nc))

    # 5. requested outputs
    if s[S_WANT_WRENCH] != 0.0:
        s[S_WRENCH_OK] = 1.0 if closed and _force(f, fo, ints, io, s[S_WRENCH_DAMPING]) else 0.0
    if s[S_WANT_GRADIENT] != 0.0:
        window = tick_dims[0]
        window_gradient(field2(f, fo, Y_RING, window, na * npar), field2(ints, io, COLUMNS, na, 2),
                        field1(ints, io, ROW_STARTS, na + 1), int(s[S_NEXT]), int(s[S_COUNT]), field1(f, fo, PHI, npar),
                        field1(f, fo, PHI_WINDOW, npar), field1(f, fo, IN_SUM, window), field1(f, fo, SUM_YYPHI, npar),
                        field1(f, fo, SUM_YT, npar), field1(f, fo, GRADIENT, npar))


@njit(cache=True, nogil=True)
def _gravity(f, fo, ints, io, nb, g):
    """g(q) of the tree into g. False when not finite."""
    return rnea(field1(ints, io, PARENTS, nb), field2(f, fo, SCREW_AXES, nb, 6), field3(f, fo, HOME_R, nb, 3, 3),
                field2(f, fo, HOME_P, nb, 3), field2(f, fo, PHI, nb, 10), field1(f, fo, Q, nb),
                field1(f, fo, ZERO, nb), field1(f, fo, ZERO, nb), field1(f, fo, BASE_ACCEL, 6),
                field2(f, fo, F_EXT_ZERO, nb, 6), field3(f, fo, R_, nb, 3, 3), field2(f, fo, P_, nb, 3),
                field2(f, fo, V_BODY, nb, 6), field2(f, fo, VDOT_BODY, nb, 6), field2(f, fo, F_, nb, 6),
                field2(f, fo, TMP6, 12, 6), g)


@njit(cache=True, nogil=True)
def _reduced_torque(f, fo, ints, io, nb, v, a_tree, tau_a):
    """tau_a = G^T rnea(q, v, a_tree). False when not finite."""
    na = io[ACTIVE + 1] - io[ACTIVE]
    return reduced_inverse_dynamics(
        field1(ints, io, PARENTS, nb), field2(f, fo, SCREW_AXES, nb, 6), field3(f, fo, HOME_R, nb, 3, 3),
        field2(f, fo, HOME_P, nb, 3), field2(f, fo, PHI, nb, 10), field1(f, fo, Q, nb), v, a_tree,
        field1(f, fo, BASE_ACCEL, 6), field2(f, fo, F_EXT_ZERO, nb, 6), field2(f, fo, G, nb, na),
        field3(f, fo, R_, nb, 3, 3), field2(f, fo, P_, nb, 3), field2(f, fo, V_BODY, nb, 6),
        field2(f, fo, VDOT_BODY, nb, 6), field2(f, fo, F_, nb, 6), field2(f, fo, TMP6, 12, 6),
        field1(f, fo, TAU_TREE, nb), tau_a)


@njit(cache=True, nogil=True)
def _momentum(f, fo, ints, io, nb, na, out):
    """out = G^T M(q) v (the reduced momentum M_a dtheta_a); M into its field; Mv into scratch row 1."""
    parents = field1(ints, io, PARENTS, nb)
    M = field2(f, fo, M_, nb, nb)
    ok = crba(parents, field2(f, fo, SCREW_AXES, nb, 6), field3(f, fo, HOME_R, nb, 3, 3),
              field2(f, fo, HOME_P, nb, 3), field2(f, fo, PHI, nb, 10), field1(f, fo, Q, nb),
              field3(f, fo, R_, nb, 3, 3), field2(f, fo, P_, nb, 3), field3(f, fo, OR, nb, 3, 3),
              field2(f, fo, OP, nb, 3), field2(f, fo, OS, nb, 6), field2(f, fo, PHI_COMPOSITE, nb, 10),
              field2(f, fo, F_, nb, 6), M)
    v = field1(f, fo, V, nb)
    Mv = field2(f, fo, SCRATCH, 4, nb)[1]
    for i in range(nb):
        total = 0.0
        for j in range(nb):
            total += M[i, j] * v[j]
        Mv[i] = total
    project(field2(f, fo, G, nb, na), Mv, out)
    return ok


@njit(cache=True, nogil=True)
def _reset_estimators(f, fo, ints, io):
    """Observer, acceleration filter and window start over at the current sample."""
    dims = field1(ints, io, CHAIN_DIMS, 6)
    nb, na = dims[0], dims[1]
    s = field1(f, fo, S, NS_CHAIN)
    _momentum_terms(f, fo, ints, io, field1(f, fo, P_PREV, na), field1(f, fo, DRIFT_PREV, na))
    field1(f, fo, TAU_EXT, nb)[:] = 0.0
    field1(f, fo, ACCELERATION, na)[:] = 0.0
    field1(f, fo, DTHETA_PREV, na)[:] = field1(f, fo, DTHETA, na)
    s[S_FILTER_STARTED] = 1.0
    s[S_COUNT] = 0.0
    s[S_NEXT] = 0.0
    field1(f, fo, SUM_YYPHI, 10 * nb)[:] = 0.0
    field1(f, fo, SUM_YT, 10 * nb)[:] = 0.0
    field1(f, fo, IN_SUM, field1(ints, io, TICK_DIMS, 3)[0])[:] = 0.0


@njit(cache=True, nogil=True)
def _momentum_terms(f, fo, ints, io, momentum, drift):
    """At the current sample: momentum = p_a = G^T M v and drift = G^T (C^T v - g) + Gdot^T M v, the
    terms of dp_a/dt = tau_a + drift + tau_ext (g from this tick's field g). Call while oS and oV
    are the loop closure's (crba and coriolis_matrix overwrite them). False when not finite."""
    dims = field1(ints, io, CHAIN_DIMS, 6)
    nb, na, nc, body_a = dims[0], dims[1], dims[2], dims[3]
    nv = nb
    parents = field1(ints, io, PARENTS, nb)
    q = field1(f, fo, Q, nv)
    v = field1(f, fo, V, nv)
    g = field1(f, fo, G_TREE, nv)
    Gm = field2(f, fo, G, nv, na)
    Gdot = field2(f, fo, GDOT, nv, na)
    tmp6 = field2(f, fo, TMP6, 12, 6)
    completion_jacobian_rate(parents, field2(f, fo, OS, nb, 6), field2(f, fo, OV, nb, 6),
                             field1(f, fo, SIGN, nv), body_a, field2(f, fo, R_A, 3, 3), field1(f, fo, P_A, 3),
                             field1(ints, io, COMPONENTS, nc), field2(f, fo, K_P, nc, nc),
                             field1(ints, io, PIVOTS, nc), field1(ints, io, PASSIVE, nc), Gm,
                             field1(f, fo, RHS, nc), tmp6, Gdot)
    if not _momentum(f, fo, ints, io, nb, na, momentum):
        return False
    C = field2(f, fo, C_, nv, nv)
    if not coriolis_matrix(parents, field2(f, fo, SCREW_AXES, nb, 6), field3(f, fo, HOME_R, nb, 3, 3),
                           field2(f, fo, HOME_P, nb, 3), field2(f, fo, PHI, nb, 10), q, v,
                           field3(f, fo, R_, nb, 3, 3), field2(f, fo, P_, nb, 3), field3(f, fo, OR, nb, 3, 3),
                           field2(f, fo, OP, nb, 3), field2(f, fo, OS, nb, 6), field2(f, fo, OV, nb, 6),
                           field2(f, fo, OPSI, nb, 6), field3(f, fo, OIC, nb, 6, 6), field3(f, fo, OBC, nb, 6, 6),
                           field2(f, fo, PHI_WORLD, nb, 10), tmp6, C):
        return False
    Mv = field2(f, fo, SCRATCH, 4, nv)[1]
    tree_term = field2(f, fo, SCRATCH, 4, nv)[2]
    for i in range(nv):
        ctv = 0.0
        for j in range(nv):
            ctv += C[j, i] * v[j]
        tree_term[i] = ctv - g[i]
    project(Gm, tree_term, drift)
    for i in range(na):
        total = drift[i]
        for k in range(nv):
            total += Gdot[k, i] * Mv[k]
        drift[i] = total
    return True


@njit(cache=True, nogil=True)
def _estimators_step(f, fo, ints, io, dt):
    """Observer, acceleration filter and the gradient window over one sample step of dt seconds
    (module docstring, 3.). False (the caller resets) when a result is not finite."""
    dims = field1(ints, io, CHAIN_DIMS, 6)
    nb, na = dims[0], dims[1]
    nv = nb
    npar = 10 * nb
    window = field1(ints, io, TICK_DIMS, 3)[0]
    s = field1(f, fo, S, NS_CHAIN)
    parents = field1(ints, io, PARENTS, nb)
    active = field1(ints, io, ACTIVE, na)
    q = field1(f, fo, Q, nv)
    v = field1(f, fo, V, nv)
    Gm = field2(f, fo, G, nv, na)
    tau_applied = field1(f, fo, TAU_APPLIED, na)
    tmp6 = field2(f, fo, TMP6, 12, 6)
    reduced = field2(f, fo, REDUCED, 4, na)
    # momentum observer (module docstring, 3.)
    momentum, drift = reduced[2], reduced[3]
    if not _momentum_terms(f, fo, ints, io, momentum, drift):
        return False
    r = field1(f, fo, TAU_EXT, nv)
    r_a = reduced[0]        # r in the actuated coordinates (row 0 is free until the torque)
    for i in range(na):
        r_a[i] = r[active[i]]
    observer_step(dt, momentum, drift, tau_applied, field1(f, fo, OBSERVER_GAIN, na), field1(f, fo, P_PREV, na),
                  field1(f, fo, DRIFT_PREV, na), r_a)
    for i in range(na):
        r[active[i]] = r_a[i]
    if not all_finite(r):
        return False

    # acceleration of theta_a (parameter_gradient.py)
    a = field1(f, fo, ACCELERATION, na)
    filter_acceleration(dt, s[S_CUTOFF_HZ], field1(f, fo, DTHETA, na), field1(f, fo, DTHETA_PREV, na), a)
    if not all_finite(a):
        return False
    if s[S_GRADIENTS] == 0.0:
        return True

    # the gradient window: Y_a = G^T Y(q, v, G a + Gdot dtheta)
    a_tree = field1(f, fo, A_TREE, nv)
    a_bias = field1(f, fo, A_BIAS, nv)
    for k in range(nv):
        total = a_bias[k]
        for i in range(na):
            total += Gm[k, i] * a[i]
        a_tree[k] = total
    slot = int(s[S_NEXT])
    count = int(s[S_COUNT])
    columns = field2(ints, io, COLUMNS, na, 2)
    starts = field1(ints, io, ROW_STARTS, na + 1)
    Y_ring = field2(f, fo, Y_RING, window, na * npar)     # packed rows: whole rows
    tau_ring = field2(f, fo, TAU_RING, window, na)
    phi_window = field1(f, fo, PHI_WINDOW, npar)
    in_sum = field1(f, fo, IN_SUM, window)
    sum_YYphi = field1(f, fo, SUM_YYPHI, npar)
    sum_Yt = field1(f, fo, SUM_YT, npar)
    Y_a = field3(f, fo, Y_RING, window, na, npar)[slot]
    window_push(Y_ring, tau_ring, columns, starts, slot, count, field1(f, fo, PHI, npar), phi_window, in_sum,
                sum_YYphi, sum_Yt)
    if not reduced_regressor(parents, field2(f, fo, SCREW_AXES, nb, 6), field3(f, fo, HOME_R, nb, 3, 3),
                             field2(f, fo, HOME_P, nb, 3), q, v, a_tree, field1(f, fo, BASE_ACCEL, 6), Gm,
                             field3(f, fo, R_, nb, 3, 3), field2(f, fo, P_, nb, 3), field3(f, fo, OR, nb, 3, 3),
                             field2(f, fo, OP, nb, 3), field2(f, fo, OS, nb, 6), field2(f, fo, V_BODY, nb, 6),
                             field2(f, fo, VDOT_BODY, nb, 6), tmp6, field2(f, fo, Y_, nv, npar), Y_a):
        return False
    tau_ring[slot] = tau_applied
    s[S_COUNT] = window_pushed(Y_ring, tau_ring, columns, starts, slot, count, phi_window, in_sum, sum_YYphi, sum_Yt)
    s[S_NEXT] = (slot + 1) % window
    return True


@njit(cache=True, nogil=True)
def _force(f, fo, ints, io, damping):
    """wrench = [0; f], f = (J_a J_a^T + damping^2 I)^-1 J_a tau_ext (module docstring, 5.); False when
    not finite."""
    dims = field1(ints, io, CHAIN_DIMS, 6)
    nb, na = dims[0], dims[1]
    nv = nb
    frame_body = field1(ints, io, TICK_DIMS, 3)[1]
    active = field1(ints, io, ACTIVE, na)
    J = field2(f, fo, J_, 6, nv)
    if not frame_jacobian(field1(ints, io, PARENTS, nb), field2(f, fo, SCREW_AXES, nb, 6),
                          field3(f, fo, HOME_R, nb, 3, 3), field2(f, fo, HOME_P, nb, 3), field1(f, fo, Q, nv),
                          field1(ints, io, PATH, nb), field3(f, fo, R_, nb, 3, 3), field2(f, fo, P_, nb, 3),
                          field3(f, fo, OR, nb, 3, 3), field2(f, fo, OP, nb, 3), frame_body,
                          field2(f, fo, FRAME_R, 3, 3), field1(f, fo, FRAME_P, 3), LOCAL_WORLD_ALIGNED, J):
        return False
    Gm = field2(f, fo, G, nv, na)
    J_a = field2(f, fo, J_A, 3, na)
    for r in range(3):
        for i in range(na):
            total = 0.0
            for k in range(nv):
                total += J[3 + r, k] * Gm[k, i]
            J_a[r, i] = total
    tau_ext = field1(f, fo, TAU_EXT, nv)
    tau_ext_a = field1(f, fo, TAU_EXT_A, na)
    for i in range(na):
        tau_ext_a[i] = tau_ext[active[i]]
    w = field1(f, fo, WRENCH, 6)
    w[:3] = 0.0
    return damped_least_squares(J_a, tau_ext_a, damping, field2(f, fo, A3, 3, 3), w[3:])
