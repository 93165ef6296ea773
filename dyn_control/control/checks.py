"""Argument checks shared by the control laws: each raises a ValueError naming the argument."""
import numpy as np


def as_gain(name, value, n, positive=False):
    """A gain as an (n,) float64 array from a scalar (same on every joint) or n numbers, finite,
    >= 0 (> 0 with positive=True)."""
    try:
        gain = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        gain = None
    if gain is None or gain.shape not in ((), (n,)):
        raise ValueError(f"{name} must be a number or {n} numbers, got {value!r}")
    if not np.all(np.isfinite(gain)) or np.any(gain <= 0.0 if positive else gain < 0.0):
        raise ValueError(f"{name} must be finite and {'> 0' if positive else '>= 0'}, got {value!r}")
    return np.array(np.broadcast_to(gain, (n,)))


def as_scalar(name, value, positive=True):
    """A finite float, > 0 (or >= 0 with positive=False)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not np.isfinite(x) or (x <= 0.0 if positive else x < 0.0):
        raise ValueError(f"{name} must be finite and {'> 0' if positive else '>= 0'}, got {value!r}")
    return x


def require_finite(name, x):
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} has non-finite entries (NaN or inf)")


def copy_out(result, out):
    """result copied into `out`, or into a new array when out is None (NumPy's out= convention)."""
    if out is None:
        return result.copy()
    out[:] = result
    return out
