"""The Coriolis matrix C(q, v) whose Mdot - 2C is skew-symmetric (Christoffel-consistent).

With world-frame quantities, C = sum_k J_k^T (I_k Jdot_k + B_k J_k) and
B_k = 1/2 (V_k x* I_k + (I_k V_k) xbar - I_k V_k x), where (f) xbar m = m x* f
(Echeandia and Wensing 2021). Columns of J_k are the joint screws oS_j of k's supports and
those of Jdot_k are psi_j = oV_j x oS_j, so for a support a of body d (a = d allowed):
    C[a, d] = oS_a . (Ic_d psi_d + Bc_d oS_d),   C[d, a] = (Ic_d oS_d) . psi_a + (Bc_d^T oS_d) . oS_a
with Ic_d, Bc_d the sums of I_k, B_k over the subtree of d.
"""
from numba import njit

from ..spatial import cross_motion, dot6, motion_to_parent, motion_transform_into, spatial_inertia_into
from .inputs import all_finite
from .kinematics import joint_transforms, world_poses


@njit(cache=True)
def coriolis_matrix(parents, screw_axes, home_R, home_p, phi, q, v, R, p, oR, op, oS, oV, oPsi,
                    oIc, oBc, X, tmp6, tmp66, C):
    """C into `C`; returns False, computing nothing, when q or v is not finite."""
    if not (all_finite(q) and all_finite(v)):
        return False
    nb = q.shape[0]
    joint_transforms(screw_axes, home_R, home_p, q, R, p)
    world_poses(parents, R, p, oR, op)
    G = tmp66[0]
    T = tmp66[1]
    IV = tmp6[0]
    for i in range(nb):
        j = parents[i]
        motion_to_parent(oR[i], op[i], screw_axes[i], oS[i])
        for k in range(6):
            oV[i, k] = (0.0 if j < 0 else oV[j, k]) + oS[i, k] * v[i]
        cross_motion(oV[i], oS[i], oPsi[i])
        # world-frame inertia oI = X^T G X with X = Ad_{oT_i^-1}
        spatial_inertia_into(phi[i], G)
        motion_transform_into(oR[i], op[i], X[i])
        for r in range(6):
            for c in range(6):
                s = 0.0
                for k in range(6):
                    s += G[r, k] * X[i, k, c]
                T[r, c] = s
        for r in range(6):
            for c in range(6):
                s = 0.0
                for k in range(6):
                    s += X[i, k, r] * T[k, c]
                oIc[i, r, c] = s
        _body_coriolis(oV[i], oIc[i], IV, oBc[i])
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
    return True


@njit(cache=True)
def _body_coriolis(V, I, IV, B):
    """B = 1/2 (crf(V) I + (I V) xbar - I crm(V)) for a 6x6 inertia I and twist V (same frame)."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    for r in range(6):
        IV[r] = I[r, 0] * w0 + I[r, 1] * w1 + I[r, 2] * w2 + I[r, 3] * v0 + I[r, 4] * v1 + I[r, 5] * v2
    n0, n1, n2, f0, f1, f2 = IV[0], IV[1], IV[2], IV[3], IV[4], IV[5]
    for c in range(6):
        # column c of crf(V) I: V x* (I e_c) ; of I crm(V): I (V x e_c)
        a0, a1, a2, b0, b1, b2 = I[0, c], I[1, c], I[2, c], I[3, c], I[4, c], I[5, c]
        x0 = w1 * a2 - w2 * a1 + v1 * b2 - v2 * b1
        x1 = w2 * a0 - w0 * a2 + v2 * b0 - v0 * b2
        x2 = w0 * a1 - w1 * a0 + v0 * b1 - v1 * b0
        x3 = w1 * b2 - w2 * b1
        x4 = w2 * b0 - w0 * b2
        x5 = w0 * b1 - w1 * b0
        B[0, c] = x0
        B[1, c] = x1
        B[2, c] = x2
        B[3, c] = x3
        B[4, c] = x4
        B[5, c] = x5
    for r in range(6):
        # row r of I crm(V), crm(V) = [[ [w], 0], [[v], [w]]]: the row (a, b) of I times it is
        # (a x w + b x v, b x w), since x^T [w] = (x x w)^T
        a0, a1, a2, b0, b1, b2 = I[r, 0], I[r, 1], I[r, 2], I[r, 3], I[r, 4], I[r, 5]
        y0 = a1 * w2 - a2 * w1 + b1 * v2 - b2 * v1
        y1 = a2 * w0 - a0 * w2 + b2 * v0 - b0 * v2
        y2 = a0 * w1 - a1 * w0 + b0 * v1 - b1 * v0
        y3 = b1 * w2 - b2 * w1
        y4 = b2 * w0 - b0 * w2
        y5 = b0 * w1 - b1 * w0
        B[r, 0] -= y0
        B[r, 1] -= y1
        B[r, 2] -= y2
        B[r, 3] -= y3
        B[r, 4] -= y4
        B[r, 5] -= y5
    # (f) xbar = [[-[n], -[f]], [-[f], 0]]
    B[0, 1] += n2
    B[0, 2] -= n1
    B[1, 0] -= n2
    B[1, 2] += n0
    B[2, 0] += n1
    B[2, 1] -= n0
    B[0, 4] += f2
    B[0, 5] -= f1
    B[1, 3] -= f2
    B[1, 5] += f0
    B[2, 3] += f1
    B[2, 4] -= f0
    B[3, 1] += f2
    B[3, 2] -= f1
    B[4, 0] -= f2
    B[4, 2] += f0
    B[5, 0] += f1
    B[5, 1] -= f0
    for r in range(6):
        for c in range(6):
            B[r, c] *= 0.5
