"""Kinematic terms of rigid contacts and loop closures: world-frame twists and accelerations of the
bodies, their derivatives, and the derivatives of the joint torques of forces applied to a body
(seed "Details of Partial Derivatives of Rigid-Body Inverse Dynamics", secs. X-XII).

All in the root frame at the root origin, angular-first. A body-fixed quantity moves with joint k
as d/dq_k = S_k x (.) for every support k; the twist V_b = sum_{k <= b} S_k v_k and acceleration
A_b = sum_{k <= b} (S_k a_k + (V_k x S_k) v_k) (no gravity) of body b then have, for k <= b,
    dV_b/dq_k = S_k x (V_b - V_parent(k))
    dA_b/dq_k = S_k x (A_b - A_parent(k)) + (V_parent(k) x S_k) x (V_b - V_parent(k))
    dA_b/dv_k = S_k x (V_b - V_parent(k)) + V_k x S_k,        dV_b/dv_k = dA_b/da_k = S_k.
"""
from ..jit import njit
from ..spatial import cross_force, cross_motion, dot6, motion_to_parent
from .inputs import all_finite
from .kinematics import body_poses


@njit(cache=True, forceinline=True)
def world_screws(parents, screw_axes, home_R, home_p, q, R, p, oR, op, oS):
    """World poses (oR, op) and joint screws oS: all the kinematics that impulses need."""
    body_poses(parents, screw_axes, home_R, home_p, q, R, p, oR, op)
    for i in range(q.shape[0]):
        motion_to_parent(oR[i], op[i], screw_axes[i], oS[i])


@njit(cache=True, forceinline=True)
def world_motion(parents, screw_axes, home_R, home_p, q, v, a, R, p, oR, op, oS, oV, oA, tmp6):
    """World poses (oR, op), joint screws oS, body twists oV and accelerations oA (gravity left
    out). Returns False, computing nothing, when q, v or a is not finite, and False when a result is
    not (overflow)."""
    if not (all_finite(q) and all_finite(v) and all_finite(a)):
        return False
    world_screws(parents, screw_axes, home_R, home_p, q, R, p, oR, op, oS)
    Sdot = tmp6[0]
    for i in range(q.shape[0]):
        j = parents[i]
        for k in range(6):
            oV[i, k] = oS[i, k] * v[i] + (0.0 if j < 0 else oV[j, k])
        cross_motion(oV[i], oS[i], Sdot)
        for k in range(6):
            oA[i, k] = oS[i, k] * a[i] + Sdot[k] * v[i] + (0.0 if j < 0 else oA[j, k])
    return all_finite(op) and all_finite(oV) and all_finite(oA)


@njit(cache=True, forceinline=True)
def motion_derivatives(parents, oS, oV, oA, body, J, dV_dq, dA_dq, dA_dv, tmp6):
    """For one body: its world Jacobian J (columns oS_k of its supports), dV_b/dq, dA_b/dq and
    dA_b/dv, each (6, nv) with zero columns off the body's support (none for the root, body -1)."""
    J[:, :] = 0.0
    dV_dq[:, :] = 0.0
    dA_dq[:, :] = 0.0
    dA_dv[:, :] = 0.0
    dV = tmp6[0]
    dA = tmp6[1]
    psid = tmp6[2]
    t = tmp6[3]
    k = body
    while k >= 0:
        j = parents[k]
        S = oS[k]
        for r in range(6):
            J[r, k] = S[r]
            dV[r] = oV[body, r] - (0.0 if j < 0 else oV[j, r])
            dA[r] = oA[body, r] - (0.0 if j < 0 else oA[j, r])
        cross_motion(S, dV, t)
        for r in range(6):
            dV_dq[r, k] = t[r]
            dA_dv[r, k] = t[r]
        cross_motion(oV[k], S, t)
        for r in range(6):
            dA_dv[r, k] += t[r]
        cross_motion(S, dA, t)
        for r in range(6):
            dA_dq[r, k] = t[r]
        if j >= 0:
            cross_motion(oV[j], S, psid)
            cross_motion(psid, dV, t)
            for r in range(6):
                dA_dq[r, k] += t[r]
        k = parents[k]


@njit(cache=True, forceinline=True)
def add_force_torque_derivatives(parents, oS, body, F, dF_dq, sign, tmp6, out):
    """out[j, k] += sign d(S_j . F)/dq_k for the supports j of `body`: the derivative of the joint
    torques J_b^T F of a world force F applied to the body, with dF_dq[:, k] = dF/dq_k (6, nv).
    S_j moves with its own supports k, dS_j/dq_k = S_k x S_j, and (S_k x S_j) . F = S_k . (S_j x* F)."""
    X = tmp6[0]
    nv = out.shape[1]
    j = body
    while j >= 0:
        for k in range(nv):
            s = 0.0
            for r in range(6):
                s += oS[j, r] * dF_dq[r, k]
            out[j, k] += sign * s
        cross_force(oS[j], F, X)
        k = parents[j]
        while k >= 0:
            out[j, k] += sign * dot6(oS[k], X)
            k = parents[k]
        j = parents[j]
