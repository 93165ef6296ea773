"""Composite-rigid-body algorithm: the joint-space inertia matrix M(q).

Worked in the root frame, as Pinocchio does: composite inertias then sum without transforms, and
M[j, i] = oS_j . (oIc_i oS_i) for every support j of body i costs one dot product.
"""
from numba import njit

from ..spatial import dot6, inertia_times, motion_to_parent
from .inputs import all_finite
from .kinematics import joint_transforms, world_poses


@njit(cache=True, inline="always")
def phi_to_parent_add(R, p, phi, out):
    """out += phi of a body whose frame has pose (R, p) in the parent frame, in parent coordinates.

    h' = R h + m p ;  I'_o = R I R^T - [R h][p] - [p][R h] - m [p][p]   (parallel axis theorem)
    """
    m = phi[0]
    h0 = R[0, 0] * phi[1] + R[0, 1] * phi[2] + R[0, 2] * phi[3]
    h1 = R[1, 0] * phi[1] + R[1, 1] * phi[2] + R[1, 2] * phi[3]
    h2 = R[2, 0] * phi[1] + R[2, 1] * phi[2] + R[2, 2] * phi[3]
    ixx, iyy, izz, ixy, ixz, iyz = phi[4], phi[5], phi[6], phi[7], phi[8], phi[9]
    # R I R^T, entry by entry: (R I)[r, c] then times R^T
    ri00 = R[0, 0] * ixx + R[0, 1] * ixy + R[0, 2] * ixz
    ri01 = R[0, 0] * ixy + R[0, 1] * iyy + R[0, 2] * iyz
    ri02 = R[0, 0] * ixz + R[0, 1] * iyz + R[0, 2] * izz
    ri10 = R[1, 0] * ixx + R[1, 1] * ixy + R[1, 2] * ixz
    ri11 = R[1, 0] * ixy + R[1, 1] * iyy + R[1, 2] * iyz
    ri12 = R[1, 0] * ixz + R[1, 1] * iyz + R[1, 2] * izz
    ri20 = R[2, 0] * ixx + R[2, 1] * ixy + R[2, 2] * ixz
    ri21 = R[2, 0] * ixy + R[2, 1] * iyy + R[2, 2] * iyz
    ri22 = R[2, 0] * ixz + R[2, 1] * iyz + R[2, 2] * izz
    rxx = ri00 * R[0, 0] + ri01 * R[0, 1] + ri02 * R[0, 2]
    ryy = ri10 * R[1, 0] + ri11 * R[1, 1] + ri12 * R[1, 2]
    rzz = ri20 * R[2, 0] + ri21 * R[2, 1] + ri22 * R[2, 2]
    rxy = ri00 * R[1, 0] + ri01 * R[1, 1] + ri02 * R[1, 2]
    rxz = ri00 * R[2, 0] + ri01 * R[2, 1] + ri02 * R[2, 2]
    ryz = ri10 * R[2, 0] + ri11 * R[2, 1] + ri12 * R[2, 2]
    p0, p1, p2 = p[0], p[1], p[2]
    # -[a][b] - [b][a] = 2 (a.b) 1 - a b^T - b a^T with a = R h, b = p ; -m[p][p] = m(|p|^2 1 - p p^T)
    hp = h0 * p0 + h1 * p1 + h2 * p2
    pp = p0 * p0 + p1 * p1 + p2 * p2
    out[0] += m
    out[1] += h0 + m * p0
    out[2] += h1 + m * p1
    out[3] += h2 + m * p2
    out[4] += rxx + 2.0 * hp - 2.0 * h0 * p0 + m * (pp - p0 * p0)
    out[5] += ryy + 2.0 * hp - 2.0 * h1 * p1 + m * (pp - p1 * p1)
    out[6] += rzz + 2.0 * hp - 2.0 * h2 * p2 + m * (pp - p2 * p2)
    out[7] += rxy - h0 * p1 - h1 * p0 - m * p0 * p1
    out[8] += rxz - h0 * p2 - h2 * p0 - m * p0 * p2
    out[9] += ryz - h1 * p2 - h2 * p1 - m * p1 * p2


@njit(cache=True)
def crba(parents, screw_axes, home_R, home_p, phi, q, R, p, oR, op, oS, phi_composite, F, M):
    """M(q), full symmetric. Returns False, computing nothing, when q is not finite."""
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
    return True
