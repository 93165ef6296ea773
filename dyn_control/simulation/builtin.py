"""A rigid-body simulator on dyn_control's own forward dynamics (ABA), for closed-loop tests and the
simulator node when MuJoCo is not wanted. It simulates the Model it is given, joint terms included
(model.py): that model is the simulated robot's truth, which may differ from a controller's model.

Integrator: classical Runge-Kutta (RK4) on x = (q, v), xdot = (v, ABA(q, v, tau + J(q)^T w - f_c)),
with the torque tau, the wrench w and the dry-friction torque f_c held over the step (zero-order
hold, as a digital controller applies them); the rotors' armature I_a is part of ABA's inertia.
Viscous joint friction D = F_v, when there is any, is split off symmetrically (Strang): half a step
of the damping flow (M(q) + diag(I_a)) vdot = -D v, solved exactly at fixed q, then the RK4 step,
then the other half.

Dry (Coulomb) friction F_c, with stick: at the start of a step the friction torque f_c is the one of
an implicit (backward Euler) step of the velocity, which a joint at rest can hold. With M = M(q) +
diag(I_a) and v_free = v + dt a_free (a_free: the stage-0 acceleration without dry friction), the
velocity at the end of the step is
    v_new = argmin_x 1/2 (x - v_free)^T M (x - v_free) + dt sum_i F_c,i |x_i|,
i.e. M (v_new - v_free) = -dt f_c with f_c,i = F_c,i sgn(v_new,i) where v_new,i != 0 and |f_c,i| <= F_c,i
where v_new,i = 0 (stick): the torque needed to stop a joint within the step, clipped to +-F_c. It is
solved by Gauss-Seidel sweeps over the joints (exact soft-thresholding of one velocity at a time,
convergent for this strictly convex problem), and f_c = M (v_free - v_new) / dt is then held over the
RK4 step; stage 0's acceleration becomes (v_new - v) / dt. A joint at rest under a torque below F_c
gets f_c equal to that torque and so no acceleration at any stage (it stays still to round-off); a
slipping joint feels F_c against its motion, and one that would reverse within a step stops instead
(no chattering: no velocity band, no stiffness). This differs on purpose from the smooth F_c sgn_s(v)
of the model's dynamics (kernels/joint_terms.py): the simulated robot sticks, a model only
approximates it.

Why: RK4 is stable for |lambda dt| < 2.8 and accurate to O(dt^4). The fastest modes here are the
closed-loop ones, |lambda| = sqrt(kp) of a few tens of rad/s, so |lambda dt| ~ 0.03 at dt = 1 ms;
even a free fall of the bundled arm7 that spins its wrist at 80 rad/s keeps the energy
(Pinocchio's) within 1e-5 J over 2 s, where semi-implicit Euler, symplectic only for a constant
mass matrix, is off by 16 J. Damping is the one stiff term (a wrist inertia of 1e-3 kg m^2 and
D = 1 N m s/rad decay at 1000 /s, outside explicit stability at 1 ms); its exact flow,
v <- expm(-h M^-1 D) v, only shrinks the kinetic energy, so the split step is stable for any
D >= 0 and second-order accurate while dt D / M stays below about one. Dry friction is implicit, so
stable for any F_c; it is first-order accurate where a joint starts or stops.
Cost: four ABA calls per step (plus two CRBA and two 7x7 eigenproblems with damping, and with dry
friction tens of sweeps over M, which takes CRBA's M of the damping step or computes it), all in one
compiled call (`rk4_step`, nogil) on packed
buffers (kernels/packed.py): about 20 us for the bundled arm, so the simulator node keeps 1 kHz with
little of a core.
Joint limits and effort limits are not simulated (clamp efforts in the controller).
"""
import math

import numpy as np

from ..control.checks import as_gain, as_scalar, require_finite
from ..dynamics import as_vector, jacobian
from ..jit import njit
from ..kernels.aba import aba
from ..kernels.crba import crba
from ..kernels.joint_terms import add_armature
from ..kernels.kinematics import LOCAL_WORLD_ALIGNED, frame_jacobian
from ..kernels.packed import Packed, copy_model, field1, field2, field3, field_indices

# entries of the scalar field `s`
S_DT, S_HAS_WRENCH, S_DAMPED, S_FRAME_BODY, S_DRY, NS = range(6)
DRY_SWEEPS = 200        # most Gauss-Seidel sweeps of the dry-friction step
DRY_TOLERANCE = 1e-14   # ... which stop once no velocity changes by more than this, relative


def float_fields(nb):
    return [
        ("screw_axes", (nb, 6)), ("home_R", (nb, 3, 3)), ("home_p", (nb, 3)), ("phi", (nb, 10)),
        ("base_accel", (6,)), ("damping", (nb,)), ("coulomb", (nb,)),
        # ABA's joint terms: the armature only (viscous and dry friction are the split-off steps)
        ("joint_terms", (nb, 3)),
        ("q", (nb,)), ("v", (nb,)), ("effort", (nb,)), ("wrench", (6,)), ("frame_R", (3, 3)),
        ("frame_p", (3,)), ("s", (NS,)),
        # RK4 stages (state and acceleration), the torque of a stage, the held dry-friction torque,
        # the velocities of the dry-friction step (v_free, v_new)
        ("stage_q", (4, nb)), ("stage_v", (4, nb)), ("stage_a", (4, nb)), ("stage_tau", (nb,)),
        ("dry_torque", (nb,)), ("dry_v", (2, nb)),
        # workspace of ABA, CRBA and the Jacobian
        ("R", (nb, 3, 3)), ("p", (nb, 3)), ("oR", (nb, 3, 3)), ("op", (nb, 3)), ("oS", (nb, 6)),
        ("oV", (nb, 6)), ("phi_world", (nb, 10)), ("c", (nb, 6)), ("IA", (nb, 6, 6)), ("pA", (nb, 6)),
        ("U", (nb, 6)), ("D", (nb,)), ("u", (nb,)), ("oA", (nb, 6)), ("tmp6", (4, 6)),
        ("f_ext_zero", (nb, 6)), ("J", (6, nb)), ("M", (nb, nb)), ("phi_composite", (nb, 10)),
        ("F", (nb, 6)),
    ]


_F = field_indices(float_fields(1))
(SCREW_AXES, HOME_R, HOME_P, PHI, BASE_ACCEL, DAMPING, COULOMB, JOINT_TERMS, Q, V, EFFORT, WRENCH, FRAME_R,
 FRAME_P, S, STAGE_Q, STAGE_V, STAGE_A, STAGE_TAU, DRY_TORQUE, DRY_V, R_, P_, OR, OP, OS, OV, PHI_WORLD, C_,
 IA, PA, U_, D_, U_SMALL, OA, TMP6, F_EXT_ZERO, J_, M_, PHI_COMPOSITE, F_) = range(len(_F))
PARENTS, PATH = 0, 1


class BuiltinSimulator:
    """State q, v (arrays, updated in place), effort (the joint torque commanded for the last step:
    the drive's, without friction and the external wrench), time [s].

    The robot is `model`, joint terms included: armature, viscous friction (`damping`, when given,
    replaces model.viscous_friction: a number or one per joint) and dry friction with stick."""

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
        f.damping[:] = as_gain("damping", model.viscous_friction if damping is None else damping, nb)
        f.coulomb[:] = model.coulomb_friction
        f.joint_terms[:, 0] = model.armature
        f.s[S_DT] = self.dt
        f.s[S_DAMPED] = float(np.any(f.damping > 0.0))
        f.s[S_DRY] = float(np.any(f.coulomb > 0.0))
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
        self._frame = load_wrench(f, self.model, wrench, frame, self._frame, S_HAS_WRENCH, S_FRAME_BODY)
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
    """One step of dt (module docstring): damping half step, dry-friction torque, RK4 under the held
    torque, wrench and friction, damping half step. False when the new state is not finite."""
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
    dry = s[S_DRY] != 0.0
    if not _acceleration(f, fo, ints, io, nb, 0, False):
        return False
    if dry:
        _dry_friction(f, fo, ints, io, nb)
    for stage in range(1, 4):
        # stage k starts from x + h * (slope of stage k - 1)
        h = dt if stage == 3 else 0.5 * dt
        for k in range(nb):
            qs[stage, k] = q[k] + h * vs[stage - 1, k]
            vs[stage, k] = v[k] + h * accs[stage - 1, k]
        if not _acceleration(f, fo, ints, io, nb, stage, dry):
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
def _acceleration(f, fo, ints, io, nb, stage, dry):
    """ABA(q, v, tau + J(q)^T w - f_c) of RK4 stage `stage`, with this step's torque, wrench and, when
    `dry`, dry-friction torque f_c."""
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
    if dry:
        f_c = field1(f, fo, DRY_TORQUE, nb)
        for k in range(nb):
            tau[k] -= f_c[k]
    if s[S_HAS_WRENCH] != 0.0:
        J = field2(f, fo, J_, 6, nb)
        frame_jacobian(parents, screw_axes, home_R, home_p, q, field1(ints, io, PATH, nb), R, p, oR, op,
                       int(s[S_FRAME_BODY]), field2(f, fo, FRAME_R, 3, 3), field1(f, fo, FRAME_P, 3),
                       LOCAL_WORLD_ALIGNED, J)
        w = field1(f, fo, WRENCH, 6)
        for k in range(nb):
            for r in range(6):
                tau[k] += J[r, k] * w[r]
    return aba(parents, screw_axes, home_R, home_p, field2(f, fo, PHI, nb, 10),
               field2(f, fo, JOINT_TERMS, nb, 3), q, field2(f, fo, STAGE_V, 4, nb)[stage], tau,
               field1(f, fo, BASE_ACCEL, 6), field2(f, fo, F_EXT_ZERO, nb, 6), R, p, oR, op, field2(f, fo, OS, nb, 6), field2(f, fo, OV, nb, 6),
               field2(f, fo, PHI_WORLD, nb, 10), field2(f, fo, C_, nb, 6), field3(f, fo, IA, nb, 6, 6),
               field2(f, fo, PA, nb, 6), field2(f, fo, U_, nb, 6), field1(f, fo, D_, nb),
               field1(f, fo, U_SMALL, nb), field2(f, fo, OA, nb, 6), field2(f, fo, TMP6, 4, 6),
               field2(f, fo, STAGE_A, 4, nb)[stage])


@njit(cache=True, nogil=True)
def _inertia(f, fo, ints, io, nb, q):
    """M = M(q) + diag(I_a) into the field M (CRBA's workspace)."""
    M = field2(f, fo, M_, nb, nb)
    crba(field1(ints, io, PARENTS, nb), field2(f, fo, SCREW_AXES, nb, 6), field3(f, fo, HOME_R, nb, 3, 3),
         field2(f, fo, HOME_P, nb, 3), field2(f, fo, PHI, nb, 10), q, field3(f, fo, R_, nb, 3, 3),
         field2(f, fo, P_, nb, 3), field3(f, fo, OR, nb, 3, 3), field2(f, fo, OP, nb, 3),
         field2(f, fo, OS, nb, 6), field2(f, fo, PHI_COMPOSITE, nb, 10), field2(f, fo, F_, nb, 6), M)
    add_armature(field2(f, fo, JOINT_TERMS, nb, 3), M)
    return M


@njit(cache=True, nogil=True)
def _dry_friction(f, fo, ints, io, nb):
    """The dry-friction torque f_c held over this step (module docstring): v_new minimizes
    1/2 (x - v_free)^T M (x - v_free) + dt sum_i F_c,i |x_i| by Gauss-Seidel sweeps, each joint's
    velocity soft-thresholded with the others fixed; then f_c = M (v_free - v_new) / dt, and stage 0's
    acceleration becomes (v_new - v) / dt."""
    s = field1(f, fo, S, NS)
    dt = s[S_DT]
    v = field1(f, fo, V, nb)
    a0 = field2(f, fo, STAGE_A, 4, nb)[0]
    F_c = field1(f, fo, COULOMB, nb)
    f_c = field1(f, fo, DRY_TORQUE, nb)
    v_free, x = field2(f, fo, DRY_V, 2, nb)
    # M at this q: the damping half step has just computed it
    M = field2(f, fo, M_, nb, nb) if s[S_DAMPED] != 0.0 else _inertia(f, fo, ints, io, nb, field1(f, fo, Q, nb))
    scale = 0.0
    for k in range(nb):
        v_free[k] = v[k] + dt * a0[k]
        x[k] = v_free[k]
        scale = max(scale, abs(v_free[k]))
    for _ in range(DRY_SWEEPS):
        change = 0.0
        for i in range(nb):
            # minimize over x_i: 1/2 M_ii (x_i - y)^2 + dt F_c,i |x_i|, y the unconstrained minimum
            r = 0.0
            for j in range(nb):
                if j != i:
                    r += M[i, j] * (x[j] - v_free[j])
            y = v_free[i] - r / M[i, i]
            threshold = dt * F_c[i] / M[i, i]
            new = y - threshold if y > threshold else (y + threshold if y < -threshold else 0.0)
            change = max(change, abs(new - x[i]))
            x[i] = new
        if change <= DRY_TOLERANCE * scale:
            break
    for i in range(nb):
        total = 0.0
        for j in range(nb):
            total += M[i, j] * (v_free[j] - x[j])
        f_c[i] = total / dt
        a0[i] = (x[i] - v[i]) / dt


@njit(cache=True, nogil=True)
def _damp(f, fo, ints, io, nb, h):
    """The damping flow M vdot = -D v over time h (M = M(q) + diag(I_a)), exact at fixed q:
    v <- expm(-h M^-1 D) v. With M = L L^T and L^-1 D L^-T = W diag(lam) W^T:
    expm(-h M^-1 D) = L^-T W diag(exp(-h lam)) W^T L^T."""
    v = field1(f, fo, V, nb)
    d = field1(f, fo, DAMPING, nb)
    M = _inertia(f, fo, ints, io, nb, field1(f, fo, Q, nb))
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


def load_wrench(f, model, wrench, frame, loaded_frame, has_wrench, frame_body):
    """Into a step's fields `f`: the wrench (checked_wrench) or none, in slots `has_wrench` and
    `frame_body` of f.s whether there is one and its frame's body, and the frame's placement when
    `frame` is not `loaded_frame`, the one they hold. Returns the frame they hold now."""
    if wrench is not None:
        f.wrench[:] = checked_wrench(model, wrench, frame)
        if frame != loaded_frame:
            k = model.frame_id(frame)
            f.frame_R[:] = model.frame_R[k]
            f.frame_p[:] = model.frame_p[k]
            f.s[frame_body] = model.frame_body[k]
            loaded_frame = frame
    f.s[has_wrench] = wrench is not None
    return loaded_frame
