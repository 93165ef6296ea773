"""Dynamics of a closed chain in its actuated coordinates theta_a, from the equivalent tree and the
completion Jacobian G = dq/dtheta_a (any loop closure: see loop_closure.py for one).

With the tree moving as v = G dtheta_a, a = G ddtheta_a + a_bias (a_bias = Gdot dtheta_a), virtual work
(seed "Differential Dynamics and Mesh-Based Inertia", eq. 13: tau_a = G^T tau_tree) gives
    M_a(theta_a) ddtheta_a + h_a(theta_a, dtheta_a) = tau_a + G^T J^T w_ext
    M_a = G^T M(q) G,   h_a = G^T rnea(q, v, a_bias)   (gravity and velocity terms),
and, the tree torque being linear in the inertial parameters phi, tau_a = G^T Y(q, v, a) phi.
Each function calls the tree kernel and projects; outputs go into the arrays given.
"""
from ..jit import njit
from .crba import crba
from .regressor import regressor
from .rnea import rnea


@njit(cache=True, nogil=True)
def project(G, tau_tree, out):
    """out (na,) = G^T tau_tree."""
    for i in range(G.shape[1]):
        total = 0.0
        for k in range(G.shape[0]):
            total += G[k, i] * tau_tree[k]
        out[i] = total


@njit(cache=True, nogil=True)
def project_columns(G, X, out):
    """out (na, c) = G^T X, X (nv, c)."""
    for i in range(G.shape[1]):
        for c in range(X.shape[1]):
            total = 0.0
            for k in range(G.shape[0]):
                total += G[k, i] * X[k, c]
            out[i, c] = total


@njit(cache=True, nogil=True)
def reduced_inverse_dynamics(parents, screw_axes, home_R, home_p, phi, q, v, a, base_accel, f_ext, G, R, p,
                             V, Vdot, F, tmp6, tau_tree, tau_a):
    """tau_a = G^T rnea(q, v, a, f_ext) (with a = a_bias: the bias h_a). False when not finite."""
    if not rnea(parents, screw_axes, home_R, home_p, phi, q, v, a, base_accel, f_ext, R, p, V, Vdot, F,
                tmp6, tau_tree):
        return False
    project(G, tau_tree, tau_a)
    return True


@njit(cache=True, nogil=True)
def reduced_inertia(parents, screw_axes, home_R, home_p, phi, q, G, R, p, oR, op, oS, phi_composite, F, M,
                    MG, M_a):
    """M_a = G^T M(q) G (na, na), with M the tree's (CRBA) and MG = M G (nv, na) kept."""
    if not crba(parents, screw_axes, home_R, home_p, phi, q, R, p, oR, op, oS, phi_composite, F, M):
        return False
    nv, na = G.shape[0], G.shape[1]
    for k in range(nv):
        for i in range(na):
            total = 0.0
            for l in range(nv):
                total += M[k, l] * G[l, i]
            MG[k, i] = total
    project_columns(G, MG, M_a)
    return True


@njit(cache=True, nogil=True)
def reduced_regressor(parents, screw_axes, home_R, home_p, q, v, a, base_accel, G, R, p, oR, op, oS, V, Vdot,
                      tmp6, Y, Y_a):
    """Y_a (na, 10 nb) = G^T Y(q, v, a): tau_a = Y_a phi, with Y the tree's regressor."""
    if not regressor(parents, screw_axes, home_R, home_p, q, v, a, base_accel, R, p, oR, op, oS, V, Vdot,
                     tmp6, Y):
        return False
    project_columns(G, Y, Y_a)
    return True
