"""Second-order partial derivatives of inverse dynamics (IDSVA-SO) and of forward dynamics.

Seed "Details of Partial Derivatives of Rigid-Body Inverse Dynamics" (Singh, Russell, Wensing),
secs. IV-IX, for 1-DoF joints (their "efficient implementation" of sec. VIII). Every quantity is in
the root frame, at the root origin, angular-first:
    S_i            joint screw,                         V_i, A_i  body twist and acceleration
    psid_i  = V_parent x S_i  (eq. 13),   psidd_i = A_parent x S_i + V_parent x psid_i
    phi_i   = psid_i + V_i x S_i   (psid_i + Sdot_i),   I_i, B_i, F_i  composite inertia, composite
    body-Coriolis matrix B = 1/2 (V x* I + (I V) xbar - I V x) (eq. 14) and composite force of the
    subtree of i (F includes -f_ext).
A body-fixed quantity X moves with joint j as dX/dq_j = S_j x X for every support j; only the
velocity-dependent parts add terms, and those are the psid/psidd/phi above. The first-order
derivatives (eqs. 17-20) are then, for j a support of i (j <= i) and for d a descendant of i:
    dtau_i/dq_j = S_i . (I_i psidd_j + 2 B_i psid_j)          dtau_i/dq_d = S_i . dFq_d
    dtau_i/dv_j = S_i . (2 B_i S_j + I_i phi_j)               dtau_i/dv_d = S_i . dFv_d
with dFq_d = S_d x* F_d + I_d psidd_d + 2 B_d psid_d and dFv_d = 2 B_d S_d + I_d phi_d.
Differentiating once more, every non-zero second derivative couples three joints s <= m <= d on one
path from the root (sec. IV-VI cases A, B, C: the torque index is the deepest, the middle or the
shallowest of the three). For each pair m <= d a few 6-vectors depend on (d, m) only, and each entry
is their dot product with psidd_s, psid_s, phi_s or S_s of the shallowest joint s (sec. VIII), so
the work is O(n d^2) for depth d; the Hessian symmetries fill the mirrored entries.
"""
from ..jit import njit
from ..spatial import (body_coriolis, cross_force, cross_motion, dot6, force_to_parent_subtract,
                       inertia_times, motion_to_parent, phi_to_parent_add, spatial_inertia_into)
from .inputs import all_finite
from .kinematics import body_poses

VECTOR_ROWS = 11  # oS, oV, oA, psid, psidd, phi, F, u = I S, w = B^T S, dF/dq_i, dF/dv_i
# rows of the per-pair scratch `pair` (6-vectors that depend on the deepest and middle joints)
_AL1, _AL2, _BE1, _BE2, _GA, _NUA, _NUC, _ETA, _B3 = 0, 1, 2, 3, 4, 5, 6, 7, 8
_T0, _T1 = 9, 10  # temporaries
PAIR_ROWS = 11


@njit(cache=True, inline="always")
def _matvec(A, x, out):
    """out = A x (6x6)."""
    for r in range(6):
        out[r] = (A[r, 0] * x[0] + A[r, 1] * x[1] + A[r, 2] * x[2]
                  + A[r, 3] * x[3] + A[r, 4] * x[4] + A[r, 5] * x[5])


@njit(cache=True, inline="always")
def _matvec_add(A, x, scale, out):
    """out += scale A x (6x6)."""
    for r in range(6):
        out[r] += scale * (A[r, 0] * x[0] + A[r, 1] * x[1] + A[r, 2] * x[2]
                           + A[r, 3] * x[3] + A[r, 4] * x[4] + A[r, 5] * x[5])


@njit(cache=True, inline="always")
def _matTvec_add(A, x, scale, out):
    """out += scale A^T x (6x6)."""
    for c in range(6):
        out[c] += scale * (A[0, c] * x[0] + A[1, c] * x[1] + A[2, c] * x[2]
                           + A[3, c] * x[3] + A[4, c] * x[4] + A[5, c] * x[5])


@njit(cache=True)
def _rotation_derivative(S, A, tmp, tmp2, out):
    """out = S x* A - A (S x): the derivative of a force-from-motion matrix A (an inertia, a
    Coriolis matrix) carried by a rotation about the screw S. Row r of -A (S x) is S x* A[r, :]."""
    for c in range(6):
        for k in range(6):
            tmp[k] = A[k, c]
        cross_force(S, tmp, tmp2)
        for k in range(6):
            out[k, c] = tmp2[k]
    for r in range(6):
        for k in range(6):
            tmp[k] = A[r, k]
        cross_force(S, tmp, tmp2)
        for k in range(6):
            out[r, k] += tmp2[k]


@njit(cache=True)
def rnea_second_derivatives(parents, screw_axes, home_R, home_p, phi, q, v, a, base_accel, f_ext, R,
                            p, oR, op, phi_world, vectors, matrices, mats, pair, tau, first, second):
    """Inverse dynamics tau, its first-order derivatives first = (dtau_dq, dtau_dv, M) and the
    second-order ones second = (d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq): d2tau_dq2[i, j, k] =
    d2 tau_i / dq_j dq_k, d2tau_dv2 likewise in v, d2tau_dqdv[i, j, k] = d2 tau_i / dq_j dv_k,
    dM_dq[i, j, k] = d M_ij / dq_k. f_ext: body-frame forces (nb, 6).

    Workspace: vectors (VECTOR_ROWS, nb, 6) and matrices (2, nb, 6, 6) per body (root frame),
    mats (3, 6, 6) and pair (PAIR_ROWS, 6) for one joint or pair of joints at a time. Only the entries
    of `second` on the root-to-leaf paths are written, the same ones at every call: pass it zeroed
    once (as Data's is), which spares a pass over its 4 nb^3 entries per call.
    Returns False, computing nothing, when q, v or a is not finite, and False when a result is not
    (overflow)."""
    if not (all_finite(q) and all_finite(v) and all_finite(a)):
        return False
    nb = q.shape[0]
    body_poses(parents, screw_axes, home_R, home_p, q, R, p, oR, op)
    oS, oV, oA, psid, psidd, phis, oF, u, w, dFq, dFv = (
        vectors[0], vectors[1], vectors[2], vectors[3], vectors[4], vectors[5], vectors[6],
        vectors[7], vectors[8], vectors[9], vectors[10])
    oI = matrices[0]  # composite inertia of the subtree of i (own inertia in the forward pass)
    oB = matrices[1]  # composite body-Coriolis matrix
    d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq = second[0], second[1], second[2], second[3]
    dtau_dq, dtau_dv, M = first[0], first[1], first[2]
    IV = pair[_T0]
    t = pair[_T1]
    # forward pass: kinematics and each body's own inertia, Coriolis matrix and force
    for i in range(nb):
        j = parents[i]
        motion_to_parent(oR[i], op[i], screw_axes[i], oS[i])
        S = oS[i]
        if j < 0:
            for k in range(6):
                psid[i, k] = 0.0
                oV[i, k] = S[k] * v[i]
            cross_motion(base_accel, S, psidd[i])
            for k in range(6):
                oA[i, k] = base_accel[k]
        else:
            cross_motion(oV[j], S, psid[i])
            cross_motion(oA[j], S, psidd[i])
            cross_motion(oV[j], psid[i], t)
            for k in range(6):
                psidd[i, k] += t[k]
                oV[i, k] = oV[j, k] + S[k] * v[i]
                oA[i, k] = oA[j, k]
        cross_motion(oV[i], S, t)  # Sdot_i = V_i x S_i
        for k in range(6):
            phis[i, k] = psid[i, k] + t[k]
            oA[i, k] += S[k] * a[i] + t[k] * v[i]
        phi_world[i, :] = 0.0
        phi_to_parent_add(oR[i], op[i], phi[i], phi_world[i])
        spatial_inertia_into(phi_world[i], oI[i])
        body_coriolis(oV[i], oI[i], IV, oB[i])
        # F_i = I_i A_i + V_i x* I_i V_i - f_ext_i (f_ext from the body frame to the root frame)
        inertia_times(phi_world[i], oA[i], oF[i])
        cross_force(oV[i], IV, t)
        for k in range(6):
            oF[i, k] += t[k]
        force_to_parent_subtract(oR[i], op[i], f_ext[i], oF[i], t)
    # backward pass: composite inertia, Coriolis matrix and force of each subtree
    for i in range(nb - 1, -1, -1):
        j = parents[i]
        if j >= 0:
            for r in range(6):
                oF[j, r] += oF[i, r]
                for c in range(6):
                    oI[j, r, c] += oI[i, r, c]
                    oB[j, r, c] += oB[i, r, c]
    # per-joint vectors: u = I S, w = B^T S, dFq = dF_d/dq_d, dFv = dF_d/dv_d
    for d in range(nb):
        S = oS[d]
        tau[d] = dot6(S, oF[d])
        _matvec(oI[d], S, u[d])
        w[d, :] = 0.0
        _matTvec_add(oB[d], S, 1.0, w[d])
        cross_force(S, oF[d], dFq[d])
        _matvec_add(oI[d], psidd[d], 1.0, dFq[d])
        _matvec_add(oB[d], psid[d], 2.0, dFq[d])
        _matvec(oI[d], phis[d], dFv[d])
        _matvec_add(oB[d], S, 2.0, dFv[d])
    first[:] = 0.0
    J = mats[0]
    H = mats[1]
    Q = mats[2]
    al1 = pair[_AL1]
    al2 = pair[_AL2]
    be1 = pair[_BE1]
    be2 = pair[_BE2]
    ga = pair[_GA]
    nuA = pair[_NUA]
    nuC = pair[_NUC]
    eta = pair[_ETA]
    b3 = pair[_B3]
    t0 = pair[_T0]
    t1 = pair[_T1]
    for d in range(nb - 1, -1, -1):
        Sd = oS[d]
        # J = dI_d/dq_d = S_d x* I_d - I_d (S_d x) ; H = 2 dB_d/dq_d = 2 (S_d x* B_d - B_d (S_d x)
        # + B(I_d, psid_d)) ; Q = B(I_d, S_d) = 1/2 dB_d/dv_d
        _rotation_derivative(Sd, oI[d], t0, t1, J)
        body_coriolis(psid[d], oI[d], t0, Q)
        _rotation_derivative(Sd, oB[d], t0, t1, H)
        for r in range(6):
            for c in range(6):
                H[r, c] = 2.0 * (H[r, c] + Q[r, c])
        body_coriolis(Sd, oI[d], t0, Q)
        m = d
        while m >= 0:
            Sm = oS[m]
            # first order (eqs. 17-20) and the mass matrix
            dtau_dq[d, m] = dot6(u[d], psidd[m]) + 2.0 * dot6(w[d], psid[m])
            dtau_dv[d, m] = 2.0 * dot6(w[d], Sm) + dot6(u[d], phis[m])
            if m != d:
                dtau_dq[m, d] = dot6(Sm, dFq[d])
                dtau_dv[m, d] = dot6(Sm, dFv[d])
            M[d, m] = dot6(Sm, u[d])
            M[m, d] = M[d, m]
            # vectors of the pair (d, m), each dotted below with psidd_s, psid_s, phi_s or S_s:
            # al1 = S_m x* u_d ; al2 = psid_m x* u_d + 2 S_m x* w_d - J psid_m
            cross_force(Sm, u[d], al1)
            cross_force(psid[m], u[d], al2)
            cross_force(Sm, w[d], t0)
            _matvec(J, psid[m], t1)
            for k in range(6):
                al2[k] += 2.0 * t0[k] - t1[k]
            # be1 = J S_m ; be2 = H^T S_m
            _matvec(J, Sm, be1)
            be2[:] = 0.0
            _matTvec_add(H, Sm, 1.0, be2)
            # nuA = al1 - be1 (vv case A, -nuA for case B), nuC = al1 + be1 (vv case C)
            for k in range(6):
                nuA[k] = al1[k] - be1[k]
                nuC[k] = al1[k] + be1[k]
            # ga = S_m x* dFq_d + J psidd_m + H psid_m
            cross_force(Sm, dFq[d], ga)
            _matvec_add(J, psidd[m], 1.0, ga)
            _matvec_add(H, psid[m], 1.0, ga)
            # eta = J phi_m + H S_m
            _matvec(J, phis[m], eta)
            _matvec_add(H, Sm, 1.0, eta)
            # b3 = S_m x* dFv_d + 2 Q psid_m
            cross_force(Sm, dFv[d], b3)
            _matvec_add(Q, psid[m], 2.0, b3)
            s = m
            while s >= 0:
                Ss = oS[s]
                # torque of the deepest joint d (case A), derivatives in q_m and q_s
                x = dot6(psidd[s], al1) + dot6(psid[s], al2)
                d2tau_dq2[d, m, s] = x
                d2tau_dq2[d, s, m] = x
                x = dot6(Ss, nuA)
                d2tau_dv2[d, m, s] = x
                d2tau_dv2[d, s, m] = x
                d2tau_dqdv[d, s, m] = dot6(psid[s], nuA)
                # inertia matrix: dM_sm / dq_d and dM_sd / dq_m
                x = dot6(Ss, be1)
                dM_dq[s, m, d] = x
                dM_dq[m, s, d] = x
                x = dot6(Ss, al1)
                dM_dq[s, d, m] = x
                dM_dq[d, s, m] = x
                if m != d:
                    # torque of the middle joint m (case B), derivatives in q_s and q_d
                    x = dot6(psidd[s], be1) + dot6(psid[s], be2)
                    d2tau_dq2[m, s, d] = x
                    d2tau_dq2[m, d, s] = x
                    x = -dot6(Ss, nuA)
                    d2tau_dv2[m, s, d] = x
                    d2tau_dv2[m, d, s] = x
                    d2tau_dqdv[m, s, d] = -dot6(psid[s], nuA)
                    d2tau_dqdv[m, d, s] = dot6(phis[s], be1) + dot6(Ss, be2)
                if s != m:
                    # torque of the shallowest joint s (case C), derivatives in q_m and q_d
                    x = dot6(Ss, ga)
                    d2tau_dq2[s, m, d] = x
                    d2tau_dq2[s, d, m] = x
                    x = dot6(Ss, nuC)
                    d2tau_dv2[s, m, d] = x
                    d2tau_dv2[s, d, m] = x
                    d2tau_dqdv[d, m, s] = dot6(phis[s], al1) + dot6(Ss, al2)
                    d2tau_dqdv[s, d, m] = dot6(Ss, eta)
                    if m != d:
                        d2tau_dqdv[s, m, d] = dot6(Ss, b3)
                s = parents[s]
            m = parents[m]
    return all_finite(tau) and all_finite(first) and all_finite(second)
