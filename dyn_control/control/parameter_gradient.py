"""Online gradients of the inertial parameters, from a sliding window of measured samples.

Inverse dynamics is linear in the inertial parameters, tau = Y(q, v, a) phi (phi: 10 per body,
order dyn_control.PARAMETER_NAMES), so over the last N samples the torque-prediction loss

    L(phi) = 0.5 sum_k ||tau_k - Y_k phi||^2

has the gradient dL/dphi = -sum_k Y_k^T (tau_k - Y_k phi). The regressors Y_k are kept in a ring
buffer, so gradient() and loss() at any phi cost one matrix product over the window.
The accelerations a_k are not measured: AccelerationFilter estimates them from the velocities.
"""
import numpy as np

from ..derivatives import regressor
from ..dynamics import as_vector
from ..model import PARAMETER_NAMES
from .checks import as_scalar, copy_out, require_finite


class ParameterGradient:
    """Sliding-window least-squares loss of the inertial parameters and its gradient."""

    def __init__(self, model, window):
        if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
            raise ValueError(f"window must be a positive integer (a number of samples), got {window!r}")
        self.model = model
        self.data = model.create_data()
        self.nv = model.nv
        self.nparams = 10 * model.nbodies
        self.window = int(window)
        self.phi = model.inertial_parameters()   # the model's own parameters: the default phi
        self._Y = np.zeros((self.window, self.nv, self.nparams))  # ring buffer of regressors
        self._tau = np.zeros((self.window, self.nv))              # ring buffer of torques
        self._residual = np.zeros(self.window * self.nv)
        self._gradient = np.zeros(self.nparams)
        self.count = 0      # samples in the window
        self._next = 0      # ring slot the next sample goes to

    @property
    def labels(self):
        """"body_name/param" for every entry of phi, in phi order."""
        return [f"{body}/{p}" for body in self.model.body_names for p in PARAMETER_NAMES]

    def clear(self):
        self.count = 0
        self._next = 0

    def add_sample(self, q, v, a, tau):
        """Store one sample: joint state, (estimated) acceleration and the measured joint torque."""
        tau = as_vector("tau", tau, self.nv)
        require_finite("tau", tau)
        k = self._next
        self._Y[k] = regressor(self.model, self.data, q, v, a)
        self._tau[k] = tau
        self._next = (k + 1) % self.window
        self.count = min(self.count + 1, self.window)

    def _residuals(self, phi):
        """tau_k - Y_k phi stacked over the samples in the window, and those samples' Y stacked."""
        if phi is None:
            phi = self.phi
        else:
            phi = as_vector("phi", phi, self.nparams)
            require_finite("phi", phi)
        n = self.count * self.nv
        Y = self._Y[:self.count].reshape(n, self.nparams)
        residual = self._residual[:n]
        np.dot(Y, phi, out=residual)
        np.subtract(self._tau[:self.count].reshape(n), residual, out=residual)
        return residual, Y

    def loss(self, phi=None):
        """0.5 sum_k ||tau_k - Y_k phi||^2 over the window (phi: default the model's parameters)."""
        residual, _ = self._residuals(phi)
        return 0.5 * float(np.dot(residual, residual))

    def gradient(self, phi=None, out=None):
        """dL/dphi = -sum_k Y_k^T (tau_k - Y_k phi), shape (10 * nbodies,), order of `labels`."""
        residual, Y = self._residuals(phi)
        np.dot(Y.T, residual, out=self._gradient)
        np.negative(self._gradient, out=self._gradient)
        return copy_out(self._gradient, out)


class AccelerationFilter:
    """Joint accelerations estimated from sampled velocities: the finite difference
    (v_k - v_{k-1}) / dt through a first-order low-pass of cutoff frequency cutoff_hz,

        a_k = a_{k-1} + alpha ((v_k - v_{k-1}) / dt - a_{k-1}),  alpha = dt / (dt + 1 / (2 pi f_c))

    (the backward-Euler discretisation of 1 / (1 + s / (2 pi f_c))). The estimate lags the true
    acceleration by about 1 / (2 pi f_c) + dt / 2. The first sample gives zero."""

    def __init__(self, nv, dt, cutoff_hz):
        if isinstance(nv, bool) or not isinstance(nv, (int, np.integer)) or nv < 1:
            raise ValueError(f"nv must be a positive integer, got {nv!r}")
        self.dt = as_scalar("dt", dt)
        self.cutoff_hz = as_scalar("cutoff_hz", cutoff_hz)
        self.alpha = self.dt / (self.dt + 1.0 / (2.0 * np.pi * self.cutoff_hz))
        self.nv = int(nv)
        self.a = np.zeros(self.nv)           # the estimate
        self._v_prev = np.zeros(self.nv)
        self._difference = np.zeros(self.nv)
        self._started = False

    def reset(self):
        self.a[:] = 0.0
        self._started = False

    def update(self, v, out=None):
        v = as_vector("v", v, self.nv)
        require_finite("v", v)
        if self._started:
            # difference = (v - v_prev) / dt - a;  a += alpha * difference
            np.subtract(v, self._v_prev, out=self._difference)
            self._difference /= self.dt
            self._difference -= self.a
            self._difference *= self.alpha
            self.a += self._difference
        self._v_prev[:] = v
        self._started = True
        return copy_out(self.a, out)
