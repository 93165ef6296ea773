"""Joint velocities and accelerations from recorded joint states, and the regression's signals, by
zero-phase low-pass filtering and differentiation.

The filter is a Butterworth low-pass applied forwards and backwards (scipy.signal.filtfilt: no
phase lag, magnitude response squared). The states are filtered for differentiation: velocity the
recorded one filtered (or the filtered position differentiated where none was recorded),
acceleration the filtered velocity differentiated (central differences, numpy.gradient). The
regression then filters the torques and every column of the regressor built from those states
alike (Gautier's parallel filtering, `Regression`): tau = Y theta holds sample by sample, so
F(tau) = F(Y) theta for the linear filter F, also where Y is not smooth in time (the Coulomb
friction columns switch at each velocity reversal, as the measured torque does), where filtering
the torque alone would compare a smoothed step with a sharp one. Where a joint moves slower than
LOW_VELOCITY, its friction is not the model's (a real joint sticks, the model's smooth sign passes
through zero), so that joint's rows are left out of the fit within one cut-off period of such
samples (the filter spreads the difference that far). Samples are first put on a
uniform time grid (linear interpolation at the median step) when the stamps are not uniform; the
ends, where the filter starts up, are dropped.
"""
import numpy as np
import scipy.ndimage
import scipy.signal

from ..kernels.joint_terms import COULOMB_VELOCITY_SCALE
from .base_parameters import IdentificationError

FILTER_ORDER = 4             # of the Butterworth low-pass (doubled by the forward-backward pass)
UNIFORM_TOLERANCE = 0.01     # stamps within this fraction of the median step count as uniform
EDGE_PERIODS = 2.0           # cut-off periods dropped at each end
COLUMN_BLOCK = 64            # regressor columns filtered at a time (bounds the extra memory)
LOW_VELOCITY = 5.0 * COULOMB_VELOCITY_SCALE   # slower: friction unlike the model's (stick, reversal)


class LowPass:
    """The zero-phase low-pass at `cutoff` [Hz] of signals sampled every dt [s]; edge: the samples
    its start-up affects at each end."""

    def __init__(self, cutoff, dt):
        nyquist = 0.5 / dt
        if not 0.0 < cutoff < nyquist:
            raise ValueError(f"cutoff must lie between 0 and the Nyquist frequency {nyquist:.4g} Hz of the "
                             f"recording, got {cutoff}")
        self.cutoff, self.dt = cutoff, dt
        self.b, self.a = scipy.signal.butter(FILTER_ORDER, cutoff / nyquist)
        self.edge = int(np.ceil(EDGE_PERIODS / (cutoff * dt)))

    def __call__(self, x):
        """x filtered along its first axis (time)."""
        return scipy.signal.filtfilt(self.b, self.a, x, axis=0)


class Samples:
    """Joint-space samples on a uniform grid: t (N,), q, v, a, effort (N, n)."""

    def __init__(self, t, q, v, a, effort):
        self.t, self.q, self.v, self.a, self.effort = t, q, v, a, effort

    def __len__(self):
        return self.t.size


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


def filtered_samples(t, q, effort, cutoff, v=None, effort_delay=0.0):
    """(Samples, LowPass): the states filtered and differentiated (module docstring) and the
    efforts filtered, all samples kept (ends included: Regression drops them). t (N,) [s], q,
    effort and v (optional) (N, n); stamps need not be uniform. effort_delay [s]: how late the
    efforts are against the states (the effort of sample t is the torque at t - effort_delay): they
    are moved back by linear interpolation. A robot that reports with each state the torque it
    applied over the sample period before it, as dyn_simulator does, is half a period late."""
    t = np.asarray(t, dtype=np.float64)
    if t.size < 3:
        raise IdentificationError(f"too few samples ({t.size}) to filter")
    t, q, effort, v = uniform_grid(t, q, effort, v)
    if effort_delay:
        effort = np.column_stack([np.interp(t + effort_delay, t, column) for column in effort.T])
    low_pass = LowPass(cutoff, t[1] - t[0])
    if t.size <= 2 * low_pass.edge + 2:
        raise IdentificationError(f"too few samples ({t.size}) for a {cutoff} Hz filter: record longer than "
                         f"{2 * EDGE_PERIODS / cutoff:.3g} s")
    q_f = low_pass(q)
    v_f = np.gradient(q_f, low_pass.dt, axis=0) if v is None else low_pass(v)
    return Samples(t, q_f, v_f, np.gradient(v_f, low_pass.dt, axis=0), low_pass(effort)), low_pass


class Regression:
    """Parallel-filtered regression data of samples: Y (N, nv, P) = F(regressor(q, v, a)) and
    tau (N, nv) = the filtered efforts, t (N,), the filter's ends dropped, and usable (N, nv): the
    rows of the fit (not near a slow joint, module docstring). regressor(q, v, a) -> (N, nv, P)
    builds the regressor of the (filtered) states."""

    def __init__(self, samples, low_pass, regressor):
        Y = regressor(samples.q, samples.v, samples.a)
        for start in range(0, Y.shape[2], COLUMN_BLOCK):
            block = slice(start, start + COLUMN_BLOCK)
            Y[:, :, block] = low_pass(Y[:, :, block])
        reach = int(np.ceil(1.0 / (low_pass.cutoff * low_pass.dt)))
        slow = scipy.ndimage.binary_dilation(np.abs(samples.v) < LOW_VELOCITY,
                                             structure=np.ones((2 * reach + 1, 1), dtype=bool))
        keep = slice(low_pass.edge, len(samples) - low_pass.edge)
        self.t, self.Y, self.tau, self.usable = samples.t[keep], Y[keep], samples.effort[keep], ~slow[keep]

    def rows(self, index, usable_only=True):
        """(W (rows, P), tau (rows,), joint (rows,)) of the samples at index (a slice), stacked
        joint by joint (joint: each row's joint index); only the usable rows unless usable_only
        is False."""
        Y = self.Y[index]
        nv = Y.shape[1]
        W, tau = Y.reshape(-1, Y.shape[2]), self.tau[index].reshape(-1)
        joint = np.tile(np.arange(nv), Y.shape[0])
        if not usable_only:
            return W, tau, joint
        use = self.usable[index].reshape(-1)
        return W[use], tau[use], joint[use]
