"""A rigid-body simulator on dyn_control's own forward dynamics (ABA), for closed-loop tests and the
simulator node when MuJoCo is not wanted.

Integrator: classical Runge-Kutta (RK4) on x = (q, v), xdot = (v, ABA(q, v, tau + J(q)^T w)), with
the torque tau and the wrench w held over the step (zero-order hold, as a digital controller
applies them). Viscous joint damping D, when there is any, is split off symmetrically (Strang):
half a step of the damping flow M(q) vdot = -D v, solved exactly at fixed q, then the RK4 step,
then the other half.

Why: RK4 is stable for |lambda dt| < 2.8 and accurate to O(dt^4). The fastest modes here are the
closed-loop ones, |lambda| = sqrt(kp) of a few tens of rad/s, so |lambda dt| ~ 0.03 at dt = 1 ms;
even a free fall of the bundled arm7 that spins its wrist at 80 rad/s keeps the energy
(Pinocchio's) within 1e-5 J over 2 s, where semi-implicit Euler, symplectic only for a constant
mass matrix, is off by 16 J. Damping is the one stiff term (a wrist inertia of 1e-3 kg m^2 and
D = 1 N m s/rad decay at 1000 /s, outside explicit stability at 1 ms); its exact flow,
v <- expm(-h M^-1 D) v, only shrinks the kinetic energy, so the split step is stable for any
D >= 0 and second-order accurate while dt D / M stays below about one.
Cost: four ABA calls per step (plus two CRBA and two 7x7 eigenproblems with damping), all in
one compiled call (`rk4_step`, nogil) on packed buffers (kernels/packed.py): about 20 us for the
bundled arm, so the simulator node keeps 1 kHz with little of a core.
Joint limits, friction and effort limits are not simulated (clamp efforts in the controller).
"""
import math

import numpy as np
from numba import njit

from ..control.checks import as_gain, as_scalar, require_finite
from ..dynamics import as_vector, jacobian
from ..kernels.aba import aba
from ..kernels.crba import crba
from ..kernels.kinematics import LOCAL_WORLD_ALIGNED, frame_jacobian
from ..kernels.packed import Packed, copy_model, field1, field2, field3, field_indices

# entries of the scalar field `s`
S_DT, S_HAS_WRENCH, S_DAMPED, S_FRAME_BODY, NS = range(5)


def float_fields(nb):
    return [
        ("screw_axes", (nb, 6)), ("home_R", (nb, 3, 3)), ("home_p", (nb, 3)), ("phi", (nb, 10)),
        ("base_accel", (6,)), ("damping", (nb,)),
        ("q", (nb,)), ("v", (nb,)), ("effort", (nb,)), ("wrench", (6,)), ("frame_R", (3, 3)),
        ("frame_p", (3,)), ("s", (NS,)),
        # RK4 stages (state and acceleration), the torque of a stage
        ("stage_q", (4, nb)), ("stage_v", (4, nb)), ("stage_a", (4, nb)), ("stage_tau", (nb,)),
        # workspace of ABA, CRBA and the Jacobian
        ("R", (nb, 3, 3)), ("p", (nb, 3)), ("oR", (nb, 3, 3)), ("op", (nb, 3)), ("oS", (nb, 6)),
        ("oV", (nb, 6)), ("phi_world", (nb, 10)), ("c", (nb, 6)), ("IA", (nb, 6, 6)), ("pA", (nb, 6)),
        ("U", (nb, 6)), ("D", (nb,)), ("u", (nb,)), ("oA", (nb, 6)), ("tmp6", (4, 6)),
        ("f_ext_zero", (nb, 6)), ("J", (6, nb)), ("M", (nb, nb)), ("phi_composite", (nb, 10)),
        ("F", (nb, 6)),
    ]


_F = field_indices(float_fields(1))
(SCREW_AXES, HOME_R, HOME_P, PHI, BASE_ACCEL, DAMPING, Q, V, EFFORT, WRENCH, FRAME_R, FRAME_P, S,
 STAGE_Q, STAGE_V, STAGE_A, STAGE_TAU, R_, P_, OR, OP, OS, OV, PHI_WORLD, C_, IA, PA, U_, D_, U_SMALL,
 OA, TMP6, F_EXT_ZERO, J_, M_, PHI_COMPOSITE, F_) = range(len(_F))
PARENTS, PATH = 0, 1


class BuiltinSimulator:
    """State q, v (arrays, updated in place), effort (the joint torque of the last step, without
    the external wrench), time [s]."""

    def __init__(self, model, dt, q0=None, v0=None, damping=None):
        if model.coupling is not None:
            raise ValueError("BuiltinSimulator: mimic-coupled models are not supported (load with mimic=False)")
        self.model = model
        self.data = model.create_data()
        self.nv = nb = model.nv
        self.dt = as_scalar("dt", dt)
        self.f = Packed(float_fields(nb))
        self.i = Packed([("parents", (nb,)), ("path", (nb,))], dtype=np.int64)
        f = self.f
        copy_model(model, f)
        f.damping[:] = as_gain("damping", model.damping if damping is None else damping, nb)
        f.s[S_DT] = self.dt
        f.s[S_DAMPED] = float(np.any(f.damping > 0.0))
        self.i.parents[:] = model.parents
        self.q, self.v, self.effort = f.q, f.v, f.effort
        self._frame = None
        self.reset(q0, v0)

    def reset(self, q0=None, v0=None):
        """Back to time 0 at state (q0, v0) (default: the neutral configuration, at rest)."""
        self.q[:] = initial_state("q0", q0, self.model.neutral_configuration())
        self.v[:] = initial_state("v0", v0, np.zeros(self.nv))
        self.effort[:] = 0.0
        self.time = 0.0

    def applied_joint_torque(self, wrench, frame):
        """J(q)^T w: the joint torques of the wrench w = [n; f] (6,) acting at the origin of
        `frame`, components in root-frame axes (J: the frame's "local_world_aligned" Jacobian)."""
        wrench = checked_wrench(self.model, wrench, frame)
        return jacobian(self.model, self.data, self.q, frame, "local_world_aligned").T @ wrench

    def step(self, tau, wrench=None, frame=None):
        """Advance by dt with joint torques tau (nv,) and optionally an external wrench (6,)
        [n; f] at the origin of `frame`, in root-frame axes."""
        tau = as_vector("tau", tau, self.nv)
        require_finite("tau", tau)
        f = self.f
        if wrench is not None:
            f.wrench[:] = checked_wrench(self.model, wrench, frame)
            if frame != self._frame:
                k = self.model.frame_id(frame)
                f.frame_R[:] = self.model.frame_R[k]
                f.frame_p[:] = self.model.frame_p[k]
                f.s[S_FRAME_BODY] = self.model.frame_body[k]
                self._frame = frame
        f.s[S_HAS_WRENCH] = wrench is not None
        self.effort[:] = tau
        try:
            finite = rk4_step(f.flat, f.offsets, self.i.flat, self.i.offsets)
        except ZeroDivisionError:
            raise ValueError("forward dynamics undefined: M(q) is singular") from None
        if not finite:
            raise ValueError("the simulation diverged: the state is no longer finite")
        self.time += self.dt


@njit(cache=True, nogil=True)
def rk4_step(f, fo, ints, io):
    """One step of dt (module docstring): damping half step, RK4 under the held torque and wrench,
    damping half step. False when the new state is not finite."""
    nb = io[1] - io[0]
    s = field1(f, fo, S, NS)
    dt = s[S_DT]
    q = field1(f, fo, Q, nb)
    v = field1(f, fo, V, nb)
    qs = field2(f, fo, STAGE_Q, 4, nb)
    vs = field2(f, fo, STAGE_V, 4, nb)
    accs = field2(f, fo, STAGE_A, 4, nb)
    if s[S_DAMPED] != 0.0:
        _damp(f, fo, ints, io, nb, 0.5 * dt)
    qs[0] = q
    vs[0] = v
    if not _acceleration(f, fo, ints, io, nb, 0):
        return False
    for stage in range(1, 4):
        # stage k starts from x + h * (slope of stage k - 1)
        h = dt if stage == 3 else 0.5 * dt
        for k in range(nb):
            qs[stage, k] = q[k] + h * vs[stage - 1, k]
            vs[stage, k] = v[k] + h * accs[stage - 1, k]
        if not _acceleration(f, fo, ints, io, nb, stage):
            return False
    for k in range(nb):
        q[k] += dt / 6.0 * (vs[0, k] + 2.0 * vs[1, k] + 2.0 * vs[2, k] + vs[3, k])
        v[k] += dt / 6.0 * (accs[0, k] + 2.0 * accs[1, k] + 2.0 * accs[2, k] + accs[3, k])
    if s[S_DAMPED] != 0.0:
        _damp(f, fo, ints, io, nb, 0.5 * dt)
    for k in range(nb):
        if not (np.isfinite(q[k]) and np.isfinite(v[k])):
            return False
    return True


@njit(cache=True, nogil=True)
def _acceleration(f, fo, ints, io, nb, stage):
    """ABA(q, v, tau + J(q)^T w) of RK4 stage `stage`, with this step's torque and wrench."""
    s = field1(f, fo, S, NS)
    parents = field1(ints, io, PARENTS, nb)
    screw_axes = field2(f, fo, SCREW_AXES, nb, 6)
    home_R = field3(f, fo, HOME_R, nb, 3, 3)
    home_p = field2(f, fo, HOME_P, nb, 3)
    R = field3(f, fo, R_, nb, 3, 3)
    p = field2(f, fo, P_, nb, 3)
    oR = field3(f, fo, OR, nb, 3, 3)
    op = field2(f, fo, OP, nb, 3)
    q = field2(f, fo, STAGE_Q, 4, nb)[stage]
    tau = field1(f, fo, STAGE_TAU, nb)
    tau[:] = field1(f, fo, EFFORT, nb)
    if s[S_HAS_WRENCH] != 0.0:
        J = field2(f, fo, J_, 6, nb)
        frame_jacobian(parents, screw_axes, home_R, home_p, q, field1(ints, io, PATH, nb), R, p, oR, op,
                       int(s[S_FRAME_BODY]), field2(f, fo, FRAME_R, 3, 3), field1(f, fo, FRAME_P, 3),
                       LOCAL_WORLD_ALIGNED, J)
        w = field1(f, fo, WRENCH, 6)
        for k in range(nb):
            for r in range(6):
                tau[k] += J[r, k] * w[r]
    return aba(parents, screw_axes, home_R, home_p, field2(f, fo, PHI, nb, 10), q,
               field2(f, fo, STAGE_V, 4, nb)[stage], tau, field1(f, fo, BASE_ACCEL, 6),
               field2(f, fo, F_EXT_ZERO, nb, 6), R, p, oR, op, field2(f, fo, OS, nb, 6), field2(f, fo, OV, nb, 6),
               field2(f, fo, PHI_WORLD, nb, 10), field2(f, fo, C_, nb, 6), field3(f, fo, IA, nb, 6, 6),
               field2(f, fo, PA, nb, 6), field2(f, fo, U_, nb, 6), field1(f, fo, D_, nb),
               field1(f, fo, U_SMALL, nb), field2(f, fo, OA, nb, 6), field2(f, fo, TMP6, 4, 6),
               field2(f, fo, STAGE_A, 4, nb)[stage])


@njit(cache=True, nogil=True)
def _damp(f, fo, ints, io, nb, h):
    """The damping flow M(q) vdot = -D v over time h, exact at fixed q: v <- expm(-h M^-1 D) v.
    With M = L L^T and L^-1 D L^-T = W diag(lam) W^T: expm(-h M^-1 D) = L^-T W diag(exp(-h lam)) W^T L^T."""
    q = field1(f, fo, Q, nb)
    v = field1(f, fo, V, nb)
    d = field1(f, fo, DAMPING, nb)
    M = field2(f, fo, M_, nb, nb)
    crba(field1(ints, io, PARENTS, nb), field2(f, fo, SCREW_AXES, nb, 6), field3(f, fo, HOME_R, nb, 3, 3),
         field2(f, fo, HOME_P, nb, 3), field2(f, fo, PHI, nb, 10), q, field3(f, fo, R_, nb, 3, 3),
         field2(f, fo, P_, nb, 3), field3(f, fo, OR, nb, 3, 3), field2(f, fo, OP, nb, 3),
         field2(f, fo, OS, nb, 6), field2(f, fo, PHI_COMPOSITE, nb, 10), field2(f, fo, F_, nb, 6), M)
    L = np.linalg.cholesky(M)
    Linv = np.linalg.inv(L)
    lam, W = np.linalg.eigh(Linv @ np.diag(d) @ Linv.T)
    x = W.T @ (L.T @ v)
    for k in range(nb):
        x[k] *= math.exp(-h * lam[k])
    v[:] = Linv.T @ (W @ x)


def initial_state(name, value, default):
    if value is None:
        return np.array(default, dtype=np.float64)
    x = as_vector(name, value, default.shape[0]).copy()
    require_finite(name, x)
    return x


def checked_wrench(model, wrench, frame):
    """The wrench as a finite (6,) array, and a ValueError unless `frame` names a frame of model."""
    if frame is None:
        raise ValueError("frame must name the link or joint frame the wrench acts at, got None")
    model.frame_id(frame)
    wrench = as_vector("wrench", wrench, 6)
    require_finite("wrench", wrench)
    return wrench
