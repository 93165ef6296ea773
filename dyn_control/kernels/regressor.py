"""Joint torque regressor: tau = Y(q, v, a) phi, linear in the inertial parameters of all bodies.

Body i's own force in its frame (seed "Differential Dynamics and Mesh-Based Inertia", eq. 4),
F_i = G_i(phi_i) Vdot_i + V_i x* G_i(phi_i) V_i, is linear in phi_i = [m, h, Ixx, Iyy, Izz, Ixy,
Ixz, Iyz]: F_i = A_i phi_i with, for V_i = [w; u] and Vdot_i = [alpha; udot] (gravity included),

    A_i = [[0, -[b], L(alpha) + [w] L(w)],      b = udot + w x u (acceleration of the origin),
           [b, [alpha] + [w][w], 0      ]],     L(x) I_vec = I x  (I_vec = [Ixx, Iyy, Izz, Ixy, Ixz, Iyz]).

It reaches joint k (k supports i) as tau_k += S_k^T Ad*_{T_{k,i}^-1} F_i = (S_k in frame i) . F_i,
so Y[k, 10 i: 10 i + 10] = s^T A_i with s = joint k's screw expressed in body i's frame.
"""
from ..jit import njit
from ..spatial import motion_to_child, motion_to_parent
from .inputs import all_below, all_finite
from .kinematics import body_poses
from .rnea import body_motion

BOUND = 1e18  # see the end of regressor()


@njit(cache=True, inline="always")
def body_regressor_row(s, w, alpha, b, Y, row, col):
    """Y[row, col: col + 10] = s^T A_i for body i moving with twist w (angular part), angular
    acceleration alpha and origin acceleration b (all in body i's frame)."""
    sw0, sw1, sw2, sv0, sv1, sv2 = s[0], s[1], s[2], s[3], s[4], s[5]
    w0, w1, w2 = w[0], w[1], w[2]
    # mass: sv . b
    Y[row, col] = sv0 * b[0] + sv1 * b[1] + sv2 * b[2]
    # first moment h: sw^T (-[b]) + sv^T ([alpha] + [w][w])  =  b x sw + sv x alpha + (sv x w) x w
    c0 = sv1 * w2 - sv2 * w1
    c1 = sv2 * w0 - sv0 * w2
    c2 = sv0 * w1 - sv1 * w0
    Y[row, col + 1] = (b[1] * sw2 - b[2] * sw1) + (sv1 * alpha[2] - sv2 * alpha[1]) + (c1 * w2 - c2 * w1)
    Y[row, col + 2] = (b[2] * sw0 - b[0] * sw2) + (sv2 * alpha[0] - sv0 * alpha[2]) + (c2 * w0 - c0 * w2)
    Y[row, col + 3] = (b[0] * sw1 - b[1] * sw0) + (sv0 * alpha[1] - sv1 * alpha[0]) + (c0 * w1 - c1 * w0)
    # rotational inertia: sw^T L(alpha) + (sw x w)^T L(w), where y^T L(x) = [y0 x0, y1 x1, y2 x2,
    # y0 x1 + y1 x0, y0 x2 + y2 x0, y1 x2 + y2 x1]
    d0 = sw1 * w2 - sw2 * w1
    d1 = sw2 * w0 - sw0 * w2
    d2 = sw0 * w1 - sw1 * w0
    Y[row, col + 4] = sw0 * alpha[0] + d0 * w0
    Y[row, col + 5] = sw1 * alpha[1] + d1 * w1
    Y[row, col + 6] = sw2 * alpha[2] + d2 * w2
    Y[row, col + 7] = sw0 * alpha[1] + sw1 * alpha[0] + d0 * w1 + d1 * w0
    Y[row, col + 8] = sw0 * alpha[2] + sw2 * alpha[0] + d0 * w2 + d2 * w0
    Y[row, col + 9] = sw1 * alpha[2] + sw2 * alpha[1] + d1 * w2 + d2 * w1


@njit(cache=True, forceinline=True)
def regressor(parents, screw_axes, home_R, home_p, q, v, a, base_accel, R, p, oR, op, oS, V, Vdot,
              tmp6, Y):
    """Y (nb, 10 nb) with tau = Y phi (phi of all bodies stacked). tmp6: (>= 3, 6) scratch.
    Returns False, computing nothing, when q, v or a is not finite, and False when Y is not."""
    if not (all_finite(q) and all_finite(v) and all_finite(a)):
        return False
    nb = q.shape[0]
    body_poses(parents, screw_axes, home_R, home_p, q, R, p, oR, op)
    VxS = tmp6[0]
    b = tmp6[1]
    s = tmp6[2]
    Y[:, :] = 0.0
    for i in range(nb):
        S = screw_axes[i]
        motion_to_parent(oR[i], op[i], S, oS[i])
        # eqs. 2-3: body twist and acceleration (base acceleration [0; -g] carries gravity)
        body_motion(i, parents, S, R, p, base_accel, v, a, V, Vdot, VxS)
        w = V[i, :3]
        alpha = Vdot[i, :3]
        # b = udot + w x u
        b[0] = Vdot[i, 3] + w[1] * V[i, 5] - w[2] * V[i, 4]
        b[1] = Vdot[i, 4] + w[2] * V[i, 3] - w[0] * V[i, 5]
        b[2] = Vdot[i, 5] + w[0] * V[i, 4] - w[1] * V[i, 3]
        # body i's force reaches every supporting joint k: s = S_k in body i's frame
        body_regressor_row(S, w, alpha, b, Y, i, 10 * i)
        k = parents[i]
        while k >= 0:
            motion_to_child(oR[i], op[i], oS[k], s)
            body_regressor_row(s, w, alpha, b, Y, k, 10 * i)
            k = parents[k]
    # Each entry of Y is a sum of products of a joint screw in a body frame (bounded through the
    # screw axes and body positions) with a body's twist and acceleration terms: it stays below
    # 1e100 while those are all below BOUND; only beyond may the state overflow, so only then is Y
    # itself checked (a pass over all of it would cost more than the regressor of a sparse tree)
    if (all_below(screw_axes, BOUND) and all_below(op, BOUND) and all_below(V, BOUND)
            and all_below(Vdot, BOUND)):
        return True
    return all_finite(Y)
