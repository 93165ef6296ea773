"""Computed-torque control (inverse-dynamics control) and the torques of a safe stop.

    tau = M(q) (a_d + kd (v_d - v) + kp (q_d - q)) + C(q, v) v + g(q)

With an exact model the closed loop is the linear error dynamics e'' + kd e' + kp e = 0 on every
joint (e = q_d - q): kp = w^2, kd = 2 zeta w set the bandwidth w and damping ratio zeta.
The whole law is one inverse-dynamics call, rnea(q, v, a_cmd) = M a_cmd + C v + g.
ComputedTorque is the law from Python; the compiled ticks compose tracking_acceleration and
braking_acceleration with the same inverse dynamics (tick.py, closed_chain_tick.py).
"""
import numpy as np

from ..dynamics import as_vector, non_finite_error, rnea
from ..jit import njit
from .checks import as_gain, copy_out, require_finite

SAFE_MODES = ("gravity", "zero")


class ComputedTorque:
    """Computed-torque controller on a Model. Owns its Data; compute() allocates nothing when
    given `out`."""

    def __init__(self, model, kp, kd):
        self.model = model
        self.data = model.create_data()
        self.nv = model.nv
        self.kp = np.zeros(self.nv)
        self.kd = np.zeros(self.nv)
        self.set_gains(kp, kd)
        self._a_cmd = np.zeros(self.nv)   # commanded acceleration
        self._error = np.zeros(self.nv)   # scratch for the tracking errors
        self._zero = np.zeros(self.nv)    # v = a = 0 for the gravity torque

    def set_model(self, model):
        """Use another model of the same robot from now on (e.g. adapted inertial parameters)."""
        if model.nv != self.nv:
            raise ValueError(f"model must have nv = {self.nv} like the current one, got {model.nv}")
        self.model = model
        self.data = model.create_data()

    def set_gains(self, kp, kd):
        """Replace both gains (scalars or (nv,) arrays, >= 0); on a ValueError the old gains stay."""
        kp = as_gain("kp", kp, self.nv)
        kd = as_gain("kd", kd, self.nv)
        self.kp[:] = kp
        self.kd[:] = kd

    def compute(self, q, v, q_d, v_d, a_d, out=None):
        """The computed torque for state (q, v) and reference (q_d, v_d, a_d), all (nv,)."""
        nv = self.nv
        q = as_vector("q", q, nv)
        v = as_vector("v", v, nv)
        q_d = as_vector("q_d", q_d, nv)
        v_d = as_vector("v_d", v_d, nv)
        a_d = as_vector("a_d", a_d, nv)
        a_cmd, error = self._a_cmd, self._error
        np.subtract(q_d, q, out=error)
        np.multiply(self.kp, error, out=a_cmd)
        np.subtract(v_d, v, out=error)
        np.multiply(self.kd, error, out=error)
        a_cmd += error
        a_cmd += a_d
        try:
            tau = rnea(self.model, self.data, q, v, a_cmd)
        except ValueError:
            # a non-finite reference shows up in a_cmd: name the argument it came from
            raise non_finite_error(q=q, v=v, q_d=q_d, v_d=v_d, a_d=a_d) from None
        return copy_out(tau, out)

    def safe_torque(self, q, v, damping, mode="gravity", out=None):
        """Torque for a safe stop: "gravity": g(q) - damping * v (hold against gravity, brake the
        motion); "zero": no torque at all. damping: scalar or (nv,), >= 0."""
        if mode == "zero":
            if out is None:
                return np.zeros(self.nv)
            out[:] = 0.0
            return out
        if mode != "gravity":
            raise ValueError(f"mode must be one of {', '.join(SAFE_MODES)}, got {mode!r}")
        v = as_vector("v", v, self.nv)
        damping = as_gain("damping", damping, self.nv)
        g = rnea(self.model, self.data, q, self._zero, self._zero)
        if not np.all(np.isfinite(v)):
            raise non_finite_error(v=v)
        out = copy_out(g, out)
        np.multiply(damping, v, out=self._error)
        out -= self._error
        return out


@njit(cache=True, nogil=True)
def tracking_acceleration(q_r, v_r, a_r, q, v, kp, kd, out):
    """a_cmd = a_r + kd (v_r - v) + kp (q_r - q), the acceleration the computed torque commands."""
    for k in range(out.shape[0]):
        out[k] = a_r[k] + kd[k] * (v_r[k] - v[k]) + kp[k] * (q_r[k] - q[k])


@njit(cache=True, nogil=True)
def braking_acceleration(v, brake_gain, mask, out):
    """a_cmd = -brake_gain v on the joints of mask 1 (zero elsewhere): each joint brakes at the rate
    brake_gain [1/s] whatever its inertia."""
    for k in range(out.shape[0]):
        out[k] = -brake_gain[k] * v[k] * mask[k]


@njit(cache=True, nogil=True)
def scale_within_limits(tau, bias, limit, mask):
    """tau = bias + alpha (tau - bias), with bias = C(q, v) v + g(q) and the largest alpha in [0, 1]
    that keeps every joint of mask 1 within +-limit (a joint whose bias alone exceeds its limit is
    left to the clamp). For the braking torque tau = rnea(q, v, -brake_gain v): clamping joints one
    by one would give the others the saturated joints' share (the light wrist spun up while the
    shoulder saturated); scaled, every joint decelerates at the same fraction of its rate,
    a = -alpha brake_gain v, so none is sped up. Returns alpha."""
    alpha = 1.0
    for k in range(tau.shape[0]):
        b, d = bias[k], tau[k] - bias[k]
        if mask[k] == 0.0 or abs(b) >= limit[k]:
            continue
        if b + d > limit[k]:
            alpha = min(alpha, (limit[k] - b) / d)
        elif b + d < -limit[k]:
            alpha = min(alpha, (-limit[k] - b) / d)
    for k in range(tau.shape[0]):
        tau[k] = bias[k] + alpha * (tau[k] - bias[k])
    return alpha


def clamp_effort(tau, limits, out=None):
    """tau clamped to [-limits, limits] per joint (symmetric; inf: no clamp), e.g. model.effort_limit."""
    tau = np.asarray(tau, dtype=np.float64)
    limits = np.asarray(limits, dtype=np.float64)
    if tau.ndim != 1:
        raise ValueError(f"tau must be a 1-D array, got shape {tau.shape}")
    require_finite("tau", tau)
    if limits.shape != tau.shape:
        raise ValueError(f"limits must have shape {tau.shape} like tau, got {limits.shape}")
    if np.any(np.isnan(limits)) or np.any(limits < 0.0):
        raise ValueError(f"limits must be >= 0 (inf: no limit), got {limits}")
    return np.clip(tau, -limits, limits, out=out)

