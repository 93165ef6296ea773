"""Composite-rigid-body algorithm: the joint-space inertia matrix M(q).

Worked in the root frame, as Pinocchio does: composite inertias then sum without transforms, and
M[j, i] = oS_j . (oIc_i oS_i) for every support j of body i costs one dot product.
"""
from ..jit import njit
from ..spatial import dot6, inertia_times, motion_to_parent, phi_to_parent_add
from .inputs import all_finite
from .kinematics import body_poses


@njit(cache=True, forceinline=True)
def crba(parents, screw_axes, home_R, home_p, phi, q, R, p, oR, op, oS, phi_composite, F, M):
    """M(q), full symmetric. Returns False, computing nothing, when q is not finite, and False when M
    is not (overflow)."""
    if not all_finite(q):
        return False
    composite_inertias(parents, screw_axes, home_R, home_p, phi, q, R, p, oR, op, oS, phi_composite)
    inertia_matrix(parents, oS, phi_composite, F, M)
    return all_finite(M)


@njit(cache=True, inline="always")
def composite_inertias(parents, screw_axes, home_R, home_p, phi, q, R, p, oR, op, oS, phi_composite):
    """The body poses, each joint's screw oS_i and each composite inertia Ic_i (the body and everything
    it carries, as inertial parameters phi_composite_i), in the root frame."""
    body_poses(parents, screw_axes, home_R, home_p, q, R, p, oR, op)
    for i in range(q.shape[0]):
        motion_to_parent(oR[i], op[i], screw_axes[i], oS[i])
        phi_composite[i, :] = 0.0
        phi_to_parent_add(oR[i], op[i], phi[i], phi_composite[i])
    subtree_sums(parents, phi_composite)


@njit(cache=True, inline="always")
def subtree_sums(parents, X):
    """Each row X_i (a root-frame quantity of body i, which adds without transforms) becomes the sum
    over the subtree of i, from the leaves up."""
    for i in range(parents.shape[0] - 1, -1, -1):
        j = parents[i]
        if j >= 0:
            for k in range(X.shape[1]):
                X[j, k] += X[i, k]


@njit(cache=True, inline="always")
def inertia_matrix(parents, oS, phi_composite, F, M):
    """M from the composite inertias: F_i = Ic_i oS_i, the force that moves the subtree of i at unit
    qd_i; M_ji = oS_j . F_i for every support j of i."""
    for i in range(parents.shape[0]):
        inertia_times(phi_composite[i], oS[i], F[i])
        j = i
        while j >= 0:
            M[j, i] = dot6(oS[j], F[i])
            M[i, j] = M[j, i]
            j = parents[j]
