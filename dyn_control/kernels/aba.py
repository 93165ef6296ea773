"""Articulated-body algorithm: forward dynamics in O(n), body frames (seed "Mathematics for
Classical Dynamics", articulated-body inertias; Featherstone's three passes)."""
from numba import njit

from ..spatial import (congruence_add, cross_force, cross_motion, dot6, force_to_parent_add,
                       inertia_times, motion_to_child, motion_transform_into, spatial_inertia_into)
from .inputs import all_finite
from .kinematics import joint_transforms


@njit(cache=True)
def aba(parents, screw_axes, home_R, home_p, phi, q, v, tau, base_accel, f_ext, R, p, X, V, c, IA,
        pA, U, D, u, A, tmp6, tmp66, ddq):
    """ddq = M(q)^-1 (tau - C(q, v) v - g(q) + sum_i J_i^T f_ext_i); A receives body accelerations.
    Returns False, computing nothing, when q, v or tau is not finite."""
    if not (all_finite(q) and all_finite(v) and all_finite(tau)):
        return False
    nb = q.shape[0]
    joint_transforms(screw_axes, home_R, home_p, q, R, p)
    GV = tmp6[0]
    pa = tmp6[1]
    Ia = tmp66[0]
    # pass 1, root to leaves: twists, velocity-product accelerations, rigid-body inertias and bias forces
    for i in range(nb):
        j = parents[i]
        S = screw_axes[i]
        motion_transform_into(R[i], p[i], X[i])
        if j < 0:
            V[i, :] = 0.0
        else:
            motion_to_child(R[i], p[i], V[j], V[i])
        for k in range(6):
            V[i, k] += S[k] * v[i]
        cross_motion(V[i], S, c[i])
        for k in range(6):
            c[i, k] *= v[i]
        spatial_inertia_into(phi[i], IA[i])
        inertia_times(phi[i], V[i], GV)
        cross_force(V[i], GV, pA[i])
        for k in range(6):
            pA[i, k] -= f_ext[i, k]
    # pass 2, leaves to root: articulated-body inertias and bias forces
    for i in range(nb - 1, -1, -1):
        S = screw_axes[i]
        for r in range(6):
            s = 0.0
            for k in range(6):
                s += IA[i, r, k] * S[k]
            U[i, r] = s
        D[i] = dot6(S, U[i])
        u[i] = tau[i] - dot6(S, pA[i])
        j = parents[i]
        if j >= 0:
            # Ia = IA - U U^T / D ; pa = pA + Ia c + U u / D
            for r in range(6):
                for k in range(6):
                    Ia[r, k] = IA[i, r, k] - U[i, r] * U[i, k] / D[i]
            for r in range(6):
                s = pA[i, r] + U[i, r] * u[i] / D[i]
                for k in range(6):
                    s += Ia[r, k] * c[i, k]
                pa[r] = s
            congruence_add(X[i], Ia, tmp66[1], IA[j])
            force_to_parent_add(R[i], p[i], pa, pA[j])
    # pass 3, root to leaves: accelerations
    for i in range(nb):
        j = parents[i]
        if j < 0:
            motion_to_child(R[i], p[i], base_accel, A[i])
        else:
            motion_to_child(R[i], p[i], A[j], A[i])
        for k in range(6):
            A[i, k] += c[i, k]
        ddq[i] = (u[i] - dot6(U[i], A[i])) / D[i]
        S = screw_axes[i]
        for k in range(6):
            A[i, k] += S[k] * ddq[i]
    return True
