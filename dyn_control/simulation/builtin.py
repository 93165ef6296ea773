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
Cost: four ABA calls per step (plus two CRBA and two 7x7 eigenproblems with damping).
Joint limits, friction and effort limits are not simulated (clamp efforts in the controller).
"""
import numpy as np
from scipy.linalg import eigh

from ..control.checks import as_gain, as_scalar, require_finite
from ..dynamics import aba, as_vector, crba, jacobian


class BuiltinSimulator:
    """State q, v (arrays, updated in place), effort (the joint torque of the last step, without
    the external wrench), time [s]."""

    def __init__(self, model, dt, q0=None, v0=None, damping=None):
        self.model = model
        self.data = model.create_data()
        self.nv = model.nv
        self.dt = as_scalar("dt", dt)
        self.damping = as_gain("damping", model.damping if damping is None else damping, self.nv)
        self.q = np.zeros(self.nv)
        self.v = np.zeros(self.nv)
        self.effort = np.zeros(self.nv)
        self.reset(q0, v0)
        self._damped = bool(np.any(self.damping > 0.0))
        self._D = np.diag(self.damping)
        self._wrench = None                  # the external wrench of the current step
        self._frame = None
        self._tau = np.zeros(self.nv)        # tau + J^T w at an RK4 stage
        self._stage_q = np.zeros((4, self.nv))   # RK4 stage states and their accelerations
        self._stage_v = np.zeros((4, self.nv))
        self._stage_a = np.zeros((4, self.nv))
        self._weights = self.dt / 6.0 * np.array([1.0, 2.0, 2.0, 1.0])

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
        if wrench is not None:
            wrench = checked_wrench(self.model, wrench, frame)
        self.effort[:] = tau
        self._wrench = wrench
        self._frame = frame
        q, v, dt = self.q, self.v, self.dt
        qs, vs, accs = self._stage_q, self._stage_v, self._stage_a
        if self._damped:
            self._damp(q, v, 0.5 * dt)
        qs[0] = q
        vs[0] = v
        self._acceleration(qs[0], vs[0], accs[0])
        for s, h in ((1, 0.5 * dt), (2, 0.5 * dt), (3, dt)):
            # stage s starts from x + h * (slope of stage s - 1)
            np.multiply(vs[s - 1], h, out=qs[s])
            qs[s] += q
            np.multiply(accs[s - 1], h, out=vs[s])
            vs[s] += v
            self._acceleration(qs[s], vs[s], accs[s])
        q += np.dot(self._weights, vs)
        v += np.dot(self._weights, accs)
        if self._damped:
            self._damp(q, v, 0.5 * dt)
        self.time += dt

    def _damp(self, q, v, h):
        """The damping flow M(q) vdot = -D v over time h, exact at fixed q: v <- expm(-h M^-1 D) v,
        through the generalized eigenproblem D X = M X diag(lam), X^T M X = I, so that
        expm(-h M^-1 D) = X diag(exp(-h lam)) X^T M."""
        M = crba(self.model, self.data, q)
        lam, X = eigh(self._D, M)
        v[:] = X @ (np.exp(-h * lam) * (X.T @ (M @ v)))

    def _acceleration(self, q, v, out):
        """ABA(q, v, tau + J(q)^T w) into out, with this step's torque and wrench."""
        self._tau[:] = self.effort
        if self._wrench is not None:
            J = jacobian(self.model, self.data, q, self._frame, "local_world_aligned")
            self._tau += J.T @ self._wrench
        out[:] = aba(self.model, self.data, q, v, self._tau)


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
