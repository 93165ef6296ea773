"""Cholesky factorization and solves of small symmetric positive definite systems, in place."""
import math

from ..jit import njit


@njit(cache=True, nogil=True)
def cholesky_factor(A):
    """A = L L^T: L into A's lower triangle (the upper one is left as it was). False when A is not
    positive definite."""
    n = A.shape[0]
    for j in range(n):
        d = A[j, j]
        for k in range(j):
            d -= A[j, k] * A[j, k]
        if not d > 0.0:
            return False
        d = math.sqrt(d)
        A[j, j] = d
        for i in range(j + 1, n):
            x = A[i, j]
            for k in range(j):
                x -= A[i, k] * A[j, k]
            A[i, j] = x / d
    return True


@njit(cache=True, nogil=True)
def forward_substitute(L, b):
    """b (n,) overwritten by L^-1 b, L the lower triangle of cholesky_factor's result."""
    for i in range(L.shape[0]):
        x = b[i]
        for k in range(i):
            x -= L[i, k] * b[k]
        b[i] = x / L[i, i]


@njit(cache=True, nogil=True)
def back_substitute(L, b):
    """b (n,) overwritten by L^-T b, L the lower triangle of cholesky_factor's result."""
    for i in range(L.shape[0] - 1, -1, -1):
        x = b[i]
        for k in range(i + 1, L.shape[0]):
            x -= L[k, i] * b[k]
        b[i] = x / L[i, i]


@njit(cache=True, nogil=True)
def cholesky_solve(A, b):
    """Solve A x = b in place (x into b) for a symmetric positive definite A, overwritten by its
    Cholesky factor (lower triangle). False when A is not positive definite."""
    if not cholesky_factor(A):
        return False
    forward_substitute(A, b)
    back_substitute(A, b)
    return True
