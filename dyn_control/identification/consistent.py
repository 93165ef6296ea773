"""Physically consistent standard parameters as one convex program (cvxpy, solved by Clarabel).

A body's inertial parameters phi = [m, h, I] (I about the body origin) are those of a physical mass
distribution exactly when its pseudo-inertia matrix

    J = [[Sigma, h], [h^T, m]],   Sigma = tr(I)/2 1 - I   (the second moment of the mass, int x x^T dm)

is positive semi-definite (Wensing, Kim & Slotine 2017); phi is linear in J, I = tr(Sigma) 1 - Sigma.
So the variables are each body's J (symmetric 4x4) and the joint terms x (armature, viscous,
Coulomb friction, per joint), and the program is

    minimise   ||R theta(J, x) - y||^2                                  (weighted torque residual)
             + gamma sum_b d(J_b, J0_b)                                  (entropic divergence to the prior)
             + gamma ||(x - x0) / s||^2                                 (joint terms to their prior)
    subject to J_b >> 0, x >= 0,

with R, y the weighted stacked regressor in its QR-reduced form (base_parameters.weighted_normal_form:
the same residual up to a constant; rows weighted by the inverse of each joint's residual standard
deviation, so each row adds about 1 at the fit and the first term is twice a negative
log-likelihood), and d the log-det (Bregman) divergence of Lee, Wensing & Park (2020), convex in J:

    d(J, J0) = -log det J + log det J0 + tr(J0^-1 J) - 4.

The divergence fixes the combinations the data cannot see (the unidentifiable directions) at the
prior's values in its own geometry, and keeps every J strictly positive definite. A prior J0 that
is singular (a massless body) is made positive definite first by PRIOR_FLOOR. The solver works on
each body's J whitened by its prior, J = L0 X L0^T with J0 = L0 L0^T (Cholesky): X >> 0 and
d = -log det X + tr X - 4 (X0 = 1), the same program, but with numbers near 1 where J0's own
eigenvalues span seven orders (a point mass with a tiny inertia).
"""
import numpy as np

from ..inertia.parameters import phi_of_pseudo_inertia, pseudo_inertia
from .base_parameters import IdentificationError

REGULARIZATION = 1.0      # gamma: a divergence of 1 weighs as much as one sample's (weighted) squared residual
PRIOR_FLOOR = 1e-2        # a singular prior body J0 becomes J0 + PRIOR_FLOOR * (the bodies' mean tr J0 / 4) 1
JOINT_SCALE = (1e-2, 1.0, 1.0)   # s of armature [kg m^2], viscous [N m s/rad], Coulomb [N m] terms


def entropic_divergence(J, J0):
    """d(J, J0) of the module docstring, for NumPy matrices (inf where J is not positive definite)."""
    if np.linalg.eigvalsh(J)[0] <= 0.0:
        return np.inf
    return float(-np.linalg.slogdet(J)[1] + np.linalg.slogdet(J0)[1] + np.trace(np.linalg.solve(J0, J)) - 4.0)


def positive_prior(J0, scale):
    """J0, or J0 + PRIOR_FLOOR * scale * 1 when it is not positive definite (a massless body: a small
    body of the robot's scale, `scale` the bodies' mean eigenvalue, instead of none)."""
    eigenvalues = np.linalg.eigvalsh(J0)
    if eigenvalues[0] > 1e-9 * max(eigenvalues[-1], 1e-300):
        return J0
    return J0 + PRIOR_FLOOR * scale * np.eye(4)


def consistent_parameters(R, y, rows, prior_phi, prior_joint=None, gamma=REGULARIZATION):
    """(phi (nb, 10), joint terms (nb, 3) or None): the solution of the module's program. R (n, n),
    y (n,): the reduced weighted regressor and torques, columns as the standard parameters (inertial
    block, then the joint block when prior_joint (nb, 3) is given); rows: how many torque rows
    they reduce (the objective is divided by it, which leaves the solution as it is and the
    solver's numbers near 1); prior_phi (nb, 10) and prior_joint: the prior."""
    import cvxpy as cp
    nb = prior_phi.shape[0]
    priors = [pseudo_inertia(phi) for phi in prior_phi]
    scale = max(np.mean([np.trace(J0) / 4.0 for J0 in priors]), 1e-6)
    L0 = [np.linalg.cholesky(positive_prior(J0, scale)) for J0 in priors]
    X = [cp.Variable((4, 4), symmetric=True, name=f"X{b}") for b in range(nb)]
    J = [L @ Xb @ L.T for L, Xb in zip(L0, X)]
    theta = [e for b in range(nb) for e in phi_of_pseudo_inertia(J[b])]
    constraints = [Xb >> 0 for Xb in X]
    regularizer = sum(-cp.log_det(Xb) + cp.trace(Xb) for Xb in X)
    if prior_joint is not None:
        x = cp.Variable((nb, 3), name="joint_terms")
        theta += [x[j, k] for j in range(nb) for k in range(3)]
        constraints.append(x >= 0)
        regularizer += cp.sum_squares(cp.multiply(x - prior_joint, 1.0 / np.array(JOINT_SCALE)))
    residual = cp.sum_squares(R @ cp.hstack(theta) - y)
    problem = cp.Problem(cp.Minimize((residual + gamma * regularizer) / rows), constraints)
    try:
        problem.solve(solver=cp.CLARABEL, canon_backend=cp.SCIPY_CANON_BACKEND)
    except cp.error.SolverError as error:
        raise IdentificationError(f"the consistent fit failed in the solver: {error}") from None
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise IdentificationError(f"the consistent fit failed: solver status {problem.status}")
    phi = np.array([phi_of_pseudo_inertia(L @ Xb.value @ L.T) for L, Xb in zip(L0, X)], dtype=np.float64)
    joint = None if prior_joint is None else np.maximum(x.value, 0.0)
    return phi, joint
