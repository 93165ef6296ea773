"""Cholesky factorization and solves of small symmetric positive definite systems, in place."""
import math

from ..jit import njit


@njit(cache=True, nogil=True)
def largest_diagonal(A):
    """The largest diagonal entry of A, or -1.0 when one is not positive (A is then not positive
    definite)."""
    top = 0.0
    for i in range(A.shape[0]):
        if not A[i, i] > 0.0:
            return -1.0
        top = max(top, A[i, i])
    return top


@njit(cache=True, nogil=True)
def cholesky_factor(A, L, threshold):
    """A = L L^T: L into L's lower triangle (L may be A itself; its upper triangle is left as it was).
    False when a pivot^2 falls to threshold * max(diag A) or below (threshold 0: A is not positive
    definite)."""
    top = largest_diagonal(A)
    if top < 0.0:
        return False
    for j in range(A.shape[0]):
        d = A[j, j]
        for k in range(j):
            d -= L[j, k] * L[j, k]
        if not d > threshold * top:
            return False
        d = math.sqrt(d)
        L[j, j] = d
        for i in range(j + 1, A.shape[0]):
            x = A[i, j]
            for k in range(j):
                x -= L[i, k] * L[j, k]
            L[i, j] = x / d
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
    if not cholesky_factor(A, A, 0.0):
        return False
    forward_substitute(A, b)
    back_substitute(A, b)
    return True
