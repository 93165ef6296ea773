"""Derivatives of inverse dynamics with respect to the joint screw axes (kinematic parameters),
seed "Differential Dynamics and Mesh-Based Inertia", sec. 2, Algorithm 1, in the root frame.

Each joint twist is perturbed as in eq. 6, S_i(eta_i) = Ad_{exp(eta_i)} S_i, eta_i = [w; v] in
joint i's frame at q_i = 0, so that T_{parent,i}(q) = M_i exp(eta_i) exp([S_i] q_i) exp(-eta_i):
the body frames are unchanged at q_i = 0, only the screw moves (eq. 8: dS_i = -ad_{S_i} d eta_i).
The result is d tau / d eta at eta = 0, (nbodies, 6 nbodies), joint-major, angular first.

Algorithm 1 carries P_k = dV_k/d eta, Q_k = dVdot_k/d eta forward and R_k = dF_k/d eta backward,
in body frames, with the transport Ad_{T^-1} of the parent's rows plus the non-recursive terms
Pbar, Qbar, Rbar of the joint being differentiated. In the root frame the transport is the
identity, and perturbing eta_j moves the subtree of j rigidly, so P, Q and R of every body of
that subtree share one closed form (the same bookkeeping as rnea_derivatives.py):

With, in root-frame coordinates (s_j the screw of joint j, v, A the twists and accelerations with
gravity, parent p = p(j), Y_j = oT_p M_j the joint frame at q_j = 0):
    e      = Ad_{Y_j} eta_j              the perturbation in the root frame; ds_j = e x s_j,
    sigma  = Ad_{oT_j} eta_j             the same eta in the joint frame at q_j,
    zeta   = e - sigma                   the rigid displacement of the subtree of j
                                         (Ad_{oT_j} of (Ad_{exp(S q)}^-1 - 1) eta, Algorithm 1 l. 7),
    d      = e x s_j,
    beta_j = zeta x v_j - d qd_j                                        (Pbar^eta, line 7)
    alpha_j = zeta x A_j - beta_j x v_j - d qdd_j - (v_p x d) qd_j      (Qbar^eta, line 8)
every body k of the subtree of j gets
    P_k = zeta x v_k - beta_j,   Q_k = zeta x A_k - beta_j x v_k - alpha_j,
    dG_k = -ad_zeta^T G_k - G_k ad_zeta (eq. 30),  d f_ext_k = zeta x* f_ext_k,
so its force f_k = G_k A_k + v_k x* G_k v_k - f_ext_k changes by zeta x* f_k - G_k alpha_j - B_k beta_j
(B_k m = v_k x* (G_k m) - G_k (v_k x m) + m x* (G_k v_k), only the angular part of m counts).
Summed over a subtree, with composites Gc_i, Bc_i and the transmitted force F_i:
    R_i = -ad*_{F_i} zeta - Gc_i alpha_j - Bc_i beta_j       (i in the subtree of j; ad*_F of eq. 10)
and tau_i = s_i . F_i (eq. 5) gives, the rigid part cancelling against ds_i = zeta x s_i below j:
    d tau_i / d eta_j = -(Gc_i s_i) . alpha_j - (Bc_i^T s_i) . beta_j         i strictly below j,
    d tau_j / d eta_j = (sigma x s_j) . F_j - (Gc_j s_j) . alpha_j - (Bc_j^T s_j) . beta_j,
    d tau_k / d eta_j = s_k . R_j                                              k strictly above j,
and zero for joints in other branches. One pass down the tree and a walk up each body's supports:
O(n d) dot products of 6-vectors for n bodies of depth d.
"""
from ..jit import njit
from ..spatial import compose_into, cross_force, cross_motion, dot6, inertia_times
from .inputs import all_finite
from .rnea_derivatives import composite_b_times, world_forces, world_kinematics


@njit(cache=True, inline="always")
def adjoint_column(R, p, c, out):
    """out = Ad_T e_c, column c of the adjoint of T = (R, p): [R_c; p x R_c] for c < 3, [0; R_(c-3)]
    otherwise."""
    if c < 3:
        w0, w1, w2 = R[0, c], R[1, c], R[2, c]
        out[0], out[1], out[2] = w0, w1, w2
        out[3] = p[1] * w2 - p[2] * w1
        out[4] = p[2] * w0 - p[0] * w2
        out[5] = p[0] * w1 - p[1] * w0
    else:
        out[0] = out[1] = out[2] = 0.0
        out[3], out[4], out[5] = R[0, c - 3], R[1, c - 3], R[2, c - 3]


@njit(cache=True)
def twist_derivative_matrix(parents, home_R, home_p, v, a, oR, op, oS, oV, oA, ophi_c, oL_c, oB_sym,
                            oF_c, eta_alpha, eta_beta, eta_R, eta_p, tmp6, dtau_deta):
    """dtau_deta from the root-frame kinematics and composites (module docstring)."""
    nb = oS.shape[0]
    e = tmp6[0]        # the perturbation in the root frame (a column of Ad_{Y_j})
    sigma = tmp6[1]    # the same column in the joint frame at q_j (Ad_{oT_j})
    zeta = tmp6[2]     # rigid displacement of the subtree
    d = tmp6[3]        # ds_j = e x s_j
    u = tmp6[4]        # Gc_i s_i
    tmp = tmp6[5]
    g = tmp6[6:12]     # R_j of the 6 columns of joint j: rows of its supports
    dtau_deta[:, :] = 0.0
    for i in range(nb):
        j = parents[i]
        s = oS[i]
        Vi = oV[i]
        Ai = oA[i]
        F = oF_c[i]
        B = oB_sym[i]
        L = oL_c[i]
        # row vectors of body i: u = Gc_i s_i and w = (Bc_i^T s_i)[:3] = Bsym s_w + L_n x s_w + 2 L_f x s_v
        inertia_times(ophi_c[i], s, u)
        w0 = B[0] * s[0] + B[3] * s[1] + B[4] * s[2] + L[1] * s[2] - L[2] * s[1] + 2.0 * (L[4] * s[5] - L[5] * s[4])
        w1 = B[3] * s[0] + B[1] * s[1] + B[5] * s[2] + L[2] * s[0] - L[0] * s[2] + 2.0 * (L[5] * s[3] - L[3] * s[5])
        w2 = B[4] * s[0] + B[5] * s[1] + B[2] * s[2] + L[0] * s[1] - L[1] * s[0] + 2.0 * (L[3] * s[4] - L[4] * s[3])
        # Y_i = oT_parent M_i: joint i's frame at q_i = 0, where eta_i is expressed
        if j >= 0:
            compose_into(oR[j], op[j], home_R[i], home_p[i], eta_R, eta_p)
        else:
            eta_R[:, :] = home_R[i]
            eta_p[:] = home_p[i]
        for c in range(6):
            adjoint_column(eta_R, eta_p, c, e)
            adjoint_column(oR[i], op[i], c, sigma)
            for k in range(6):
                zeta[k] = e[k] - sigma[k]
            cross_motion(e, s, d)
            # beta = zeta x v_i - d qd_i  (Pbar^eta)
            beta = eta_beta[i, c]
            cross_motion(zeta, Vi, beta)
            for k in range(6):
                beta[k] -= d[k] * v[i]
            # alpha = zeta x A_i - beta x v_i - d qdd_i - (v_parent x d) qd_i  (Qbar^eta)
            alpha = eta_alpha[i, c]
            cross_motion(zeta, Ai, alpha)
            cross_motion(beta, Vi, tmp)
            for k in range(6):
                alpha[k] -= tmp[k] + d[k] * a[i]
            if j >= 0:
                cross_motion(oV[j], d, tmp)
                for k in range(6):
                    alpha[k] -= tmp[k] * v[i]
            # R_i = -ad*_{F_i} zeta - Gc_i alpha - Bc_i beta  (eq. 10; lines 21-30), where
            # -ad*_F zeta = -ad_zeta^T F = zeta x* F
            gc = g[c]
            cross_force(zeta, F, gc)
            inertia_times(ophi_c[i], alpha, tmp)
            for k in range(6):
                gc[k] -= tmp[k]
            composite_b_times(B, L, beta, tmp)
            for k in range(6):
                gc[k] -= tmp[k]
            # own entry: (sigma x s_i) . F_i - u . alpha - w . beta
            cross_motion(sigma, s, tmp)
            dtau_deta[i, 6 * i + c] = (dot6(tmp, F) - dot6(u, alpha)
                                       - (w0 * beta[0] + w1 * beta[1] + w2 * beta[2]))
        k = j
        while k >= 0:
            # k supports i: tau_i sees eta_k through alpha_k, beta_k; tau_k sees eta_i through R_i
            sk = oS[k]
            for c in range(6):
                bk = eta_beta[k, c]
                dtau_deta[i, 6 * k + c] = -(dot6(u, eta_alpha[k, c]) + w0 * bk[0] + w1 * bk[1] + w2 * bk[2])
                dtau_deta[k, 6 * i + c] = dot6(sk, g[c])
            k = parents[k]


@njit(cache=True)
def twist_derivatives(parents, screw_axes, home_R, home_p, phi, q, v, a, base_accel, f_ext, R, p, oR,
                      op, ophi_c, vectors, eta_columns, eta_pose, tmp6, out):
    """out = d tau / d eta (nbodies, 6 nbodies) of tau = rnea(q, v, a, f_ext) at eta = 0.
    vectors: (>= 6, nb, 6) root-frame workspace in the order of rnea_derivatives (s, v, a, l_c,
    Bsym_c, F); eta_columns (2, nb, 6, 6): alpha and beta of every column; eta_pose (4, 3);
    tmp6 (12, 6). Returns False, computing nothing, when q, v or a is not finite, and False when
    out is not (overflow)."""
    if not (all_finite(q) and all_finite(v) and all_finite(a)):
        return False
    oS, oV, oA, oL_c, oB_sym, oF_c = vectors[0], vectors[1], vectors[2], vectors[3], vectors[4], vectors[5]
    world_kinematics(parents, screw_axes, home_R, home_p, q, v, R, p, oR, op, oS, oV)
    world_forces(parents, phi, oR, op, oS, oV, v, a, base_accel, f_ext, oA, ophi_c, oL_c, oB_sym,
                 oF_c, tmp6)
    twist_derivative_matrix(parents, home_R, home_p, v, a, oR, op, oS, oV, oA, ophi_c, oL_c, oB_sym,
                            oF_c, eta_columns[0], eta_columns[1], eta_pose[:3], eta_pose[3], tmp6, out)
    return all_finite(out)
