"""The reference a compiled tick tracks, before the safety blend (safety.tracked_reference): a sine
about a centre (amplitude zero: hold a point), or a point the caller wrote (trajectory.py samples
trajectories into q_d, v_d, a_d); the joints not controlled follow their measured state."""
import math

from ..jit import njit


@njit(cache=True, nogil=True)
def sine_reference(t, omega, centre, amplitude, q_d, v_d, a_d):
    """q_d = centre + amplitude sin(omega t), and its first and second derivatives."""
    sine, cosine = math.sin(omega * t), math.cos(omega * t)
    for k in range(q_d.shape[0]):
        q_d[k] = centre[k] + amplitude[k] * sine
        v_d[k] = amplitude[k] * omega * cosine
        a_d[k] = -amplitude[k] * omega * omega * sine


@njit(cache=True, nogil=True)
def controlled_mask(controlled, mask):
    """mask[k] = 1 on the controlled joints, 0 elsewhere."""
    mask[:] = 0.0
    for j in range(controlled.shape[0]):
        mask[controlled[j]] = 1.0


@njit(cache=True, nogil=True)
def follow_measured(mask, q, v, q_d, v_d, a_d):
    """The joints not controlled (mask 0) are referenced at their measured state, at rest."""
    for k in range(q.shape[0]):
        if mask[k] == 0.0:
            q_d[k] = q[k]
            v_d[k] = v[k]
            a_d[k] = 0.0
