"""Finiteness screening shared by the kernels: a kernel returns False, before writing anything, when
its inputs are not finite, and False after computing when its results are not (finite inputs that
overflow); the public wrapper turns that into a ValueError naming them (a loop over data already in
cache costs far less than NumPy checks from Python)."""
import numpy as np

from ..jit import njit


@njit(cache=True, forceinline=True)
def all_finite(x):
    """True when every entry of x (any shape) is finite; no early exit, so the loop vectorizes."""
    finite = True
    for value in x.flat:
        finite &= np.isfinite(value)
    return finite


@njit(cache=True, forceinline=True)
def all_below(x, bound):
    """True when every entry of x (any shape) is finite and below bound in magnitude."""
    below = True
    for value in x.flat:
        below &= abs(value) < bound
    return below
