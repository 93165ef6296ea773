"""The Coriolis matrix C(q, v) whose Mdot - 2C is skew-symmetric (Christoffel-consistent).

With world-frame quantities, C = sum_k J_k^T (I_k Jdot_k + B_k J_k) and
B_k = 1/2 (V_k x* I_k + (I_k V_k) xbar - I_k V_k x), where (f) xbar m = m x* f
(Echeandia and Wensing 2021). Columns of J_k are the joint screws oS_j of k's supports and
those of Jdot_k are psi_j = oV_j x oS_j, so for a support a of body d (a = d allowed):
    C[a, d] = oS_a . (Ic_d psi_d + Bc_d oS_d),   C[d, a] = (Ic_d oS_d) . psi_a + (Bc_d^T oS_d) . oS_a
with Ic_d, Bc_d the sums of I_k, B_k over the subtree of d. The first `root_dofs` joints may be one
multi-DoF joint, such as a free flyer's six (floating_base.py): the columns of one joint all turn
with the twist of its last body, psi_j = oV_last x oS_j, and the formulas above give its block.
"""
from ..jit import njit
from ..spatial import body_coriolis, cross_motion, dot6, motion_to_parent, phi_to_parent_add, spatial_inertia_into
from .free_flyer import FREE_FLYER_DOFS
from .inputs import all_finite
from .kinematics import body_poses


@njit(cache=True, forceinline=True)
def coriolis_matrix(parents, screw_axes, home_R, home_p, phi, q, v, R, p, oR, op, oS, oV, oPsi,
                    oIc, oBc, phi_world, tmp6, C):
    """C into `C`; returns False, computing nothing, when q or v is not finite, and False when C is
    not (overflow). phi_world (nb, 10): scratch for the bodies' parameters in the root frame."""
    return _coriolis_matrix(parents, screw_axes, home_R, home_p, phi, q, v, 0, R, p, oR, op, oS, oV, oPsi,
                            oIc, oBc, phi_world, tmp6, C)


@njit(cache=True)
def free_flyer_coriolis_matrix(parents, screw_axes, home_R, home_p, phi, q, v, R, p, oR, op, oS, oV, oPsi,
                               oIc, oBc, phi_world, tmp6, C):
    """coriolis_matrix of a tree whose first six joints are a free flyer's (floating_base.py)."""
    return _coriolis_matrix(parents, screw_axes, home_R, home_p, phi, q, v, FREE_FLYER_DOFS, R, p, oR, op, oS, oV,
                            oPsi, oIc, oBc, phi_world, tmp6, C)


@njit(cache=True, inline="always")
def _coriolis_matrix(parents, screw_axes, home_R, home_p, phi, q, v, root_dofs, R, p, oR, op, oS, oV, oPsi,
                     oIc, oBc, phi_world, tmp6, C):
    if not (all_finite(q) and all_finite(v)):
        return False
    nb = q.shape[0]
    body_poses(parents, screw_axes, home_R, home_p, q, R, p, oR, op)
    IV = tmp6[0]
    for i in range(nb):
        j = parents[i]
        motion_to_parent(oR[i], op[i], screw_axes[i], oS[i])
        for k in range(6):
            oV[i, k] = (0.0 if j < 0 else oV[j, k]) + oS[i, k] * v[i]
        cross_motion(oV[i], oS[i], oPsi[i])
        # world-frame inertia oI = X^T G X with X = Ad_{oT_i^-1}: the parallel axis theorem on the
        # ten parameters (as aba.py), then the 6x6 matrix
        for k in range(10):
            phi_world[i, k] = 0.0
        phi_to_parent_add(oR[i], op[i], phi[i], phi_world[i])
        spatial_inertia_into(phi_world[i], oIc[i])
        body_coriolis(oV[i], oIc[i], IV, oBc[i])
    for i in range(root_dofs):
        cross_motion(oV[root_dofs - 1], oS[i], oPsi[i])
    for i in range(nb - 1, -1, -1):
        j = parents[i]
        if j >= 0:
            for r in range(6):
                for c in range(6):
                    oIc[j, r, c] += oIc[i, r, c]
                    oBc[j, r, c] += oBc[i, r, c]
    f = tmp6[1]
    g1 = tmp6[2]
    g2 = tmp6[3]
    for d in range(nb):
        for r in range(6):
            s_f = 0.0
            s_g1 = 0.0
            s_g2 = 0.0
            for k in range(6):
                s_f += oIc[d, r, k] * oPsi[d, k] + oBc[d, r, k] * oS[d, k]
                s_g1 += oIc[d, r, k] * oS[d, k]
                s_g2 += oBc[d, k, r] * oS[d, k]
            f[r] = s_f
            g1[r] = s_g1
            g2[r] = s_g2
        a = d
        while a >= 0:
            C[a, d] = dot6(oS[a], f)
            if a != d:
                C[d, a] = dot6(g1, oPsi[a]) + dot6(g2, oS[a])
            a = parents[a]
    return all_finite(C)
