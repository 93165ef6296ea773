"""First-order derivatives of inverse dynamics: d tau / d q, d tau / d v and M = d tau / d a, O(n^2).

Worked in the root ("world") frame, in the spirit of seed "Differential Dynamics and Mesh-Based
Inertia", Algorithm 1 (P_i = dV_i/dq, Q_i = dVdot_i/dq forward, R_i = dF_i/dq backward, then
tau_i = S_i^T F_i, eq. 5), with the bookkeeping of Carpentier & Mansard's world-frame RNEA
derivatives: in the root frame no transform depends on q except through the moving subtree, so the
O(n^2) part is dot products of 6-vectors.

Root-frame quantities of body k: joint screw s_k, twist v_k, spatial acceleration a_k (gravity
included: a_root = [0; -g]), inertia I_k, momentum l_k = I_k v_k, and own force
f_k = I_k a_k + v_k x* l_k - f_ext_k; F_i = sum of f_k over the subtree of i, tau_i = s_i . F_i.

Turning joint j by dq_j moves its subtree rigidly, so every body-fixed vector of a body k in the
subtree changes by s_j x (motion) or s_j x* (force), except for what the parent of j (p = p(j))
brings in, which does not move:
    d v_k = s_j x v_k - beta_j,        beta_j  = s_j x v_p,
    d a_k = s_j x a_k - alpha_j - beta_j x v_k,   alpha_j = s_j x a_p - beta_j x v_p,
    d f_k = s_j x* f_k - I_k alpha_j - B_k beta_j,
with B_k m = v_k x* (I_k m) - I_k (v_k x m) + m x* l_k. B_k only sees the angular part of m:
    B_k = [[Bsym_k - [l_k,n], 0], [-2 [l_k,f], 0]],
    Bsym_k = [w] A - A [w] - (u h^T + h u^T) + 2 (u . h) 1      (v_k = [w; u], A, h of I_k),
so composites (sums over a subtree, no transform in the root frame) of I, l, Bsym and f give
    d tau_i / d q_j = -s_i . (Ic_i alpha_j + Bc_i beta_j)               for j supporting i,
    d tau_j / d q_i =  s_j . (s_i x* F_i - Ic_i alpha_i - Bc_i beta_i)  for j supporting i, j != i.
Velocities: d v_k / d qd_j = s_j, d a_k / d qd_j = s_j x v_k - 2 beta_j, hence
    d tau_i / d qd_j = s_i . (Bc_i s_j - 2 Ic_i beta_j)                 for j supporting i,
    d tau_j / d qd_i = s_j . (Bc_i s_i - 2 Ic_i beta_i)                 for j supporting i, j != i.
External forces are constant in their body's frame: they move rigidly and enter only through F.
"""
from ..jit import njit
from ..spatial import (cross_force, cross_motion, force_to_parent_add, inertia_times, motion_to_parent,
                       phi_to_parent_add)
from .inputs import all_finite
from .kinematics import body_poses


@njit(cache=True, forceinline=True)
def world_kinematics(parents, screw_axes, home_R, home_p, q, v, R, p, oR, op, oS, oV):
    """Body poses, joint screws s_i and twists v_i = v_parent + s_i qd_i in the root frame."""
    body_poses(parents, screw_axes, home_R, home_p, q, R, p, oR, op)
    for i in range(q.shape[0]):
        j = parents[i]
        motion_to_parent(oR[i], op[i], screw_axes[i], oS[i])
        for k in range(6):
            oV[i, k] = oS[i, k] * v[i] + (oV[j, k] if j >= 0 else 0.0)


@njit(cache=True, forceinline=True)
def world_forces(parents, phi, oR, op, oS, oV, v, a, base_accel, f_ext, oA, ophi_c, oL_c, oB_sym,
                 oF_c, tmp6):
    """Accelerations a_i (gravity included) and the composites of the subtree of each body, root
    frame: inertial parameters Ic, momentum, Bsym, and F_i (so that tau_i = s_i . F_i)."""
    nb = v.shape[0]
    VxS = tmp6[0]
    for i in range(nb):
        j = parents[i]
        # a_i = a_parent + s_i qdd_i + (v_i x s_i) qd_i
        a_parent = oA[j] if j >= 0 else base_accel
        cross_motion(oV[i], oS[i], VxS)
        for k in range(6):
            oA[i, k] = a_parent[k] + oS[i, k] * a[i] + VxS[k] * v[i]
        # body inertia in the root frame, momentum l_i, own force f_i = I a + v x* l - f_ext
        ophi_c[i, :] = 0.0
        phi_to_parent_add(oR[i], op[i], phi[i], ophi_c[i])
        inertia_times(ophi_c[i], oV[i], oL_c[i])
        inertia_times(ophi_c[i], oA[i], oF_c[i])
        cross_force(oV[i], oL_c[i], VxS)
        for k in range(6):
            oF_c[i, k] += VxS[k]
        fe = f_ext[i]
        if fe[0] != 0.0 or fe[1] != 0.0 or fe[2] != 0.0 or fe[3] != 0.0 or fe[4] != 0.0 or fe[5] != 0.0:
            VxS[:] = 0.0
            force_to_parent_add(oR[i], op[i], fe, VxS)
            for k in range(6):
                oF_c[i, k] -= VxS[k]
        # Bsym = [w] A - A [w] - (u h^T + h u^T) + 2 (u . h) 1, stored as xx, yy, zz, xy, xz, yz
        w0, w1, w2, u0, u1, u2 = oV[i, 0], oV[i, 1], oV[i, 2], oV[i, 3], oV[i, 4], oV[i, 5]
        h0, h1, h2 = ophi_c[i, 1], ophi_c[i, 2], ophi_c[i, 3]
        axx, ayy, azz = ophi_c[i, 4], ophi_c[i, 5], ophi_c[i, 6]
        axy, axz, ayz = ophi_c[i, 7], ophi_c[i, 8], ophi_c[i, 9]
        # WA[r, c] = (w x A[:, c])[r]
        wa00 = w1 * axz - w2 * axy
        wa11 = w2 * axy - w0 * ayz
        wa22 = w0 * ayz - w1 * axz
        wa01 = w1 * ayz - w2 * ayy
        wa10 = w2 * axx - w0 * axz
        wa02 = w1 * azz - w2 * ayz
        wa20 = w0 * axy - w1 * axx
        wa12 = w2 * axz - w0 * azz
        wa21 = w0 * ayy - w1 * axy
        uh = u0 * h0 + u1 * h1 + u2 * h2
        oB_sym[i, 0] = 2.0 * (wa00 + uh - u0 * h0)
        oB_sym[i, 1] = 2.0 * (wa11 + uh - u1 * h1)
        oB_sym[i, 2] = 2.0 * (wa22 + uh - u2 * h2)
        oB_sym[i, 3] = wa01 + wa10 - u0 * h1 - h0 * u1
        oB_sym[i, 4] = wa02 + wa20 - u0 * h2 - h0 * u2
        oB_sym[i, 5] = wa12 + wa21 - u1 * h2 - h1 * u2
    for i in range(nb - 1, -1, -1):
        # composites: root-frame quantities of a subtree simply add up
        j = parents[i]
        if j >= 0:
            for k in range(10):
                ophi_c[j, k] += ophi_c[i, k]
            for k in range(6):
                oL_c[j, k] += oL_c[i, k]
                oB_sym[j, k] += oB_sym[i, k]
                oF_c[j, k] += oF_c[i, k]


@njit(cache=True, inline="always")
def bsym_times(B, x0, x1, x2, out):
    """out[:3] = Bsym x for Bsym stored as xx, yy, zz, xy, xz, yz."""
    out[0] = B[0] * x0 + B[3] * x1 + B[4] * x2
    out[1] = B[3] * x0 + B[1] * x1 + B[5] * x2
    out[2] = B[4] * x0 + B[5] * x1 + B[2] * x2


@njit(cache=True, inline="always")
def composite_b_times(B, L, m, out):
    """out = Bc m = [Bsym m_w - L_n x m_w; -2 L_f x m_w] (composite Bsym B, composite momentum L)."""
    x0, x1, x2 = m[0], m[1], m[2]
    bsym_times(B, x0, x1, x2, out)
    out[0] -= L[1] * x2 - L[2] * x1
    out[1] -= L[2] * x0 - L[0] * x2
    out[2] -= L[0] * x1 - L[1] * x0
    out[3] = -2.0 * (L[4] * x2 - L[5] * x1)
    out[4] = -2.0 * (L[5] * x0 - L[3] * x2)
    out[5] = -2.0 * (L[3] * x1 - L[4] * x0)


@njit(cache=True, forceinline=True)
def derivative_matrices(parents, base_accel, oS, oV, oA, ophi_c, oL_c, oB_sym, oF_c, oAlpha, oBeta,
                        tmp6, dtau_dq, dtau_dv, M):
    """dtau_dq, dtau_dv and M from the root-frame kinematics and composites (module docstring)."""
    nb = oS.shape[0]
    u = tmp6[0]    # Ic_i s_i
    g = tmp6[1]    # s_i x* F_i - Ic_i alpha_i - Bc_i beta_i
    e = tmp6[2]    # Bc_i s_i - 2 Ic_i beta_i
    tmp = tmp6[3]
    dtau_dq[:, :] = 0.0
    dtau_dv[:, :] = 0.0
    M[:, :] = 0.0
    for i in range(nb):
        j = parents[i]
        s = oS[i]
        # beta_i = s_i x v_parent, alpha_i = s_i x a_parent - beta_i x v_parent
        if j >= 0:
            cross_motion(s, oV[j], oBeta[i])
            cross_motion(s, oA[j], oAlpha[i])
            cross_motion(oBeta[i], oV[j], tmp)
            for k in range(6):
                oAlpha[i, k] -= tmp[k]
        else:
            oBeta[i, :] = 0.0
            cross_motion(s, base_accel, oAlpha[i])
        B = oB_sym[i]
        L = oL_c[i]
        # row vectors of body i: u = Ic_i s_i and w = (Bc_i^T s_i)[:3] = Bsym s_w + L_n x s_w + 2 L_f x s_v
        inertia_times(ophi_c[i], s, u)
        bsym_times(B, s[0], s[1], s[2], tmp)
        w0 = tmp[0] + L[1] * s[2] - L[2] * s[1] + 2.0 * (L[4] * s[5] - L[5] * s[4])
        w1 = tmp[1] + L[2] * s[0] - L[0] * s[2] + 2.0 * (L[5] * s[3] - L[3] * s[5])
        w2 = tmp[2] + L[0] * s[1] - L[1] * s[0] + 2.0 * (L[3] * s[4] - L[4] * s[3])
        # column vectors of body i (rows of its supports)
        cross_force(s, oF_c[i], g)
        inertia_times(ophi_c[i], oAlpha[i], tmp)
        for k in range(6):
            g[k] -= tmp[k]
        composite_b_times(B, L, oBeta[i], tmp)
        for k in range(6):
            g[k] -= tmp[k]
        composite_b_times(B, L, s, e)
        inertia_times(ophi_c[i], oBeta[i], tmp)
        for k in range(6):
            e[k] -= 2.0 * tmp[k]
        # the pairs (i, k), k supporting i (k == i included); scalars stay in registers
        u0, u1, u2, u3, u4, u5 = u[0], u[1], u[2], u[3], u[4], u[5]
        g0, g1, g2, g3, g4, g5 = g[0], g[1], g[2], g[3], g[4], g[5]
        e0, e1, e2, e3, e4, e5 = e[0], e[1], e[2], e[3], e[4], e[5]
        k = i
        while k >= 0:
            sk = oS[k]
            al = oAlpha[k]
            be = oBeta[k]
            s0, s1, s2, s3, s4, s5 = sk[0], sk[1], sk[2], sk[3], sk[4], sk[5]
            b0, b1, b2, b3, b4, b5 = be[0], be[1], be[2], be[3], be[4], be[5]
            dtau_dq[i, k] = -(u0 * al[0] + u1 * al[1] + u2 * al[2] + u3 * al[3] + u4 * al[4]
                              + u5 * al[5] + w0 * b0 + w1 * b1 + w2 * b2)
            dtau_dv[i, k] = (w0 * s0 + w1 * s1 + w2 * s2
                             - 2.0 * (u0 * b0 + u1 * b1 + u2 * b2 + u3 * b3 + u4 * b4 + u5 * b5))
            M_ik = u0 * s0 + u1 * s1 + u2 * s2 + u3 * s3 + u4 * s4 + u5 * s5
            M[i, k] = M_ik
            if k != i:
                dtau_dq[k, i] = g0 * s0 + g1 * s1 + g2 * s2 + g3 * s3 + g4 * s4 + g5 * s5
                dtau_dv[k, i] = e0 * s0 + e1 * s1 + e2 * s2 + e3 * s3 + e4 * s4 + e5 * s5
                M[k, i] = M_ik
            k = parents[k]


@njit(cache=True, forceinline=True)
def rnea_derivatives(parents, screw_axes, home_R, home_p, phi, q, v, a, base_accel, f_ext, R, p, oR,
                     op, ophi_c, vectors, tmp6, out):
    """out[0], out[1], out[2] = d tau / d q, d tau / d v and M(q) = d tau / d a of
    tau = rnea(q, v, a, f_ext). vectors: (>= 8, nb, 6) root-frame workspace, in the order
    s, v, a, l_c, Bsym_c, F, alpha, beta. Returns False, computing nothing, when q, v or a is not
    finite, and False when a result is not (overflow)."""
    if not (all_finite(q) and all_finite(v) and all_finite(a)):
        return False
    oS, oV, oA, oL_c = vectors[0], vectors[1], vectors[2], vectors[3]
    oB_sym, oF_c, oAlpha, oBeta = vectors[4], vectors[5], vectors[6], vectors[7]
    world_kinematics(parents, screw_axes, home_R, home_p, q, v, R, p, oR, op, oS, oV)
    world_forces(parents, phi, oR, op, oS, oV, v, a, base_accel, f_ext, oA, ophi_c, oL_c, oB_sym,
                 oF_c, tmp6)
    derivative_matrices(parents, base_accel, oS, oV, oA, ophi_c, oL_c, oB_sym, oF_c, oAlpha, oBeta,
                        tmp6, out[0], out[1], out[2])
    return all_finite(out[0]) and all_finite(out[1]) and all_finite(out[2])
