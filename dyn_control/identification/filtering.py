"""Joint velocities and accelerations from recorded joint states: zero-phase low-pass filtering and
differentiation.

Every signal that enters the regression (positions, velocities, efforts) goes through the same
filter, a Butterworth low-pass applied forwards and backwards (scipy.signal.filtfilt: no phase
lag, magnitude response squared), so that the torques and the motion they are compared with are
distorted alike (Gautier's parallel filtering). Velocity: the recorded one filtered, or the
filtered position differentiated where none was recorded; acceleration: the filtered velocity
differentiated (central differences, numpy.gradient). Samples are first put on a uniform time
grid (linear interpolation at the median step) when the stamps are not uniform, and the ends,
where the filter's start-up transient lives, are dropped.
"""
import numpy as np
import scipy.signal

FILTER_ORDER = 4             # of the Butterworth low-pass (doubled by the forward-backward pass)
UNIFORM_TOLERANCE = 0.01     # stamps within this fraction of the median step count as uniform
EDGE_PERIODS = 2.0           # cut-off periods dropped at each end


class Samples:
    """Joint-space samples on a uniform grid: t (N,), q, v, a, effort (N, n)."""

    def __init__(self, t, q, v, a, effort):
        self.t, self.q, self.v, self.a, self.effort = t, q, v, a, effort

    def __len__(self):
        return self.t.size

    def part(self, index):
        """The samples at `index` (a slice or indices)."""
        return Samples(self.t[index], self.q[index], self.v[index], self.a[index], self.effort[index])


def uniform_grid(t, *signals):
    """(t_uniform, *signals on it): unchanged when the steps are uniform within UNIFORM_TOLERANCE,
    else linearly interpolated onto a grid at the median step."""
    steps = np.diff(t)
    dt = float(np.median(steps))
    if not dt > 0.0:
        raise ValueError("the joint states' stamps do not increase")
    if np.all(np.abs(steps - dt) <= UNIFORM_TOLERANCE * dt):
        return (t, *signals)
    grid = t[0] + dt * np.arange(int(np.floor((t[-1] - t[0]) / dt)) + 1)
    return (grid, *[None if x is None else np.column_stack([np.interp(grid, t, c) for c in x.T])
                    for x in signals])


def filtered_samples(t, q, effort, cutoff, v=None):
    """Samples with velocity and acceleration estimated by zero-phase low-pass filtering at
    `cutoff` [Hz] and differentiation (module docstring). t (N,) [s], q, effort and v (optional)
    (N, n); stamps need not be uniform."""
    t = np.asarray(t, dtype=np.float64)
    t, q, effort, v = uniform_grid(t, q, effort, v)
    dt = t[1] - t[0]
    nyquist = 0.5 / dt
    if not 0.0 < cutoff < nyquist:
        raise ValueError(f"cutoff must lie between 0 and the Nyquist frequency {nyquist:.4g} Hz of the "
                         f"recording, got {cutoff}")
    edge = int(np.ceil(EDGE_PERIODS / (cutoff * dt)))
    if t.size <= 2 * edge + 2:
        raise ValueError(f"too few samples ({t.size}) for a {cutoff} Hz filter: record longer than "
                         f"{2 * EDGE_PERIODS / cutoff:.3g} s")
    b, a = scipy.signal.butter(FILTER_ORDER, cutoff / nyquist)

    def low_pass(x):
        return scipy.signal.filtfilt(b, a, x, axis=0)

    q_f = low_pass(q)
    v_f = np.gradient(q_f, dt, axis=0) if v is None else low_pass(v)
    a_f = np.gradient(v_f, dt, axis=0)
    keep = slice(edge, t.size - edge)
    return Samples(t[keep], q_f[keep], v_f[keep], a_f[keep], low_pass(effort)[keep])
