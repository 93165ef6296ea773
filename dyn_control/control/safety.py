"""The safety pieces every controller tick shares (tick.py, closed_chain_tick.py): the re-engagement
blend of the reference, the torque without fresh joint states, and the checks every command passes
(finite, within the effort limits, rate-limited).

Re-engagement. After activation, after safe mode, after a gap in the joint states and after a
tracking error above the limit, the reference is re-anchored at the measured state: with t0 the
time of the anchor, offset_q = q - q_d(t0) and offset_v = v - v_d(t0), the tracked reference is
    q_r(t) = q_d(t) + offset_q H0(s) + offset_v T_v H1(s_v),
    s = (t - t0) / T,  s_v = min((t - t0) / T_v, 1),
with the quintic Hermite bases
    H0(s) = 1 - 10 s^3 + 15 s^4 - 6 s^5,   H1(s) = s - 6 s^3 + 8 s^4 - 3 s^5
(H0(0) = 1, H1'(0) = 1, every other value, slope and curvature zero at both ends), and v_r, a_r
its derivatives. T is `reengage.duration`, or longer where the position offset would otherwise
move faster than `reengage.max_velocity` (blend_duration); T_v is `reengage.duration`: the velocity
offset dies out within it whatever T (over a long T it would carry the measured velocity on for
seconds: max H1 = 16/81 at s_v = 1/3, an excursion of 16/81 |offset_v| T_v at most). So the
reference starts at the measured position and velocity (no error to act on, hence no torque step)
and joins q_d after T seconds with continuous velocity and acceleration.
A blend carries the measured velocity into the reference; from a fast state (an arm that fell or
was pushed while the controller was blind) the reference would run on where the torque limits
cannot follow, and every error re-anchor would take the new speed up again. So while a controlled
joint is faster than `reengage.brake_speed`, the anchor waits and the arm brakes (the computed
torque of a = -braking_gain v, at the fresh state); the blend starts once every joint is slower.

Torque-rate limit. Every command differs from the previous one by at most `max_step` per joint
(the rate limit times the loop's period), whatever the mode and its switches (as Franka's robots
require: they refuse torque discontinuities).
"""
import numpy as np

from ..jit import njit
from ..kernels.inputs import all_finite
from .flags import (S_ANCHOR, S_ANCHORS, S_BLEND_SPAN, S_BLEND_SPEED, S_BLEND_START, S_BLEND_TIME, S_BLENDING,
                    S_BRAKE_SPEED, S_BRAKING_FIRST, S_BRAKINGS_FIRST, S_ERROR_ANCHORS, S_ERROR_COUNT, S_ERROR_LIMIT,
                    S_ERROR_SQ, S_NEW_SAMPLE, S_NON_FINITE, S_RATE_LIMITED, S_T)


@njit(cache=True, nogil=True)
def anchor(q, v, q_d, v_d, mask, offset_q, offset_v):
    """Start a blend at the measured state: offsets of the controlled joints (mask 1)."""
    for k in range(q.shape[0]):
        offset_q[k] = (q[k] - q_d[k]) * mask[k]
        offset_v[k] = (v[k] - v_d[k]) * mask[k]


@njit(cache=True, nogil=True)
def blend_reference(elapsed, duration, velocity_duration, offset_q, offset_v, q_d, v_d, a_d, q_r, v_r, a_r):
    """q_r, v_r, a_r = the reference q_d, v_d, a_d plus the decaying offsets (module docstring: T =
    duration, T_v = velocity_duration <= duration), `elapsed` seconds after the anchor. True while
    the blend lasts (after it, q_r = q_d)."""
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
    h1 = dh1 = ddh1 = 0.0       # T_v = 0: no velocity offset
    if velocity_duration > 0.0:
        s = min(max(elapsed, 0.0) / velocity_duration, 1.0)
        s2 = s * s
        s3 = s2 * s
        h1 = (s - 6.0 * s3 + 8.0 * s3 * s - 3.0 * s3 * s2) * velocity_duration
        dh1 = 1.0 - 18.0 * s2 + 32.0 * s3 - 15.0 * s3 * s
        ddh1 = (-36.0 * s + 96.0 * s2 - 60.0 * s3) / velocity_duration
    for k in range(q_d.shape[0]):
        dq, dv = offset_q[k], offset_v[k]
        q_r[k] = q_d[k] + dq * h0 + dv * h1
        v_r[k] = v_d[k] + dq * dh0 / duration + dv * dh1
        a_r[k] = a_d[k] + dq * ddh0 / (duration * duration) + dv * ddh1
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
def largest_speed(v, controlled):
    """max |v| over the controlled joints."""
    largest = 0.0
    for j in range(controlled.shape[0]):
        largest = max(largest, abs(v[controlled[j]]))
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


@njit(cache=True, nogil=True)
def tracked_reference(s, tracking, mask, controlled, q, v, q_d, v_d, a_d, offset_q, offset_v, q_r, v_r, a_r):
    """q_r, v_r, a_r: the reference blended from the last anchor (module docstring). While tracking, a
    new sample with an error above s[S_ERROR_LIMIT] re-anchors; so does s[S_ANCHOR] (the caller's:
    activation, the end of safe mode or of a gap). The blend lasts s[S_BLEND_TIME], longer where the
    position offset would otherwise move faster than s[S_BLEND_SPEED] (its peak speed is 15/8 of
    the mean). True when the anchor waits for the arm to brake below s[S_BRAKE_SPEED] (the caller
    brakes; q_r = q, v_r = a_r = 0 meanwhile)."""
    t = s[S_T]
    if tracking and s[S_ANCHOR] == 0.0 and s[S_NEW_SAMPLE] != 0.0:
        elapsed = t - s[S_BLEND_START] if s[S_BLENDING] != 0.0 else np.inf
        blend_reference(elapsed, s[S_BLEND_SPAN], min(s[S_BLEND_TIME], s[S_BLEND_SPAN]), offset_q, offset_v, q_d, v_d,
                        a_d, q_r, v_r, a_r)
        if largest_error(q_r, q, controlled) > s[S_ERROR_LIMIT]:
            s[S_ANCHOR] = 1.0
            s[S_ERROR_ANCHORS] += 1.0
    if tracking and s[S_ANCHOR] != 0.0 and largest_speed(v, controlled) > s[S_BRAKE_SPEED]:
        if s[S_BRAKING_FIRST] == 0.0:
            s[S_BRAKINGS_FIRST] += 1.0
        s[S_BRAKING_FIRST] = 1.0
        q_r[:] = q
        v_r[:] = 0.0
        a_r[:] = 0.0
        return True
    s[S_BRAKING_FIRST] = 0.0
    if s[S_ANCHOR] != 0.0:
        anchor(q, v, q_d, v_d, mask, offset_q, offset_v)
        s[S_BLEND_SPAN] = blend_duration(offset_q, controlled, s[S_BLEND_TIME], s[S_BLEND_SPEED])
        s[S_BLEND_START] = t
        s[S_BLENDING] = 1.0
        s[S_ANCHORS] += 1.0
        s[S_ANCHOR] = 0.0
    elapsed = t - s[S_BLEND_START] if s[S_BLENDING] != 0.0 else np.inf
    s[S_BLENDING] = 1.0 if blend_reference(elapsed, s[S_BLEND_SPAN], min(s[S_BLEND_TIME], s[S_BLEND_SPAN]), offset_q,
                                           offset_v, q_d, v_d, a_d, q_r, v_r, a_r) else 0.0
    return False


@njit(cache=True, nogil=True)
def accumulate_tracking_error(s, q_r, q, controlled):
    """The tracking error's running mean square over the controlled joints (s[S_ERROR_SQ] /
    s[S_ERROR_COUNT]), one term per new sample."""
    error = 0.0
    for j in range(controlled.shape[0]):
        e = q_r[controlled[j]] - q[controlled[j]]
        error += e * e
    s[S_ERROR_SQ] += error / controlled.shape[0]
    s[S_ERROR_COUNT] += 1.0


@njit(cache=True, nogil=True)
def hold_torque(zero, gravity, out):
    """The torque without a fresh joint state: the gravity torque at the last one, or zero. No
    velocity term: a stale velocity cannot be damped, it is an open-loop torque."""
    if zero:
        out[:] = 0.0
    else:
        out[:] = gravity


@njit(cache=True, nogil=True)
def finish_command(s, tau, hold, mask, limit, tau_prev, max_step, controlled, command):
    """What every command passes, in order: a non-finite torque is replaced by `hold`, then by zero
    (counted in s[S_NON_FINITE]); zero on the joints not controlled (mask 0), clamped to +-limit on
    the others; rate-limited (counted in s[S_RATE_LIMITED]); command[j] = tau[controlled[j]]."""
    if not all_finite(tau):
        s[S_NON_FINITE] += 1.0
        tau[:] = hold
        if not all_finite(tau):
            tau[:] = 0.0
    for k in range(tau.shape[0]):
        if mask[k] == 0.0:
            tau[k] = 0.0
        elif tau[k] > limit[k]:
            tau[k] = limit[k]
        elif tau[k] < -limit[k]:
            tau[k] = -limit[k]
    if rate_limit(tau, tau_prev, max_step, controlled):
        s[S_RATE_LIMITED] += 1.0
    for j in range(controlled.shape[0]):
        command[j] = tau[controlled[j]]
