"""Online gradients of the inertial parameters, from a sliding window of measured samples.

Inverse dynamics is linear in the inertial parameters, tau = Y(q, v, a) phi (phi: 10 per body,
order dyn_control.PARAMETER_NAMES), so over the last N samples the torque-prediction loss

    L(phi) = 0.5 sum_k ||tau_k - Y_k phi||^2

has the gradient dL/dphi = -sum_k Y_k^T (tau_k - Y_k phi). The regressors Y_k are kept in a ring
buffer, so gradient() and loss() at any phi cost one matrix product over the window.
The accelerations a_k are not measured: AccelerationFilter estimates them from the velocities.

The compiled ticks keep a ring of the window's regressors, each row's columns that can be non-zero
only (pack_rows: a tree's joint k carries the bodies of its subtree), and two running sums
    sum_Yt = sum_k Y_k^T tau_k,  sum_YYphi = sum_k Y_k^T (Y_k phi_w),  dL/dphi = sum_YYphi - sum_Yt
at phi = phi_w, updated by one sample in and the oldest out per tick: 4 nnz(Y) multiply-adds, nnz(Y)
= 10 sum_k |subtree(k)| = 10 sum_i depth(i) (linear in the joints for a fixed depth), where the
matrix sum_k Y_k^T Y_k cost sum_k (10 |subtree(k)|)^2 a sample and sum_YY phi (10 nb)^2 a request.
When phi changes (an adaptation step, a new model), sum_YYphi starts over at the new phi_w: the
window's samples are pending and taken back in from the ring, CATCH_UP of them per new sample (and
all that remain when the gradient is requested), so the gradient is exact at any tick it is
requested. The joint terms keep 3 x 3 sums per joint.
"""
import math

import numpy as np

from ..derivatives import regressor
from ..dynamics import as_vector
from ..jit import njit
from ..kernels.joint_terms import smooth_sign
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


@njit(cache=True, nogil=True)
def filter_acceleration(dt, cutoff_hz, v, v_prev, a):
    """AccelerationFilter's step, compiled: a += alpha ((v - v_prev) / dt - a), alpha = dt / (dt +
    1 / (2 pi f_c)); v becomes v_prev."""
    alpha = dt / (dt + 1.0 / (2.0 * math.pi * cutoff_hz))
    for k in range(a.shape[0]):
        a[k] += alpha * ((v[k] - v_prev[k]) / dt - a[k])
        v_prev[k] = v[k]


# samples of the window taken into sum_YYphi per new sample, on top of the new one, while some are
# pending (after phi changed): with window / period <= CATCH_UP (the node asks for the gradient every
# period ticks), an adapting loop finds the sum up to date at its next request
CATCH_UP = 4


def row_starts(columns):
    """Where each row of a regressor starts in its packed form (pack_rows): row k keeps its columns
    [columns[k, 0], columns[k, 1]) only; the last entry is the packed size, nnz(Y)."""
    starts = np.zeros(len(columns) + 1, dtype=np.int64)
    np.cumsum(columns[:, 1] - columns[:, 0], out=starts[1:])
    return starts


@njit(cache=True, nogil=True)
def pack_rows(Y, columns, starts, packed):
    """packed[starts[k] + j] = Y[k, columns[k, 0] + j]: the columns of each row that can be non-zero."""
    for k in range(Y.shape[0]):
        first, start = columns[k, 0], starts[k]
        for j in range(columns[k, 1] - first):
            packed[start + j] = Y[k, first + j]


@njit(cache=True, nogil=True)
def window_follow_phi(phi, phi_window, in_sum, sum_YYphi):
    """When phi differs from phi_window, the phi sum_YYphi was accumulated with: phi_window = phi and
    sum_YYphi starts over, every sample of the window pending (in_sum 0)."""
    for c in range(phi.shape[0]):
        if phi[c] != phi_window[c]:
            phi_window[:] = phi
            sum_YYphi[:] = 0.0
            in_sum[:] = 0.0
            return


@njit(cache=True, nogil=True)
def window_sums_add(Y, tau, columns, starts, sign, with_YYphi, phi_window, sum_YYphi, sum_Yt):
    """sum_Yt += sign Y^T tau and, with_YYphi, sum_YYphi += sign Y^T (Y phi_window), Y packed
    (pack_rows): 4 nnz(Y) multiply-adds."""
    for k in range(tau.shape[0]):
        first, start = columns[k, 0], starts[k]
        width = starts[k + 1] - start
        t = sign * tau[k]
        y_phi = 0.0
        if with_YYphi:
            y_phi = sign * _dot(Y, start, phi_window, first, width)
        for j in range(width):
            sum_Yt[first + j] += Y[start + j] * t
            sum_YYphi[first + j] += Y[start + j] * y_phi


@njit(cache=True, nogil=True, inline="always")
def _dot(x, x_start, y, y_start, n):
    """x[x_start: x_start + n] . y[y_start: y_start + n], four sums (not one chain of dependent adds)."""
    s0 = s1 = s2 = s3 = 0.0
    j = 0
    while j + 4 <= n:
        s0 += x[x_start + j] * y[y_start + j]
        s1 += x[x_start + j + 1] * y[y_start + j + 1]
        s2 += x[x_start + j + 2] * y[y_start + j + 2]
        s3 += x[x_start + j + 3] * y[y_start + j + 3]
        j += 4
    while j < n:
        s0 += x[x_start + j] * y[y_start + j]
        j += 1
    return (s0 + s1) + (s2 + s3)


@njit(cache=True, nogil=True)
def window_catch_up(Y_ring, columns, starts, oldest, count, limit, phi_window, in_sum, sum_YYphi):
    """Up to `limit` pending samples of the window (the `count` slots from `oldest` on, in order) into
    sum_YYphi, each Y^T (Y phi_window)."""
    window = Y_ring.shape[0]
    done = 0
    for j in range(count):
        if done == limit:
            return
        slot = (oldest + j) % window
        if in_sum[slot] == 0.0:
            Y = Y_ring[slot]
            for k in range(columns.shape[0]):
                first, start = columns[k, 0], starts[k]
                width = starts[k + 1] - start
                y_phi = _dot(Y, start, phi_window, first, width)
                for c in range(width):
                    sum_YYphi[first + c] += Y[start + c] * y_phi
            in_sum[slot] = 1.0
            done += 1


@njit(cache=True, nogil=True)
def window_push(Y_ring, tau_ring, columns, starts, slot, count, phi, phi_window, in_sum, sum_YYphi, sum_Yt):
    """The sample leaving `slot` out of the sums (when the window is full: count == window), before
    Y_ring[slot] (packed rows) and tau_ring[slot] take the new one (window_pushed)."""
    window_follow_phi(phi, phi_window, in_sum, sum_YYphi)
    if count == Y_ring.shape[0]:
        window_sums_add(Y_ring[slot], tau_ring[slot], columns, starts, -1.0, in_sum[slot] != 0.0, phi_window,
                        sum_YYphi, sum_Yt)
        in_sum[slot] = 0.0


@njit(cache=True, nogil=True)
def window_pushed(Y_ring, tau_ring, columns, starts, slot, count, phi_window, in_sum, sum_YYphi, sum_Yt):
    """The new sample in Y_ring[slot], tau_ring[slot] into the sums, and up to CATCH_UP pending ones;
    count: the samples in the window before it. Returns the new count."""
    window = Y_ring.shape[0]
    window_sums_add(Y_ring[slot], tau_ring[slot], columns, starts, 1.0, True, phi_window, sum_YYphi, sum_Yt)
    in_sum[slot] = 1.0
    count = min(count + 1, window)
    window_catch_up(Y_ring, columns, starts, (slot + 1 - count) % window, count, CATCH_UP, phi_window, in_sum,
                    sum_YYphi)
    return count


@njit(cache=True, nogil=True)
def window_gradient(Y_ring, columns, starts, next_slot, count, phi, phi_window, in_sum, sum_YYphi, sum_Yt,
                    gradient):
    """dL/dphi = sum_k Y_k^T (Y_k phi - tau_k) = sum_YYphi - sum_Yt over the `count` samples before
    slot `next_slot`: the pending samples (after phi changed) taken in first, all of them."""
    window = Y_ring.shape[0]
    window_follow_phi(phi, phi_window, in_sum, sum_YYphi)
    window_catch_up(Y_ring, columns, starts, (next_slot - count) % window, count, window, phi_window, in_sum,
                    sum_YYphi)
    for c in range(gradient.shape[0]):
        gradient[c] = sum_YYphi[c] - sum_Yt[c]


@njit(cache=True, nogil=True)
def joint_window_add(Y, flat_phi, columns, v, a, tau_applied, slot, full, sum_yy, sum_yr):
    """The joint terms' window: the sample leaving `slot` (when the window is full) out of the sums,
    this one in: per joint i, y_i = [a_i, v_i, sgn_s(v_i)] (the joint regressor's row) and r_i =
    tau_applied_i - (Y phi)_i, the torque the rigid bodies do not explain; sum_yy_i += y_i y_i^T,
    sum_yr_i += y_i r_i, so that with L = 1/2 sum_k |tau_k - Y_k phi - y_k theta|^2,
    dL/dtheta_i = sum_yy_i theta_i - sum_yr_i (joint_window_gradient)."""
    for i in range(v.shape[0]):
        if full:
            for m in range(3):
                sum_yr[i, m] -= slot[i, m] * slot[i, 3]
                for n in range(3):
                    sum_yy[i, m, n] -= slot[i, m] * slot[i, n]
        rigid = 0.0
        for c in range(columns[i, 0], columns[i, 1]):
            rigid += Y[i, c] * flat_phi[c]
        slot[i, 0], slot[i, 1], slot[i, 2] = a[i], v[i], smooth_sign(v[i])
        slot[i, 3] = tau_applied[i] - rigid
        for m in range(3):
            sum_yr[i, m] += slot[i, m] * slot[i, 3]
            for n in range(3):
                sum_yy[i, m, n] += slot[i, m] * slot[i, n]


@njit(cache=True, nogil=True)
def joint_window_gradient(sum_yy, sum_yr, joint_terms, gradient):
    """dL/dtheta_i = sum_yy_i theta_i - sum_yr_i per joint, flat [armature, viscous, coulomb] per joint."""
    for i in range(sum_yr.shape[0]):
        for m in range(3):
            total = -sum_yr[i, m]
            for n in range(3):
                total += sum_yy[i, m, n] * joint_terms[i, n]
            gradient[3 * i + m] = total
