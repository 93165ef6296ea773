"""Input screening shared by the kernels: a kernel returns False, before writing anything, when
its inputs are not finite, and the public wrapper turns that into a ValueError naming them (a
loop over data already in cache costs far less than NumPy checks from Python)."""
import numpy as np
from numba import njit


@njit(cache=True)
def all_finite(x):
    for k in range(x.shape[0]):
        if not np.isfinite(x[k]):
            return False
    return True
