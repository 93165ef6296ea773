"""The safety pieces every controller tick shares (tick.py, closed_chain_tick.py): the re-engagement
blend of the reference, the torque-rate limit, and the largest tracking error.

Re-engagement. After activation, after safe mode, after a gap in the joint states and after a
tracking error above the limit, the reference is re-anchored at the measured state: with t0 the
time of the anchor, offset_q = q - q_d(t0) and offset_v = v - v_d(t0), the tracked reference is
    q_r(t) = q_d(t) + offset_q H0(s) + offset_v T H1(s),   s = (t - t0) / T in [0, 1],
with the quintic Hermite bases
    H0(s) = 1 - 10 s^3 + 15 s^4 - 6 s^5,   H1(s) = s - 6 s^3 + 8 s^4 - 3 s^5
(H0(0) = 1, H1'(0) = 1, every other value, slope and curvature zero at both ends), and v_r, a_r
its derivatives. T is `reengage.duration`, or longer where an offset would otherwise move faster
than `reengage.max_velocity` (blend_duration). So the reference starts at the measured position and velocity (no error to act
on, hence no torque step) and joins q_d after T seconds with continuous velocity and acceleration.

Torque-rate limit. Every command differs from the previous one by at most `max_step` per joint
(the rate limit times the loop's period), whatever the mode and its switches (as Franka's robots
require: they refuse torque discontinuities).
"""
from numba import njit


@njit(cache=True, nogil=True)
def anchor(q, v, q_d, v_d, mask, offset_q, offset_v):
    """Start a blend at the measured state: offsets of the controlled joints (mask 1)."""
    for k in range(q.shape[0]):
        offset_q[k] = (q[k] - q_d[k]) * mask[k]
        offset_v[k] = (v[k] - v_d[k]) * mask[k]


@njit(cache=True, nogil=True)
def blend_reference(elapsed, duration, offset_q, offset_v, q_d, v_d, a_d, q_r, v_r, a_r):
    """q_r, v_r, a_r = the reference q_d, v_d, a_d plus the decaying offset (module docstring),
    `elapsed` seconds after the anchor. True while the blend lasts (after it, q_r = q_d)."""
    if not elapsed < duration:
        q_r[:] = q_d
        v_r[:] = v_d
        a_r[:] = a_d
        return False
    s = max(elapsed, 0.0) / duration
    s2 = s * s
    s3 = s2 * s
    h0 = 1.0 - 10.0 * s3 + 15.0 * s3 * s - 6.0 * s3 * s2
    dh0 = -30.0 * s2 + 60.0 * s3 - 30.0 * s3 * s
    ddh0 = -60.0 * s + 180.0 * s2 - 120.0 * s3
    h1 = s - 6.0 * s3 + 8.0 * s3 * s - 3.0 * s3 * s2
    dh1 = 1.0 - 18.0 * s2 + 32.0 * s3 - 15.0 * s3 * s
    ddh1 = -36.0 * s + 96.0 * s2 - 60.0 * s3
    for k in range(q_d.shape[0]):
        dq, dv = offset_q[k], offset_v[k] * duration
        q_r[k] = q_d[k] + dq * h0 + dv * h1
        v_r[k] = v_d[k] + (dq * dh0 + dv * dh1) / duration
        a_r[k] = a_d[k] + (dq * ddh0 + dv * ddh1) / (duration * duration)
    return True


@njit(cache=True, nogil=True)
def blend_duration(offset_q, controlled, shortest, speed):
    """The blend's duration: `shortest`, or longer where the largest position offset would move
    faster than `speed` (the offset's peak speed is 15/8 of its mean, |offset_q| / T)."""
    largest = 0.0
    for j in range(controlled.shape[0]):
        largest = max(largest, abs(offset_q[controlled[j]]))
    return max(shortest, 1.875 * largest / speed)


@njit(cache=True, nogil=True)
def largest_error(q_r, q, controlled):
    """max |q_r - q| over the controlled joints."""
    largest = 0.0
    for j in range(controlled.shape[0]):
        largest = max(largest, abs(q_r[controlled[j]] - q[controlled[j]]))
    return largest


@njit(cache=True, nogil=True)
def rate_limit(tau, tau_prev, max_step, controlled):
    """Limit each controlled joint's command to tau_prev +- max_step, then make it the previous one.
    True when a joint was limited."""
    limited = False
    for j in range(controlled.shape[0]):
        k = controlled[j]
        low, high = tau_prev[k] - max_step[k], tau_prev[k] + max_step[k]
        if tau[k] > high:
            tau[k] = high
            limited = True
        elif tau[k] < low:
            tau[k] = low
            limited = True
        tau_prev[k] = tau[k]
    return limited
