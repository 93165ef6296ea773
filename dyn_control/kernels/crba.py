"""Composite-rigid-body algorithm: the joint-space inertia matrix M(q).

Worked in the root frame, as Pinocchio does: composite inertias then sum without transforms, and
M[j, i] = oS_j . (oIc_i oS_i) for every support j of body i costs one dot product.
"""
from ..jit import njit
from ..spatial import dot6, inertia_times, motion_to_parent, phi_to_parent_add
from .inputs import all_finite
from .kinematics import joint_transforms, world_poses


@njit(cache=True, forceinline=True)
def crba(parents, screw_axes, home_R, home_p, phi, q, R, p, oR, op, oS, phi_composite, F, M):
    """M(q), full symmetric. Returns False, computing nothing, when q is not finite, and False when M
    is not (overflow)."""
    if not all_finite(q):
        return False
    nb = q.shape[0]
    joint_transforms(screw_axes, home_R, home_p, q, R, p)
    world_poses(parents, R, p, oR, op)
    for i in range(nb):
        # joint screw and body inertia in the root frame
        motion_to_parent(oR[i], op[i], screw_axes[i], oS[i])
        phi_composite[i, :] = 0.0
        phi_to_parent_add(oR[i], op[i], phi[i], phi_composite[i])
    for i in range(nb - 1, -1, -1):
        # composite inertia Ic_i: the body and everything it carries
        j = parents[i]
        if j >= 0:
            for k in range(10):
                phi_composite[j, k] += phi_composite[i, k]
    for i in range(nb):
        # F_i = Ic_i oS_i, the force that moves the subtree of i at unit qd_i; M_ji = oS_j . F_i
        inertia_times(phi_composite[i], oS[i], F[i])
        j = i
        while j >= 0:
            M[j, i] = dot6(oS[j], F[i])
            M[i, j] = M[j, i]
            j = parents[j]
    return all_finite(M)
