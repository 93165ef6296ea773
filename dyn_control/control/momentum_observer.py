"""External-torque estimation with the generalized-momentum observer, and the wrench behind it.

The generalized momentum p = M(q) qd obeys (since Mdot = C + C^T)

    pdot = tau + beta + tau_ext,   beta = C(q, qd)^T qd - g(q),

which needs no joint acceleration. The observer (De Luca and Mattone, ICRA 2003)

    r = K_O (p(t) - p(0) - integral_0^t (tau + beta + r) ds)

gives rdot = K_O (tau_ext - r): r follows tau_ext through a first-order low-pass of bandwidth
K_O [1/s] per joint (time constant 1 / K_O). Sampled, each step of dt takes from the momentum
balance the mean external torque over the step,

    tau_mean = (p_k - p_k-1) / dt - tau - (beta_k-1 + beta_k) / 2,

with the applied torque tau held over the step and beta by the trapezoidal rule (its error
O(dt^3): a step of tens of ms, after missed samples, stays accurate on a moving robot), and
relaxes r toward it as the continuous observer does over dt:

    r_k = r_k-1 + (1 - exp(-K_O dt)) (tau_mean - r_k-1),

exact for an external torque constant over the step, stable for any K_O dt, and to first order in
K_O dt the integral form above.
"""
import math

import numpy as np

from ..dynamics import as_vector, check_model_data, coriolis_matrix, crba, jacobian, rnea
from ..jit import njit
from ..kernels.cholesky import cholesky_solve
from .checks import as_gain, as_scalar, copy_out, require_finite


class MomentumObserver:
    """Estimates the joint torques tau_ext the environment exerts, sample by sample."""

    def __init__(self, model, gain, dt):
        nv = model.nv
        gain = as_gain("gain", gain, nv, positive=True)
        dt = as_scalar("dt", dt)
        self.model = model
        self.data = model.create_data()
        self.nv = nv
        self.gain = gain
        self.dt = dt
        self.r = np.zeros(nv)            # the estimate of tau_ext
        self.p_prev = np.zeros(nv)       # M(q) qd at the last sample
        self._p = np.zeros(nv)           # ... at this one
        self._beta_prev = np.zeros(nv)   # C^T qd - g at the last sample
        self._beta = np.zeros(nv)        # ... at this one
        self._tau_mean = np.zeros(nv)
        self._zero = np.zeros(nv)
        self.initialized = False

    def reset(self, q, v):
        """Start observing at state (q, v), estimate zero."""
        q = as_vector("q", q, self.nv)
        v = as_vector("v", v, self.nv)
        require_finite("v", v)
        self._momentum_terms(q, v, self.p_prev, self._beta_prev)
        self.r[:] = 0.0
        self.initialized = True

    def set_model(self, model, q, v):
        """Use another model of the same robot from now on (e.g. adapted inertial parameters) at the
        current state (q, v): the last momentum shifts by the change of M(q) v, so the estimate goes
        on without a jump."""
        if model.nv != self.nv:
            raise ValueError(f"model must have nv = {self.nv} like the current one, got {model.nv}")
        q = as_vector("q", q, self.nv)
        v = as_vector("v", v, self.nv)
        require_finite("v", v)
        old = crba(self.model, self.data, q) @ v
        self.model = model
        self.data = model.create_data()
        self.p_prev += crba(model, self.data, q) @ v - old

    def update(self, q, v, tau_applied, out=None):
        """One sample: the state (q, v) now and the joint torque applied over the last step.
        Returns the external joint torque estimate (nv,). The first call without reset() resets."""
        if not self.initialized:
            self.reset(q, v)
            return copy_out(self.r, out)
        nv = self.nv
        q = as_vector("q", q, nv)
        v = as_vector("v", v, nv)
        tau_applied = as_vector("tau_applied", tau_applied, nv)
        require_finite("tau_applied", tau_applied)
        require_finite("v", v)
        p, beta, tau_mean = self._p, self._beta, self._tau_mean
        self._momentum_terms(q, v, p, beta)
        # tau_mean = (p - p_prev) / dt - tau_applied - (beta_prev + beta) / 2
        np.subtract(p, self.p_prev, out=tau_mean)
        tau_mean /= self.dt
        tau_mean -= tau_applied
        tau_mean -= 0.5 * (self._beta_prev + beta)
        # r += (1 - exp(-K_O dt)) (tau_mean - r)
        tau_mean -= self.r
        tau_mean *= 1.0 - np.exp(-self.gain * self.dt)
        self.r += tau_mean
        self.p_prev[:] = p
        self._beta_prev[:] = beta
        return copy_out(self.r, out)

    def _momentum_terms(self, q, v, p, beta):
        """p = M(q) v, beta = C(q, v)^T v - g(q)."""
        np.dot(crba(self.model, self.data, q), v, out=p)
        np.dot(coriolis_matrix(self.model, self.data, q, v).T, v, out=beta)
        beta -= rnea(self.model, self.data, q, self._zero, self._zero)


def wrench_from_joint_torque(model, data, q, tau_ext, frame, damping=1e-3):
    """The wrench w = [n; f] (6,) at the origin of `frame`, root-frame axes, that explains the
    joint torques tau_ext = J^T w (J: the frame's "local_world_aligned" Jacobian), in the damped
    least-squares sense w = (J J^T + damping^2 I)^-1 J tau_ext. It is the wrench the environment
    exerts on the robot when tau_ext comes from MomentumObserver."""
    check_model_data(model, data)
    tau_ext = as_vector("tau_ext", tau_ext, model.nv)
    require_finite("tau_ext", tau_ext)
    damping = as_scalar("damping", damping, positive=False)
    J = jacobian(model, data, q, frame, "local_world_aligned")
    A = J @ J.T
    A[np.diag_indices(6)] += damping * damping
    return np.linalg.solve(A, J @ tau_ext)



@njit(cache=True, nogil=True)
def efforts_measured(has_effort, effort):
    """Whether a sample's efforts measure the joint torques the observer needs: the sample carries
    them (has_effort) and they are not all exactly zero. A robot held by its brakes (a simulator
    until its first command, or after a command timeout) or a driver that fills the field with
    zeros reports 0 on every joint, which no measured arm does; the observer then takes the last
    command as the applied torque instead."""
    if not has_effort:
        return False
    for k in range(effort.shape[0]):
        if effort[k] != 0.0:
            return True
    return False


@njit(cache=True, nogil=True)
def observer_step(dt, momentum, drift, tau_applied, gain, p_prev, drift_prev, r):
    """One step of the compiled ticks' observer (module docstring): the mean external torque over the
    step from the momentum balance, the applied torque held, the drift by the trapezoidal rule (so
    a step of tens of ms after missed samples stays accurate), and r's exact relaxation toward it
    (stable for any K_O dt). Then the momentum and drift become the previous ones."""
    for i in range(r.shape[0]):
        tau_mean = (momentum[i] - p_prev[i]) / dt - tau_applied[i] - 0.5 * (drift_prev[i] + drift[i])
        r[i] += (1.0 - math.exp(-gain[i] * dt)) * (tau_mean - r[i])
        p_prev[i] = momentum[i]
        drift_prev[i] = drift[i]


@njit(cache=True, nogil=True)
def damped_least_squares(J, r, damping, A, w):
    """w = (J J^T + damping^2 I)^-1 J r (wrench_from_joint_torque's, compiled), J (m, n), A (m, m)
    workspace. False when J J^T + damping^2 I is not positive definite or w is not finite."""
    m, n = J.shape
    for a in range(m):
        total = 0.0
        for k in range(n):
            total += J[a, k] * r[k]
        w[a] = total
        for b in range(m):
            total = 0.0
            for k in range(n):
                total += J[a, k] * J[b, k]
            A[a, b] = total
        A[a, a] += damping * damping
    if not cholesky_solve(A, w):
        return False
    for a in range(m):
        if not np.isfinite(w[a]):
            return False
    return True
