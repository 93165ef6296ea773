"""External-torque estimation with the generalized-momentum observer, and the wrench behind it.

The generalized momentum p = M(q) qd obeys (since Mdot = C + C^T)

    pdot = tau + C(q, qd)^T qd - g(q) + tau_ext,

which needs no joint acceleration. The observer (De Luca and Mattone, ICRA 2003)

    r = K_O (p(t) - p(0) - integral_0^t (tau + C^T qd - g + r) ds)

gives rdot = K_O (tau_ext - r): r follows tau_ext through a first-order low-pass of bandwidth
K_O [1/s] per joint (time constant 1 / K_O). The integral is summed step by step: the torque
applied over the step (held), the last estimate r, and beta = C^T qd - g by the trapezoidal rule
over the samples that bound the step, so that its error stays O(dt^3) per step on a moving robot
(the rectangle rule's dt^2 / 2 dbeta/dt grows fast with dt when samples are missed). With
K_O dt << 1 the discrete filter is stable and its lag is the continuous one.
"""
import numpy as np

from ..dynamics import as_vector, check_model_data, coriolis_matrix, crba, jacobian, rnea
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
        self.p0 = np.zeros(nv)           # M(q0) qd0
        self.integral = np.zeros(nv)     # integral of (tau + C^T qd - g + r)
        self.r = np.zeros(nv)            # the estimate of tau_ext
        self._p = np.zeros(nv)           # M(q) qd
        self._beta = np.zeros(nv)        # C^T qd - g at this sample
        self._beta_prev = np.zeros(nv)   # ... and at the last one
        self._step = np.zeros(nv)        # the integral's increment
        self._zero = np.zeros(nv)
        self.initialized = False

    def reset(self, q, v):
        """Start observing at state (q, v): p(0) = M(q) v, estimate zero."""
        q = as_vector("q", q, self.nv)
        v = as_vector("v", v, self.nv)
        M = crba(self.model, self.data, q)
        require_finite("v", v)
        np.dot(M, v, out=self.p0)
        self._model_terms(q, v, self._beta_prev)
        self.integral[:] = 0.0
        self.r[:] = 0.0
        self.initialized = True

    def set_model(self, model, q, v):
        """Use another model of the same robot from now on (e.g. adapted inertial parameters) at the
        current state (q, v): p(0) shifts by the change of the momentum M(q) v, so the estimate goes
        on without a jump."""
        if model.nv != self.nv:
            raise ValueError(f"model must have nv = {self.nv} like the current one, got {model.nv}")
        q = as_vector("q", q, self.nv)
        v = as_vector("v", v, self.nv)
        require_finite("v", v)
        old = crba(self.model, self.data, q) @ v
        self.model = model
        self.data = model.create_data()
        self.p0 += crba(model, self.data, q) @ v - old

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
        beta, step = self._beta, self._step
        self._model_terms(q, v, beta)
        # integral += dt (tau_applied + r + (beta_prev + beta) / 2)
        np.add(self._beta_prev, beta, out=step)
        step *= 0.5
        step += tau_applied
        step += self.r
        step *= self.dt
        self.integral += step
        self._beta_prev[:] = beta
        np.dot(crba(self.model, self.data, q), v, out=self._p)
        # r = K_O (p - p0 - integral)
        self._p -= self.p0
        self._p -= self.integral
        np.multiply(self.gain, self._p, out=self.r)
        return copy_out(self.r, out)

    def _model_terms(self, q, v, out):
        """out = C(q, v)^T v - g(q)."""
        np.dot(coriolis_matrix(self.model, self.data, q, v).T, v, out=out)
        out -= rnea(self.model, self.data, q, self._zero, self._zero)


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

