"""M(q)^-1 by the articulated-body algorithm in O(n^2) (Carpentier's computeMinverse), and the
first-order derivatives of forward dynamics built on it.

Minv: ABA (seed "Mathematics for Classical Dynamics", articulated-body inertias) run for all unit
torques at once with v = 0 and no gravity, in the root frame (no transforms between bodies):
    backward: U_i = IA_i s_i, D_i = s_i . U_i, row i of Minv on the subtree of i from the bias
              forces F_i (6 x nv, one column per unit torque), F_parent += F_i + U_i Minv[i, :],
              IA_parent += IA_i - U_i U_i^T / D_i;
    forward:  Minv[i, k] -= U_i . A_parent[:, k] / D_i, then A_i = A_parent + s_i Minv[i, :],
              the body accelerations per unit torque (stored over F_i, which is no longer needed).
Only the upper triangle (k >= i) is computed; the lower is its mirror.

Forward-dynamics derivatives: with a = FD(q, v, tau) and ID(q, v, FD(q, v, tau)) = tau,
    d a / d q = -Minv d ID / d q,   d a / d v = -Minv d ID / d v   (at that a).

Joint terms (kernels/joint_terms.py): the armature adds to D_i (M + diag(I_a) is inverted), the
friction torque to the bias of forward dynamics and its derivative to d ID / d v.
"""
from ..jit import njit
from ..spatial import dot6, inertia_times, motion_to_parent, phi_to_parent_add, spatial_inertia_into
from .crba import subtree_sums
from .inputs import all_finite
from .joint_terms import ARMATURE, add_joint_derivatives, friction, has_terms
from .kinematics import body_poses
from .rnea_derivatives import derivative_matrices, world_forces, world_kinematics

OK = -1          # kernel status: success
NON_FINITE = -2  # kernel status: an input is not finite; any status i >= 0: D_i = 0 (M singular)


@njit(cache=True, forceinline=True)
def articulated_inverse(parents, joint_terms, oS, IA, U, Dinv, Fm, subtree_end, Minv):
    """Minv = (M + diag(I_a))^-1 from the root-frame joint screws oS, body inertias IA (turned into
    articulated inertias in place) and the armatures in joint_terms; Fm[i, k] is body i's bias force,
    then acceleration, for a unit torque at joint k. Returns OK, or the index i of a joint with D_i = 0
    (M(q) singular)."""
    nb = oS.shape[0]
    # subtree of i = bodies i..subtree_end[i] (depth-first order); its bias forces start at 0
    for i in range(nb):
        subtree_end[i] = i
    for i in range(nb - 1, -1, -1):
        j = parents[i]
        if j >= 0 and subtree_end[i] > subtree_end[j]:
            subtree_end[j] = subtree_end[i]
    for i in range(nb):
        for k in range(i, subtree_end[i] + 1):
            Fm[i, k, :] = 0.0
    for i in range(nb - 1, -1, -1):
        s = oS[i]
        Ui = U[i]
        for r in range(6):
            Ui[r] = (IA[i, r, 0] * s[0] + IA[i, r, 1] * s[1] + IA[i, r, 2] * s[2]
                     + IA[i, r, 3] * s[3] + IA[i, r, 4] * s[4] + IA[i, r, 5] * s[5])
        D = dot6(s, Ui) + joint_terms[i, ARMATURE]
        if D == 0.0:
            return i
        Dinv[i] = 1.0 / D
        last = subtree_end[i]
        # row i: Minv[i, i] = 1/D_i, Minv[i, k] = -s_i . F_i[k] / D_i on the subtree, 0 after it
        Minv[i, i] = Dinv[i]
        for k in range(i + 1, last + 1):
            Minv[i, k] = -Dinv[i] * dot6(s, Fm[i, k])
        for k in range(last + 1, nb):
            Minv[i, k] = 0.0
        j = parents[i]
        if j >= 0:
            # bias forces and articulated inertia handed to the parent
            for k in range(i, last + 1):
                m = Minv[i, k]
                Fi = Fm[i, k]
                Fj = Fm[j, k]
                for r in range(6):
                    Fj[r] += Fi[r] + Ui[r] * m
            for r in range(6):
                c = Ui[r] * Dinv[i]
                for k in range(6):
                    IA[j, r, k] += IA[i, r, k] - c * Ui[k]
    for i in range(nb):
        j = parents[i]
        s = oS[i]
        Ui = U[i]
        for k in range(i, nb):
            # Minv[i, k] -= U_i . A_parent[k] / D_i, then A_i[k] = A_parent[k] + s_i Minv[i, k]
            Ai = Fm[i, k]
            if j >= 0:
                Aj = Fm[j, k]
                m = Minv[i, k] - Dinv[i] * dot6(Ui, Aj)
                Minv[i, k] = m
                for r in range(6):
                    Ai[r] = Aj[r] + s[r] * m
            else:
                m = Minv[i, k]
                for r in range(6):
                    Ai[r] = s[r] * m
    for i in range(nb):
        for k in range(i + 1, nb):
            Minv[k, i] = Minv[i, k]
    return OK


@njit(cache=True, forceinline=True)
def body_inertias(phi, oR, op, ophi, IA):
    """IA_i = the spatial inertia of body i in the root frame (ophi: its parameters there)."""
    for i in range(phi.shape[0]):
        ophi[i, :] = 0.0
        phi_to_parent_add(oR[i], op[i], phi[i], ophi[i])
        spatial_inertia_into(ophi[i], IA[i])


@njit(cache=True, forceinline=True)
def minverse(parents, screw_axes, home_R, home_p, phi, joint_terms, q, R, p, oR, op, ophi, vectors, IA, Fm,
             subtree_end, Dinv, Minv):
    """(M(q) + diag(I_a))^-1 (full symmetric). vectors: the stack of rnea_derivatives (rows 0: s, 8: U).
    Returns OK, NON_FINITE when q (computing nothing) or Minv is not finite, or the index of a
    joint where M(q) is singular."""
    if not all_finite(q):
        return NON_FINITE
    oS = vectors[0]
    body_poses(parents, screw_axes, home_R, home_p, q, R, p, oR, op)
    for i in range(q.shape[0]):
        motion_to_parent(oR[i], op[i], screw_axes[i], oS[i])
    body_inertias(phi, oR, op, ophi, IA)
    status = articulated_inverse(parents, joint_terms, oS, IA, vectors[8], Dinv, Fm, subtree_end, Minv)
    if status == OK and not all_finite(Minv):
        return NON_FINITE
    return status


@njit(cache=True, forceinline=True)
def add_joint_accelerations(parents, oS, ophi_c, ddq, oA, oF_c, dA, H):
    """Turn world_forces' a_i and F_i at zero joint accelerations into those at ddq (root frame):
    a_i += dA_i with dA_i = dA_parent + s_i ddq_i, and, as F_i sums I_k a_k over the subtree of i,
    F_i += Ic_i dA_parent + H_i with H_i = sum of Ic_j s_j ddq_j over the subtree (dA, H: scratch)."""
    nb = oS.shape[0]
    for i in range(nb):
        inertia_times(ophi_c[i], oS[i], H[i])
        for r in range(6):
            H[i, r] *= ddq[i]
    subtree_sums(parents, H)
    for i in range(nb):
        j = parents[i]
        if j >= 0:
            # F_i += Ic_i dA_parent, using dA_i as scratch before it is set
            inertia_times(ophi_c[i], dA[j], dA[i])
            for r in range(6):
                oF_c[i, r] += dA[i, r]
                dA[i, r] = dA[j, r]
        else:
            dA[i, :] = 0.0
        for r in range(6):
            oF_c[i, r] += H[i, r]
            dA[i, r] += oS[i, r] * ddq[i]
            oA[i, r] += dA[i, r]


@njit(cache=True, forceinline=True)
def times_minus_minv(parents, subtree_end, Minv, dtau, out):
    """out = -Minv dtau for dtau with the sparsity of inverse-dynamics derivatives (dtau[k, c] = 0
    unless k supports c or c supports k). Row c of out^T is -sum_k dtau[k, c] Minv[k, :] (Minv is
    symmetric), over k in the subtree of c and the supports of c; out is then transposed in place."""
    nb = Minv.shape[0]
    for c in range(nb):
        row = out[c]
        row[:] = 0.0
        for k in range(c, subtree_end[c] + 1):
            d = dtau[k, c]
            Mk = Minv[k]
            for i in range(nb):
                row[i] -= d * Mk[i]
        k = parents[c]
        while k >= 0:
            d = dtau[k, c]
            Mk = Minv[k]
            for i in range(nb):
                row[i] -= d * Mk[i]
            k = parents[k]
    for i in range(nb):
        for c in range(i + 1, nb):
            out[i, c], out[c, i] = out[c, i], out[i, c]


@njit(cache=True, forceinline=True)
def aba_derivatives(parents, screw_axes, home_R, home_p, phi, joint_terms, q, v, tau, base_accel, f_ext, R,
                    p, oR, op, ophi_c, vectors, tmp6, IA, Fm, subtree_end, joint_work, ddq, out):
    """ddq = FD(q, v, tau, f_ext); out[3], out[4], out[5] = Minv = d ddq / d tau, d ddq / d q,
    d ddq / d v, and out[0..2] the inverse-dynamics derivatives at ddq (as rnea_derivatives).
    joint_work: rows 1 / D, zeros. Returns OK, NON_FINITE when q, v or tau (computing nothing) or a
    result is not finite, or the index of a joint where M(q) is singular."""
    if not (all_finite(q) and all_finite(v) and all_finite(tau)):
        return NON_FINITE
    nb = q.shape[0]
    oS, oV, oA, oL_c = vectors[0], vectors[1], vectors[2], vectors[3]
    oB_sym, oF_c, oAlpha, oBeta = vectors[4], vectors[5], vectors[6], vectors[7]
    dtau_dq, dtau_dv, Minv = out[0], out[1], out[3]
    world_kinematics(parents, screw_axes, home_R, home_p, q, v, R, p, oR, op, oS, oV)
    body_inertias(phi, oR, op, ophi_c, IA)
    status = articulated_inverse(parents, joint_terms, oS, IA, vectors[8], joint_work[0], Fm, subtree_end,
                                 Minv)
    if status != OK:
        return status
    # ddq = Minv (tau - bias), bias = ID(q, v, 0) = s_i . F_i + friction_i at zero joint accelerations
    world_forces(parents, phi, oR, op, oS, oV, v, joint_work[1], base_accel, f_ext, oA, ophi_c, oL_c,
                 oB_sym, oF_c, tmp6)
    for i in range(nb):
        ddq[i] = 0.0
    for k in range(nb):
        tau_k = tau[k] - dot6(oS[k], oF_c[k])
        if has_terms(joint_terms, k):
            tau_k -= friction(joint_terms, k, v[k])
        for i in range(nb):
            ddq[i] += Minv[k, i] * tau_k
    add_joint_accelerations(parents, oS, ophi_c, ddq, oA, oF_c, oAlpha, oBeta)
    derivative_matrices(parents, base_accel, oS, oV, oA, ophi_c, oL_c, oB_sym, oF_c, oAlpha, oBeta,
                        tmp6, dtau_dq, dtau_dv, out[2])
    add_joint_derivatives(joint_terms, v, dtau_dv, out[2])
    times_minus_minv(parents, subtree_end, Minv, dtau_dq, out[4])
    times_minus_minv(parents, subtree_end, Minv, dtau_dv, out[5])
    if not (all_finite(ddq) and all_finite(out)):
        return NON_FINITE
    return OK
