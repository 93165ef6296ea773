"""Loop closure of a closed chain cut into a tree at a pair of frames (seed "Differential Dynamics and
Mesh-Based Inertia", sec. 3, eqs. 11-12), for any mechanism whose loop closes when frame A (on one
branch) and frame B (its copy at the end of the other branch) coincide in the `components` of
    r(q) = P log(T_B^-1 T_A)                                           (eq. 11)
Its velocity form, in frame A, is K v = 0 with
    K = P Ad_{T_A^-1} (J_A - J_B) = [g_a g_p]                          (eq. 12)
J_A, J_B the world ("spatial") Jacobians of the two frames' bodies: column j is the joint's world
screw oS_j on a body's support, so J_A - J_B = sum_j sign_j oS_j e_j^T with sign_j = +1 on A's
branch only, -1 on B's only, 0 on both (the common trunk cancels).

With q(theta_a) completing the active joints theta_a by Newton on the passive ones, the tree moves
with v = G dtheta_a, G = dq/dtheta_a (identity rows for active joints, J_p = -g_p^-1 g_a for the
passive ones), and a = G ddtheta_a + Gdot dtheta_a with g_p (Gdot dtheta_a)_p = -Kdot v. Kdot follows
from d oS_j/dt = ad(oV_parent(j)) oS_j (oV: a body's world twist) and d Ad_{T_A^-1}/dt = -ad(V_A)
Ad_{T_A^-1} (V_A: frame A's body twist):
    Kdot x = P [Ad_{T_A^-1} sum_j sign_j x_j ad(oV_parent(j)) oS_j - ad(V_A) Ad_{T_A^-1} (J_A - J_B) x].

Every function works on preallocated arrays; `close` and `tree_motion` are what a compiled step calls.
"""
import math

from ..jit import njit
from ..spatial import cross_motion, motion_to_child, motion_to_parent
from .kinematics import body_poses
from .lu import lu_factor, lu_solve

SMALL_ANGLE = 1e-9
MAX_NEWTON_STEP = 0.5   # rad, the longest Newton step on the passive joints (as mappings/five_bar.py)

# status of close()
CLOSED, NOT_CONVERGED, SINGULAR, NOT_FINITE = range(4)


@njit(cache=True, nogil=True)
def frame_pose(oR, op, body, frame_R, frame_p, R, p):
    """World pose (R, p) of a frame placed at (frame_R, frame_p) on `body` (world pose oR, op)."""
    for r in range(3):
        for c in range(3):
            R[r, c] = oR[body, r, 0] * frame_R[0, c] + oR[body, r, 1] * frame_R[1, c] + oR[body, r, 2] * frame_R[2, c]
        p[r] = oR[body, r, 0] * frame_p[0] + oR[body, r, 1] * frame_p[1] + oR[body, r, 2] * frame_p[2] + op[body, r]


@njit(cache=True, nogil=True)
def relative_log(R_A, p_A, R_B, p_B, out):
    """out (6,) = log(T_B^-1 T_A) = [w; v] (rotation angles below pi), as spatial.log_se3."""
    # T_rel = T_B^-1 T_A: R = R_B^T R_A, p = R_B^T (p_A - p_B)
    R00 = R_B[0, 0] * R_A[0, 0] + R_B[1, 0] * R_A[1, 0] + R_B[2, 0] * R_A[2, 0]
    R11 = R_B[0, 1] * R_A[0, 1] + R_B[1, 1] * R_A[1, 1] + R_B[2, 1] * R_A[2, 1]
    R22 = R_B[0, 2] * R_A[0, 2] + R_B[1, 2] * R_A[1, 2] + R_B[2, 2] * R_A[2, 2]
    R21 = R_B[0, 2] * R_A[0, 1] + R_B[1, 2] * R_A[1, 1] + R_B[2, 2] * R_A[2, 1]
    R12 = R_B[0, 1] * R_A[0, 2] + R_B[1, 1] * R_A[1, 2] + R_B[2, 1] * R_A[2, 2]
    R02 = R_B[0, 0] * R_A[0, 2] + R_B[1, 0] * R_A[1, 2] + R_B[2, 0] * R_A[2, 2]
    R20 = R_B[0, 2] * R_A[0, 0] + R_B[1, 2] * R_A[1, 0] + R_B[2, 2] * R_A[2, 0]
    R10 = R_B[0, 1] * R_A[0, 0] + R_B[1, 1] * R_A[1, 0] + R_B[2, 1] * R_A[2, 0]
    R01 = R_B[0, 0] * R_A[0, 1] + R_B[1, 0] * R_A[1, 1] + R_B[2, 0] * R_A[2, 1]
    d0, d1, d2 = p_A[0] - p_B[0], p_A[1] - p_B[1], p_A[2] - p_B[2]
    p0 = R_B[0, 0] * d0 + R_B[1, 0] * d1 + R_B[2, 0] * d2
    p1 = R_B[0, 1] * d0 + R_B[1, 1] * d1 + R_B[2, 1] * d2
    p2 = R_B[0, 2] * d0 + R_B[1, 2] * d1 + R_B[2, 2] * d2
    cos_angle = min(1.0, max(-1.0, 0.5 * (R00 + R11 + R22 - 1.0)))
    angle = math.acos(cos_angle)
    scale = 0.5 if angle < SMALL_ANGLE else angle / (2.0 * math.sin(angle))
    w0, w1, w2 = scale * (R21 - R12), scale * (R02 - R20), scale * (R10 - R01)
    # v = V^-1 p, V^-1 = I - W/2 + coef W^2, coef = (1 - a sin a / (2 (1 - cos a))) / a^2
    coef = 0.0 if angle < SMALL_ANGLE else (1.0 - angle * math.sin(angle) / (2.0 * (1.0 - math.cos(angle)))) / (angle * angle)
    c0, c1, c2 = w1 * p2 - w2 * p1, w2 * p0 - w0 * p2, w0 * p1 - w1 * p0          # W p
    cc0, cc1, cc2 = w1 * c2 - w2 * c1, w2 * c0 - w0 * c2, w0 * c1 - w1 * c0        # W W p
    out[0], out[1], out[2] = w0, w1, w2
    out[3] = p0 - 0.5 * c0 + coef * cc0
    out[4] = p1 - 0.5 * c1 + coef * cc1
    out[5] = p2 - 0.5 * c2 + coef * cc2


@njit(cache=True, nogil=True)
def branch_signs(parents, body_a, body_b, sign):
    """sign[j] = +1 for joints supporting body_a only, -1 for body_b only, 0 otherwise."""
    sign[:] = 0.0
    j = body_a
    while j >= 0:
        sign[j] += 1.0
        j = parents[j]
    j = body_b
    while j >= 0:
        sign[j] -= 1.0
        j = parents[j]


@njit(cache=True, nogil=True)
def world_screws(screw_axes, oR, op, oS):
    """oS_i = Ad_{oT_i} S_i: every joint's screw in the root frame."""
    for i in range(screw_axes.shape[0]):
        motion_to_parent(oR[i], op[i], screw_axes[i], oS[i])


@njit(cache=True, nogil=True)
def closure_jacobian(oS, sign, R_A, p_A, components, tmp6, K):
    """K (nc, nv) = P Ad_{T_A^-1} (J_A - J_B) (eq. 12). tmp6: (>= 1, 6)."""
    col = tmp6[0]
    for j in range(oS.shape[0]):
        if sign[j] == 0.0:
            for r in range(components.shape[0]):
                K[r, j] = 0.0
            continue
        motion_to_child(R_A, p_A, oS[j], col)
        for r in range(components.shape[0]):
            K[r, j] = sign[j] * col[components[r]]


@njit(cache=True, nogil=True)
def world_twists(parents, oS, v, oV):
    """oV_i = oV_parent + oS_i v_i: every body's twist in the root frame."""
    for i in range(parents.shape[0]):
        j = parents[i]
        for k in range(6):
            oV[i, k] = (0.0 if j < 0 else oV[j, k]) + oS[i, k] * v[i]


@njit(cache=True, nogil=True)
def closure_rate_times(parents, oS, oV, sign, body_a, R_A, p_A, components, x, tmp6, out):
    """out (nc,) = Kdot x along the motion whose world twists are oV (module docstring).
    tmp6: (>= 5, 6)."""
    rate, relative, term, V_A, moved = tmp6[0], tmp6[1], tmp6[2], tmp6[3], tmp6[4]
    rate[:] = 0.0
    relative[:] = 0.0
    for j in range(oS.shape[0]):
        if sign[j] == 0.0 or x[j] == 0.0:
            continue
        weight = sign[j] * x[j]
        parent = parents[j]
        if parent >= 0:
            cross_motion(oV[parent], oS[j], term)
            for k in range(6):
                rate[k] += weight * term[k]
        for k in range(6):
            relative[k] += weight * oS[j, k]
    motion_to_child(R_A, p_A, rate, term)          # Ad_{T_A^-1} sum sign_j x_j ad(oV_parent) oS_j
    motion_to_child(R_A, p_A, oV[body_a], V_A)     # frame A's body twist
    motion_to_child(R_A, p_A, relative, rate)      # Ad_{T_A^-1} (J_A - J_B) x
    cross_motion(V_A, rate, moved)
    for r in range(components.shape[0]):
        out[r] = term[components[r]] - moved[components[r]]


@njit(cache=True, nogil=True)
def close(parents, screw_axes, home_R, home_p, q, active, passive, body_a, frame_a_R, frame_a_p, body_b,
          frame_b_R, frame_b_p, components, tolerance, singular_tolerance, max_iterations, R, p, oR, op,
          oS, sign, R_A, p_A, R_B, p_B, K, K_p, pivots, residual, tmp6):
    """Newton on the passive joints of q (in place, active joints held) until the residual norm of
    eq. (11) is below `tolerance`, each step -g_p^-1 r shortened to MAX_NEWTON_STEP. On return the
    kinematics (R, p, oR, op, oS, sign, T_A, T_B), K and the LU factors of K_p (= g_p) are those of
    the final q. Returns CLOSED, NOT_CONVERGED, SINGULAR (the smallest pivot of g_p below
    singular_tolerance) or NOT_FINITE. tmp6: (>= 1, 6)."""
    nc = components.shape[0]
    log = tmp6[0]
    branch_signs(parents, body_a, body_b, sign)
    for iteration in range(max_iterations + 1):
        body_poses(parents, screw_axes, home_R, home_p, q, R, p, oR, op)
        frame_pose(oR, op, body_a, frame_a_R, frame_a_p, R_A, p_A)
        frame_pose(oR, op, body_b, frame_b_R, frame_b_p, R_B, p_B)
        relative_log(R_A, p_A, R_B, p_B, log)
        norm = 0.0
        for r in range(nc):
            residual[r] = log[components[r]]
            norm += residual[r] * residual[r]
        norm = math.sqrt(norm)
        if not norm < 1e300:
            return NOT_FINITE
        world_screws(screw_axes, oR, op, oS)
        closure_jacobian(oS, sign, R_A, p_A, components, tmp6, K)
        for r in range(nc):
            for c in range(nc):
                K_p[r, c] = K[r, passive[c]]
        smallest = lu_factor(K_p, pivots)
        if norm < tolerance:
            return CLOSED if smallest >= singular_tolerance else SINGULAR
        if iteration == max_iterations:
            break
        if smallest == 0.0:
            return SINGULAR
        lu_solve(K_p, pivots, residual)      # residual <- g_p^-1 r
        length = 0.0
        for r in range(nc):
            length += residual[r] * residual[r]
        length = math.sqrt(length)
        shorten = 1.0 if length <= MAX_NEWTON_STEP else MAX_NEWTON_STEP / length
        for r in range(nc):
            q[passive[r]] -= shorten * residual[r]
    return NOT_CONVERGED


@njit(cache=True, nogil=True)
def completion_jacobian(K, K_p, pivots, active, passive, rhs, G):
    """G (nv, na) = dq/dtheta_a: identity rows of the active joints, J_p = -g_p^-1 g_a (eq. 12) in
    the passive rows; K_p holds the LU factors of g_p (from close)."""
    G[:, :] = 0.0
    for i in range(active.shape[0]):
        G[active[i], i] = 1.0
        for r in range(passive.shape[0]):
            rhs[r] = -K[r, active[i]]
        lu_solve(K_p, pivots, rhs)
        for r in range(passive.shape[0]):
            G[passive[r], i] = rhs[r]


@njit(cache=True, nogil=True)
def tree_motion(parents, oS, sign, body_a, R_A, p_A, components, K_p, pivots, passive, G, dtheta, v, oV,
                a_bias, rhs, tmp6):
    """The tree's velocity v = G dtheta, the world twists oV, and a_bias = Gdot dtheta (zero on the
    active joints, g_p a_p = -Kdot v on the passive ones): the tree acceleration of the closed chain
    at zero actuated acceleration."""
    for k in range(v.shape[0]):
        total = 0.0
        for i in range(dtheta.shape[0]):
            total += G[k, i] * dtheta[i]
        v[k] = total
    world_twists(parents, oS, v, oV)
    closure_rate_times(parents, oS, oV, sign, body_a, R_A, p_A, components, v, tmp6, rhs)
    lu_solve(K_p, pivots, rhs)
    a_bias[:] = 0.0
    for r in range(passive.shape[0]):
        a_bias[passive[r]] = -rhs[r]


@njit(cache=True, nogil=True)
def completion_jacobian_rate(parents, oS, oV, sign, body_a, R_A, p_A, components, K_p, pivots, passive, G,
                             rhs, tmp6, Gdot):
    """Gdot (nv, na) = dG/dt along the motion oV (from tree_motion): zero active rows; column i's
    passive rows solve g_p Gdot_p e_i = -Kdot G e_i (from d/dt (K G) = 0)."""
    Gdot[:, :] = 0.0
    for i in range(G.shape[1]):
        closure_rate_times(parents, oS, oV, sign, body_a, R_A, p_A, components, G[:, i], tmp6, rhs)
        lu_solve(K_p, pivots, rhs)
        for r in range(passive.shape[0]):
            Gdot[passive[r], i] = -rhs[r]
