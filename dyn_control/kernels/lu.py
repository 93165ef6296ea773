"""Small dense linear solves in place: LU with partial pivoting (Golub and Van Loan, Algorithm 3.4.1).

For the few-by-few systems of a closed chain (the passive block of the loop-closure Jacobian, the
reduced mass matrix), where NumPy's solvers would allocate on every call.
"""
from ..jit import njit


@njit(cache=True, nogil=True)
def lu_factor(A, pivots):
    """A (n, n) overwritten by its LU factors (L unit lower, U upper), row swaps in pivots (n,).
    Returns the smallest |U[k, k]|: zero (and A partly factored) when A is singular."""
    n = A.shape[0]
    smallest = 1e308
    for k in range(n):
        row = k
        largest = abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > largest:
                largest = abs(A[i, k])
                row = i
        pivots[k] = row
        if largest == 0.0 or not largest < 1e308:
            return 0.0
        if row != k:
            for c in range(n):
                A[k, c], A[row, c] = A[row, c], A[k, c]
        smallest = min(smallest, largest)
        inverse = 1.0 / A[k, k]
        for i in range(k + 1, n):
            A[i, k] *= inverse
            factor = A[i, k]
            for c in range(k + 1, n):
                A[i, c] -= factor * A[k, c]
    return smallest


@njit(cache=True, nogil=True)
def lu_solve(LU, pivots, b):
    """b (n,) overwritten by the solution x of A x = b, given lu_factor's LU and pivots of A."""
    n = LU.shape[0]
    for k in range(n):
        row = pivots[k]
        if row != k:
            b[k], b[row] = b[row], b[k]
    for i in range(n):                 # L y = P b
        x = b[i]
        for k in range(i):
            x -= LU[i, k] * b[k]
        b[i] = x
    for i in range(n - 1, -1, -1):      # U x = y
        x = b[i]
        for k in range(i + 1, n):
            x -= LU[i, k] * b[k]
        b[i] = x / LU[i, i]
