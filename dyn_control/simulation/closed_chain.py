"""A closed chain (an equivalent tree plus a loop-closure mapping) simulated in its actuated
coordinates theta_a, one compiled call per step.

Integrator: classical Runge-Kutta (RK4) on x = (theta_a, dtheta_a) with the actuator torques tau_a and
an external wrench w held over the step:
    ddtheta_a = M_a^-1 (tau_a + G^T J^T w - h_a)          (kernels/reduced_dynamics.py)
At each of the four stages the tree configuration closing the loop is found by Newton on the passive
joints, warm-started from the previous stage's (kernels/loop_closure.py: a few iterations, since
the state moves little within a step), then G = dq/dtheta_a, v = G dtheta_a and the bias Gdot dtheta_a.
After the step the tree state (q, v) is recomputed at the new actuated state, so the passive joints
never drift from the loop (the closure holds to the mapping's Newton tolerance).
Needs a mapping whose loop_frames() describes its loop (the five-bar's does).
"""
import numpy as np

from ..control.checks import require_finite
from ..dynamics import as_vector
from ..jit import njit
from ..kernels.closed_chain_packed import (ACTIVE, A_BIAS, BASE_ACCEL, DTHETA, G, HOME_P, HOME_R, OP, OR, OS, P_, PARENTS,
                                           PATH, PHI, Q, R_, SCREW_AXES, THETA, TMP6, V, chain_float_fields,
                                           chain_int_fields, chain_loop, close_packed, fill_chain)
from ..kernels.kinematics import LOCAL_WORLD_ALIGNED, frame_jacobian
from ..kernels.loop_closure import CLOSED, NOT_CONVERGED, SINGULAR
from ..kernels.lu import lu_factor, lu_solve
from ..kernels.packed import Packed, field1, field2, field3, field_indices
from ..kernels.reduced_dynamics import project, reduced_inertia, reduced_inverse_dynamics
from .builtin import load_wrench

# entries of the scalar field `s`
S_DT, S_HAS_WRENCH, S_FRAME_BODY, NS = range(4)
# step() results beyond loop_closure's statuses
MASS_SINGULAR, DIVERGED = 4, 5


def float_fields(nb, na, nc):
    nv = nb
    return chain_float_fields(nb, na, nc) + [
        ("s", (NS,)), ("tau_a", (na,)), ("wrench", (6,)), ("frame_R", (3, 3)), ("frame_p", (3,)),
        ("effort", (nv,)),
        # RK4: the state at the step's start, each stage's slopes
        ("start", (2, na)), ("stage_dtheta", (4, na)), ("stage_acc", (4, na)),
        # workspace
        ("J", (6, nv)), ("f_ext_zero", (nb, 6)), ("tau_tree", (nv,)), ("force", (na,)), ("projected", (na,)),
        ("M", (nv, nv)), ("MG", (nv, na)), ("M_a", (na, na)), ("phi_composite", (nb, 10)), ("F", (nb, 6)),
        ("V_body", (nb, 6)), ("Vdot_body", (nb, 6)),
    ]


def int_fields(nb, na, nc):
    return chain_int_fields(nb, na, nc) + [("mass_pivots", (na,))]


_F = field_indices(float_fields(1, 1, 1))
_I = field_indices(int_fields(1, 1, 1))
S = _F["s"]
TAU_A, WRENCH, FRAME_R, FRAME_P, EFFORT = _F["tau_a"], _F["wrench"], _F["frame_R"], _F["frame_p"], _F["effort"]
START, STAGE_DTHETA, STAGE_ACC = _F["start"], _F["stage_dtheta"], _F["stage_acc"]
J_, F_EXT_ZERO, TAU_TREE, FORCE, PROJECTED = _F["J"], _F["f_ext_zero"], _F["tau_tree"], _F["force"], _F["projected"]
M_, MG, M_A, PHI_COMPOSITE, F_, V_BODY, VDOT_BODY = (_F[k] for k in ("M", "MG", "M_a", "phi_composite", "F",
                                                                  "V_body", "Vdot_body"))
MASS_PIVOTS = _I["mass_pivots"]
FAILURES = {NOT_CONVERGED: "the loop closure (Newton) did not converge", SINGULAR: "the passive joints are singular",
            MASS_SINGULAR: "the reduced mass matrix is singular", DIVERGED: "the state is no longer finite"}


class ClosedChainSimulator:
    """The simulation backend of a closed chain (module docstring), with the interface of the
    simulator node's backends: q, v (tree state, every joint), effort, dt, step(tau, wrench, frame),
    reset(q0). theta0: the actuated joints' start positions (at rest)."""

    def __init__(self, mapping, model, dt, theta0):
        loop = chain_loop(mapping, model, "closed-chain simulation")
        self.mapping, self.model, self.dt = mapping, model, float(dt)
        nb, na, nc = model.nbodies, len(loop.active), len(loop.passive)
        self.f = Packed(float_fields(nb, na, nc))
        self.i = Packed(int_fields(nb, na, nc), dtype=np.int64)
        fill_chain(self.f, self.i, model, loop)
        self.f.s[S_DT] = self.dt
        self.active = mapping.active_indices
        self.theta0 = as_vector("theta0", theta0, na).copy()
        self.q, self.v, self.effort = self.f.q, self.f.v, self.f.effort
        self._frame = None
        self.reset()

    def reset(self, q0=None):
        """Back to theta0 at rest (q0 is ignored: the closed chain starts where it was built)."""
        f = self.f
        f.theta[:] = self.theta0
        f.dtheta[:] = 0.0
        f.q[:] = self.mapping.complete(self.theta0)      # continuation from the mapping's reference
        self._close()
        f.effort[:] = 0.0

    def _close(self):
        status = close_packed(self.f.flat, self.f.offsets, self.i.flat, self.i.offsets)
        if status != CLOSED:
            raise ValueError(f"closed-chain simulation: {FAILURES.get(status, 'the state is not finite')} "
                             f"at theta_a = {np.array2string(self.f.theta, precision=6)}")

    def step(self, tau, wrench=None, frame=None):
        """Advance by dt under tree torques tau (nv,): the active joints' entries drive the chain (the
        passive joints' are ignored: nothing acts there), and optionally a wrench (6,) [n; f] at the
        origin of `frame`, in root-frame axes."""
        tau = as_vector("tau", tau, self.model.nv)
        require_finite("tau", tau)
        f = self.f
        f.tau_a[:] = tau[self.active]
        self._frame = load_wrench(f, self.model, wrench, frame, self._frame, S_HAS_WRENCH, S_FRAME_BODY)
        status = closed_chain_step(f.flat, f.offsets, self.i.flat, self.i.offsets)
        if status != CLOSED:
            raise ValueError(f"closed-chain simulation: {FAILURES.get(status, 'the state is not finite')} "
                             f"at theta_a = {np.array2string(f.theta, precision=6)}")
        f.effort[:] = 0.0
        f.effort[self.active] = f.tau_a

    @property
    def theta(self):
        return self.f.theta

    @property
    def dtheta(self):
        return self.f.dtheta


@njit(cache=True, nogil=True)
def closed_chain_step(f, fo, ints, io):
    """One RK4 step of dt (module docstring). Returns CLOSED on success, else the failure (the state
    is then back at the step's start)."""
    na = io[ACTIVE + 1] - io[ACTIVE]
    s = field1(f, fo, S, NS)
    dt = s[S_DT]
    theta = field1(f, fo, THETA, na)
    dtheta = field1(f, fo, DTHETA, na)
    start = field2(f, fo, START, 2, na)
    slopes = field2(f, fo, STAGE_DTHETA, 4, na)
    accs = field2(f, fo, STAGE_ACC, 4, na)
    start[0] = theta
    start[1] = dtheta
    for stage in range(4):
        if stage > 0:
            # stage k starts from x + h * (slope of stage k - 1)
            h = dt if stage == 3 else 0.5 * dt
            for k in range(na):
                theta[k] = start[0, k] + h * slopes[stage - 1, k]
                dtheta[k] = start[1, k] + h * accs[stage - 1, k]
        slopes[stage] = dtheta
        status = close_packed(f, fo, ints, io)
        if status == CLOSED:
            status = _acceleration(f, fo, ints, io, accs[stage])
        if status != CLOSED:
            theta[:] = start[0]
            dtheta[:] = start[1]
            close_packed(f, fo, ints, io)
            return status
    for k in range(na):
        theta[k] = start[0, k] + dt / 6.0 * (slopes[0, k] + 2.0 * slopes[1, k] + 2.0 * slopes[2, k] + slopes[3, k])
        dtheta[k] = start[1, k] + dt / 6.0 * (accs[0, k] + 2.0 * accs[1, k] + 2.0 * accs[2, k] + accs[3, k])
    status = close_packed(f, fo, ints, io)
    if status != CLOSED:
        theta[:] = start[0]
        dtheta[:] = start[1]
        close_packed(f, fo, ints, io)
    return status


@njit(cache=True, nogil=True)
def _acceleration(f, fo, ints, io, out):
    """out = M_a^-1 (tau_a + G^T J^T w - h_a) at the closed tree state of the chain fields."""
    nb = io[PARENTS + 1] - io[PARENTS]
    na = io[ACTIVE + 1] - io[ACTIVE]
    s = field1(f, fo, S, NS)
    parents = field1(ints, io, PARENTS, nb)
    screw_axes = field2(f, fo, SCREW_AXES, nb, 6)
    home_R = field3(f, fo, HOME_R, nb, 3, 3)
    home_p = field2(f, fo, HOME_P, nb, 3)
    phi = field2(f, fo, PHI, nb, 10)
    q = field1(f, fo, Q, nb)
    G_ = field2(f, fo, G, nb, na)
    R = field3(f, fo, R_, nb, 3, 3)
    p = field2(f, fo, P_, nb, 3)
    oR = field3(f, fo, OR, nb, 3, 3)
    op = field2(f, fo, OP, nb, 3)
    tmp6 = field2(f, fo, TMP6, 12, 6)
    tau_tree = field1(f, fo, TAU_TREE, nb)
    force = field1(f, fo, FORCE, na)
    projected = field1(f, fo, PROJECTED, na)
    # h_a = G^T rnea(q, v, Gdot dtheta_a)
    if not reduced_inverse_dynamics(parents, screw_axes, home_R, home_p, phi, q, field1(f, fo, V, nb),
                                    field1(f, fo, A_BIAS, nb), field1(f, fo, BASE_ACCEL, 6),
                                    field2(f, fo, F_EXT_ZERO, nb, 6), G_, R, p, field2(f, fo, V_BODY, nb, 6),
                                    field2(f, fo, VDOT_BODY, nb, 6), field2(f, fo, F_, nb, 6), tmp6, tau_tree,
                                    projected):
        return DIVERGED
    tau_a = field1(f, fo, TAU_A, na)
    for k in range(na):
        force[k] = tau_a[k] - projected[k]
    if s[S_HAS_WRENCH] != 0.0:
        # G^T J^T w: the wrench's tree torques, mapped to the actuators
        J = field2(f, fo, J_, 6, nb)
        frame_jacobian(parents, screw_axes, home_R, home_p, q, field1(ints, io, PATH, nb), R, p, oR, op,
                       int(s[S_FRAME_BODY]), field2(f, fo, FRAME_R, 3, 3), field1(f, fo, FRAME_P, 3),
                       LOCAL_WORLD_ALIGNED, J)
        w = field1(f, fo, WRENCH, 6)
        for k in range(nb):
            total = 0.0
            for r in range(6):
                total += J[r, k] * w[r]
            tau_tree[k] = total
        project(G_, tau_tree, projected)
        for k in range(na):
            force[k] += projected[k]
    M_a = field2(f, fo, M_A, na, na)
    if not reduced_inertia(parents, screw_axes, home_R, home_p, phi, q, G_, R, p, oR, op, field2(f, fo, OS, nb, 6),
                           field2(f, fo, PHI_COMPOSITE, nb, 10), field2(f, fo, F_, nb, 6),
                           field2(f, fo, M_, nb, nb), field2(f, fo, MG, nb, na), M_a):
        return DIVERGED
    pivots = field1(ints, io, MASS_PIVOTS, na)
    if lu_factor(M_a, pivots) == 0.0:
        return MASS_SINGULAR
    lu_solve(M_a, pivots, force)
    for k in range(na):
        if not np.isfinite(force[k]):
            return DIVERGED
        out[k] = force[k]
    return CLOSED
