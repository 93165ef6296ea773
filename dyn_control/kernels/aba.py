"""Articulated-body algorithm: forward dynamics in O(n) (seed "Mathematics for Classical
Dynamics", articulated-body inertias; Featherstone's three passes).

Worked in the root frame, as Pinocchio does: a child's articulated inertia and bias force add to
its parent's without a change of frame, which saves the 6x6 congruence of the body-frame form.

Joint terms (kernels/joint_terms.py) as Pinocchio takes its armature: the rotor inertia I_a adds to
the joint's D_i = S_i^T IA_i S_i (a 1-DoF inertia on the joint axis, nothing handed to the parent
but through D_i), and the friction torque F_v v_i + F_c sgn_s(v_i) is known from v alone, so it
leaves the joint's torque: u_i = tau_i - friction_i - S_i^T pA_i. ABA then solves
(M + diag(I_a)) a = tau - C v - g - friction.
"""
from ..jit import njit
from ..spatial import (cross_force, cross_motion, dot6, force_to_parent_subtract, inertia_times,
                       motion_to_parent, phi_to_parent_add, spatial_inertia_into)
from .inputs import all_finite
from .joint_terms import ARMATURE, friction, has_terms
from .kinematics import body_poses


@njit(cache=True, forceinline=True)
def aba(parents, screw_axes, home_R, home_p, phi, joint_terms, q, v, tau, base_accel, f_ext, R, p, oR, op,
        oS, oV, phi_world, c, IA, pA, U, D, u, A, tmp6, ddq):
    """ddq = (M(q) + diag(I_a))^-1 (tau - C(q, v) v - g(q) - friction(v) + sum_i J_i^T f_ext_i); A
    receives the bodies' spatial accelerations in the root frame. Returns False, computing nothing,
    when q, v or tau is not finite, and False when ddq is not (overflow)."""
    if not (all_finite(q) and all_finite(v) and all_finite(tau)):
        return False
    nb = q.shape[0]
    body_poses(parents, screw_axes, home_R, home_p, q, R, p, oR, op)
    GV = tmp6[0]
    pa = tmp6[1]
    # pass 1, root to leaves: twists, velocity-product accelerations c_i = (oV_i x oS_i) qd_i,
    # rigid-body inertias and bias forces oV_i x* I_i oV_i - f_ext_i, all in the root frame
    for i in range(nb):
        j = parents[i]
        motion_to_parent(oR[i], op[i], screw_axes[i], oS[i])
        for k in range(6):
            oV[i, k] = oS[i, k] * v[i] + (0.0 if j < 0 else oV[j, k])
        cross_motion(oV[i], oS[i], c[i])
        for k in range(6):
            c[i, k] *= v[i]
        phi_world[i, :] = 0.0
        phi_to_parent_add(oR[i], op[i], phi[i], phi_world[i])
        spatial_inertia_into(phi_world[i], IA[i])
        inertia_times(phi_world[i], oV[i], GV)
        cross_force(oV[i], GV, pA[i])
        force_to_parent_subtract(oR[i], op[i], f_ext[i], pA[i], GV)
    # pass 2, leaves to root: articulated-body inertias and bias forces
    for i in range(nb - 1, -1, -1):
        S = oS[i]
        for r in range(6):
            U[i, r] = (IA[i, r, 0] * S[0] + IA[i, r, 1] * S[1] + IA[i, r, 2] * S[2]
                       + IA[i, r, 3] * S[3] + IA[i, r, 4] * S[4] + IA[i, r, 5] * S[5])
        D[i] = dot6(S, U[i]) + joint_terms[i, ARMATURE]
        u[i] = tau[i] - dot6(S, pA[i])
        if has_terms(joint_terms, i):
            u[i] -= friction(joint_terms, i, v[i])
        j = parents[i]
        if j >= 0:
            # Ia = IA - U U^T / D ; pa = pA + Ia c + U u / D ; both add to the parent's. One division
            # (Pinocchio's Dinv) instead of 42: a call 5 % (panda) to 8 % (talos_reduced) faster.
            # (U_r U_k) first keeps Ia symmetric bit for bit, as U_r U_k = U_k U_r exactly.
            Dinv = 1.0 / D[i]
            for r in range(6):
                for k in range(6):
                    IA[i, r, k] -= (U[i, r] * U[i, k]) * Dinv
            for r in range(6):
                s = pA[i, r] + (U[i, r] * u[i]) * Dinv
                for k in range(6):
                    s += IA[i, r, k] * c[i, k]
                pa[r] = s
            for r in range(6):
                pA[j, r] += pa[r]
                for k in range(6):
                    IA[j, r, k] += IA[i, r, k]
    # pass 3, root to leaves: accelerations (the root's is the base acceleration -g)
    for i in range(nb):
        j = parents[i]
        for k in range(6):
            A[i, k] = c[i, k] + (base_accel[k] if j < 0 else A[j, k])
        ddq[i] = (u[i] - dot6(U[i], A[i])) / D[i]
        for k in range(6):
            A[i, k] += oS[i, k] * ddq[i]
    return all_finite(ddq)
