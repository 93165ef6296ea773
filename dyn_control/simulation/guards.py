"""The simulated robot's guards, run on every step of the simulator node: its drives' effort clamp
(clamp_efforts) and the check for a state that diverged (diverged_joint)."""
import numpy as np

from ..jit import njit


@njit(cache=True, nogil=True)
def clamp_efforts(tau, limit):
    """tau clamped in place to [-limit, limit] per entry; True when an entry was beyond."""
    clamped = False
    for k in range(tau.shape[0]):
        if tau[k] > limit[k]:
            tau[k] = limit[k]
            clamped = True
        elif tau[k] < -limit[k]:
            tau[k] = -limit[k]
            clamped = True
    return clamped


@njit(cache=True, nogil=True)
def diverged_joint(q, v, q_before, max_velocity, dt):
    """Index of the first joint whose new state (q, v) is not finite, whose speed is above
    max_velocity, or that moved more than max_velocity dt since q_before (a step earlier); -1 if none."""
    for k in range(q.shape[0]):
        if not (np.isfinite(q[k]) and np.isfinite(v[k])):
            return k
        if abs(v[k]) > max_velocity or abs(q[k] - q_before[k]) > max_velocity * dt:
            return k
    return -1
