"""A finite Fourier series per joint (Swevers et al. 1997), the controller's `fourier` reference and
the excitation of identification (identification/excitation.py designs its coefficients):

    q_i(t) = q0_i + sum_l (a_il / (l w_f)) sin(l w_f t) - (b_il / (l w_f)) cos(l w_f t),

with period 2 pi / w_f; its velocity and acceleration in closed form.
"""
import math

import numpy as np

from ..jit import njit


@njit(cache=True, nogil=True)
def fourier_reference(t, q0, a, b, omega_f, q_d, v_d, a_d):
    """q_d, v_d, a_d (n,) <- the Fourier series at time t: q0 (n,), a and b (n, L) (a[i, l - 1] is
    a_il), omega_f the base angular frequency [rad/s]. Allocates nothing."""
    n, harmonics = a.shape
    for i in range(n):
        q_d[i] = q0[i]
        v_d[i] = 0.0
        a_d[i] = 0.0
    for l in range(1, harmonics + 1):
        w = l * omega_f
        s = math.sin(w * t)
        c = math.cos(w * t)
        for i in range(n):
            ail = a[i, l - 1]
            bil = b[i, l - 1]
            q_d[i] += (ail * s - bil * c) / w
            v_d[i] += ail * c + bil * s
            a_d[i] += (bil * c - ail * s) * w


def warm_up():
    """Compile (or load) fourier_reference for the argument types the controller passes."""
    fourier_reference(0.0, np.zeros(1), np.zeros((1, 1)), np.zeros((1, 1)), 1.0, np.zeros(1), np.zeros(1),
                      np.zeros(1))
