"""Cholesky factorization and solve of small symmetric positive definite systems, in place."""
import math

from numba import njit


@njit(cache=True, nogil=True)
def cholesky_solve(A, b):
    """Solve A x = b in place (x into b) for a symmetric positive definite A, overwritten by its
    Cholesky factor (lower triangle). False when A is not positive definite."""
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
    for i in range(n):          # L y = b
        x = b[i]
        for k in range(i):
            x -= A[i, k] * b[k]
        b[i] = x / A[i, i]
    for i in range(n - 1, -1, -1):   # L^T x = y
        x = b[i]
        for k in range(i + 1, n):
            x -= A[k, i] * b[k]
        b[i] = x / A[i, i]
    return True
