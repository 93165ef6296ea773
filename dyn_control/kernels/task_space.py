"""Task-space quantities of a frame, for Cartesian impedance control inside the compiled tick.

The frame's Jacobian time variation dJ/dt at (q, v), its velocity J v and acceleration drift
(dJ/dt) v; the operational-space inertia Lambda = (J M^-1 J^T + d^2 I)^-1 with the dynamically
consistent pseudo-inverse J_bar = M^-1 J^T Lambda and the torque nullspace projector
N = I - J^T J_bar^T; the pose error from the SO(3) log; quaternion <-> rotation.

Conventions: motion vectors angular first, [w; v]. References as kinematics.frame_jacobian:
WORLD (spatial velocity in the root frame, at the root origin), LOCAL (twist in the frame's axes),
LOCAL_WORLD_ALIGNED (angular velocity and the frame origin's velocity, in root axes). Quaternions
are (x, y, z, w), the order of geometry_msgs/Quaternion.

Every kernel writes into buffers it is given and allocates nothing: all of them may run inside an
@njit(nogil=True) tick. Each returns False (its outputs then meaningless) when an input is not
finite, a matrix is not positive definite, or a result overflows.
"""
import math

from ..jit import njit
from ..spatial import cross_motion, motion_to_parent
from .cholesky import back_substitute, cholesky_factor, forward_substitute
from .inputs import all_finite
from .kinematics import LOCAL, LOCAL_WORLD_ALIGNED, WORLD, support_poses  # noqa: F401 (re-exported codes)


# ----------------------------------------------------------------------------------------------
# Jacobian time variation


@njit(cache=True, nogil=True)
def frame_jacobian_time_variation(parents, screw_axes, home_R, home_p, q, v, path, R, p, oR, op, oV, body,
                                  frame_R, frame_p, reference, J, dJ, velocity, drift):
    """The Jacobian J (6, nb) of a frame placed at (frame_R, frame_p) on `body`, its time variation
    dJ = dJ/dt (6, nb) at (q, v), the frame's velocity J v (6,) and acceleration drift dJ v (6,),
    angular rows first, in `reference` (WORLD, LOCAL or LOCAL_WORLD_ALIGNED of kinematics.py);
    J v is the frame's velocity and dJ v + J a the derivative of J v: the spatial acceleration
    (WORLD, LOCAL), the angular acceleration and the frame origin's acceleration (LOCAL_WORLD_ALIGNED:
    Pinocchio's "classical" acceleration).

    Workspace: path (nb,) int64, R, oR (nb, 3, 3), p, op (nb, 3), oV (nb, 6): the supporting bodies'
    poses and twists (root frame) on return. Columns of joints not supporting `body` are zero.
    False, computing nothing, when q or v is not finite; False when the result is not."""
    if not (all_finite(q) and all_finite(v)):
        return False
    J[:, :] = 0.0
    dJ[:, :] = 0.0
    velocity[:] = 0.0
    drift[:] = 0.0
    if body < 0:
        return True
    support_poses(parents, screw_axes, home_R, home_p, q, body, path, R, p, oR, op)
    depth = 0
    j = body
    while j >= 0:
        depth += 1
        j = parents[j]
    # root to body: world screw oS_j, body twist oV_j = oV_parent + oS_j v_j, d/dt oS_j = oV_j x oS_j
    for k in range(depth - 1, -1, -1):
        j = path[k]
        motion_to_parent(oR[j], op[j], screw_axes[j], J[:, j])
        parent = parents[j]
        for r in range(6):
            oV[j, r] = J[r, j] * v[j] + (oV[parent, r] if parent >= 0 else 0.0)
        cross_motion(oV[j], J[:, j], dJ[:, j])
    if reference == WORLD:
        for r in range(6):
            velocity[r] = oV[body, r]
    else:
        _to_frame_origin(oR[body], op[body], oV[body], frame_R, frame_p, reference, path, depth, J, dJ,
                         velocity)
    for k in range(depth):
        j = path[k]
        for r in range(6):
            drift[r] += dJ[r, j] * v[j]
    return all_finite(J) and all_finite(dJ)


@njit(cache=True, nogil=True)
def _to_frame_origin(oR_b, op_b, oV_b, frame_R, frame_p, reference, path, depth, J, dJ, velocity):
    """World columns (J, dJ) of the supporting joints path[:depth] to LOCAL_WORLD_ALIGNED, then LOCAL:
        J_lwa = [w; v + w x o],  dJ_lwa = [dw; dv + dw x o + w x od],
        J_loc = R_f^T J_lwa,     dJ_loc = R_f^T dJ_lwa - [w_f] J_loc  (per half, w_f = R_f^T w_frame)
    with o the frame origin and od its velocity (root frame), R_f the frame's rotation."""
    # frame origin o = oR_b frame_p + op_b and its velocity od = v_b + w_b x o
    o0 = oR_b[0, 0] * frame_p[0] + oR_b[0, 1] * frame_p[1] + oR_b[0, 2] * frame_p[2] + op_b[0]
    o1 = oR_b[1, 0] * frame_p[0] + oR_b[1, 1] * frame_p[1] + oR_b[1, 2] * frame_p[2] + op_b[1]
    o2 = oR_b[2, 0] * frame_p[0] + oR_b[2, 1] * frame_p[1] + oR_b[2, 2] * frame_p[2] + op_b[2]
    w0, w1, w2 = oV_b[0], oV_b[1], oV_b[2]
    od0 = oV_b[3] + w1 * o2 - w2 * o1
    od1 = oV_b[4] + w2 * o0 - w0 * o2
    od2 = oV_b[5] + w0 * o1 - w1 * o0
    velocity[0], velocity[1], velocity[2] = w0, w1, w2
    velocity[3], velocity[4], velocity[5] = od0, od1, od2
    for k in range(depth):
        j = path[k]
        a0, a1, a2 = J[0, j], J[1, j], J[2, j]
        b0, b1, b2 = dJ[0, j], dJ[1, j], dJ[2, j]
        J[3, j] += a1 * o2 - a2 * o1
        J[4, j] += a2 * o0 - a0 * o2
        J[5, j] += a0 * o1 - a1 * o0
        dJ[3, j] += b1 * o2 - b2 * o1 + a1 * od2 - a2 * od1
        dJ[4, j] += b2 * o0 - b0 * o2 + a2 * od0 - a0 * od2
        dJ[5, j] += b0 * o1 - b1 * o0 + a0 * od1 - a1 * od0
    if reference != LOCAL:
        return
    # R_f = oR_b frame_R, row-major in a tuple
    f = (_row_col(oR_b, frame_R, 0, 0), _row_col(oR_b, frame_R, 0, 1), _row_col(oR_b, frame_R, 0, 2),
         _row_col(oR_b, frame_R, 1, 0), _row_col(oR_b, frame_R, 1, 1), _row_col(oR_b, frame_R, 1, 2),
         _row_col(oR_b, frame_R, 2, 0), _row_col(oR_b, frame_R, 2, 1), _row_col(oR_b, frame_R, 2, 2))
    _rotate_back(f, velocity, 0)
    _rotate_back(f, velocity, 3)
    u0, u1, u2 = velocity[0], velocity[1], velocity[2]  # the frame's angular velocity, own axes
    for k in range(depth):
        j = path[k]
        for h in (0, 3):
            _rotate_back(f, J[:, j], h)
            _rotate_back(f, dJ[:, j], h)
            x0, x1, x2 = J[h, j], J[h + 1, j], J[h + 2, j]
            dJ[h, j] -= u1 * x2 - u2 * x1
            dJ[h + 1, j] -= u2 * x0 - u0 * x2
            dJ[h + 2, j] -= u0 * x1 - u1 * x0


@njit(cache=True, inline="always")
def _row_col(A, B, r, c):
    """(A B)[r, c] for 3x3 A, B."""
    return A[r, 0] * B[0, c] + A[r, 1] * B[1, c] + A[r, 2] * B[2, c]


@njit(cache=True, inline="always")
def _rotate_back(f, x, h):
    """x[h:h+3] = R_f^T x[h:h+3], R_f row-major in the 9-tuple f."""
    x0, x1, x2 = x[h], x[h + 1], x[h + 2]
    x[h] = f[0] * x0 + f[3] * x1 + f[6] * x2
    x[h + 1] = f[1] * x0 + f[4] * x1 + f[7] * x2
    x[h + 2] = f[2] * x0 + f[5] * x1 + f[8] * x2


@njit(cache=True, nogil=True)
def frame_world_pose(oR, op, body, frame_R, frame_p, R_out, p_out):
    """World pose (R_out (3, 3), p_out (3,)) of a frame placed at (frame_R, frame_p) on `body`,
    from the body poses (oR, op) a kinematics kernel left (support_poses is enough); body -1: the root."""
    for r in range(3):
        if body < 0:
            for c in range(3):
                R_out[r, c] = frame_R[r, c]
            p_out[r] = frame_p[r]
        else:
            for c in range(3):
                R_out[r, c] = _row_col(oR[body], frame_R, r, c)
            p_out[r] = (oR[body, r, 0] * frame_p[0] + oR[body, r, 1] * frame_p[1] + oR[body, r, 2] * frame_p[2]
                        + op[body, r])


# ----------------------------------------------------------------------------------------------
# Operational-space inertia, dynamically consistent pseudo-inverse, nullspace projector


@njit(cache=True, nogil=True)
def operational_space_inertia(M, J, damping, L, J_Minv, A, Lambda, J_bar):
    """Lambda = (J M^-1 J^T + damping^2 I)^-1 (m, m) and the dynamically consistent pseudo-inverse
    J_bar = M^-1 J^T Lambda (nv, m), for M (nv, nv) symmetric positive definite (crba's, rotors
    included) and J (m, nv) the task Jacobian (m = 6, or 3 for J's translational rows J[3:]).

    Damping: with J M^-1/2 = U S V^T, Lambda = U diag(1 / (s_i^2 + damping^2)) U^T. Near a singularity
    (s_i -> 0) the exact Lambda (damping = 0) grows as 1 / s_i^2, and so does the force it commands
    along the lost direction; the damped one stays below 1 / damping^2 and equals the exact one where
    s_i >> damping. damping = 0 is exact, and needs J of full row rank.

    Workspace: L (nv, nv), the Cholesky factor of M (lower triangle); J_Minv (m, nv) = J M^-1;
    A (m, m), the Cholesky factor of Lambda^-1. M and J are read only. False when M or
    Lambda^-1 is not positive definite (a singular J with damping 0) or the result is not finite."""
    nv = M.shape[0]
    m = J.shape[0]
    for r in range(nv):
        for c in range(nv):
            L[r, c] = M[r, c]
    if not cholesky_factor(L, L, 0.0):
        return False
    # Y = L^-1 J^T by rows of J_Minv, then Lambda^-1 = Y^T Y + d^2 I, then J M^-1 = (L^-T Y)^T
    for i in range(m):
        for c in range(nv):
            J_Minv[i, c] = J[i, c]
        forward_substitute(L, J_Minv[i])
    d2 = damping * damping
    for i in range(m):
        for k in range(i + 1):
            s = 0.0
            for c in range(nv):
                s += J_Minv[i, c] * J_Minv[k, c]
            A[i, k] = s
            A[k, i] = s
        A[i, i] += d2
    for i in range(m):
        back_substitute(L, J_Minv[i])
    if not cholesky_factor(A, A, 0.0):
        return False
    # Lambda = A^-1, column by column (rows: it is symmetric)
    for i in range(m):
        for k in range(m):
            Lambda[i, k] = 0.0
        Lambda[i, i] = 1.0
        forward_substitute(A, Lambda[i])
        back_substitute(A, Lambda[i])
    for i in range(m):  # symmetric to the last bit
        for k in range(i):
            s = 0.5 * (Lambda[i, k] + Lambda[k, i])
            Lambda[i, k] = s
            Lambda[k, i] = s
    # J_bar = (J M^-1)^T Lambda
    for r in range(nv):
        for i in range(m):
            s = 0.0
            for k in range(m):
                s += J_Minv[k, r] * Lambda[k, i]
            J_bar[r, i] = s
    return all_finite(Lambda) and all_finite(J_bar)


@njit(cache=True, nogil=True)
def nullspace_projector(J, J_bar, N):
    """N = I - J^T J_bar^T (nv, nv), the torque projector: N tau_0 produces no task-space force
    (J_bar^T N = 0 for damping 0), and N^T = I - J_bar J projects joint velocities onto J's
    nullspace. J (m, nv), J_bar (nv, m) from operational_space_inertia."""
    nv = J.shape[1]
    m = J.shape[0]
    for r in range(nv):
        for c in range(nv):
            s = 0.0
            for i in range(m):
                s += J[i, r] * J_bar[c, i]
            N[r, c] = (1.0 if r == c else 0.0) - s


@njit(cache=True, nogil=True)
def project_to_nullspace(J, J_bar, tau_0, task, out):
    """out = (I - J^T J_bar^T) tau_0 (nv,) without forming N: O(m nv). task (m,) workspace receives
    J_bar^T tau_0. out may be tau_0 itself."""
    nv = J.shape[1]
    m = J.shape[0]
    for i in range(m):
        s = 0.0
        for c in range(nv):
            s += J_bar[c, i] * tau_0[c]
        task[i] = s
    for r in range(nv):
        s = tau_0[r]
        for i in range(m):
            s -= J[i, r] * task[i]
        out[r] = s


# ----------------------------------------------------------------------------------------------
# Pose error, SO(3) log, quaternions

_SERIES_ANGLE = 1e-4    # below: angle / sin(angle) = 1 + angle^2 / 6 to float64 precision
_NEAR_PI_COS = -0.9     # cos(angle) below (angle above 2.69 rad): axis from the symmetric part


@njit(cache=True, nogil=True)
def _so3_log(m, w, h):
    """w[h:h+3] = log(R), the rotation vector (angle in [0, pi]) of R given row-major as the
    9-tuple m."""
    c = min(1.0, max(-1.0, 0.5 * (m[0] + m[4] + m[8] - 1.0)))
    s0, s1, s2 = m[7] - m[5], m[2] - m[6], m[3] - m[1]  # 2 sin(angle) axis
    s = 0.5 * math.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
    angle = math.atan2(s, c)
    if c > _NEAR_PI_COS:
        if angle < _SERIES_ANGLE:
            half_ratio = 0.5 * (1.0 + angle * angle / 6.0)
        else:
            half_ratio = 0.5 * angle / s
        w[h], w[h + 1], w[h + 2] = half_ratio * s0, half_ratio * s1, half_ratio * s2
        return
    # R + R^T = 2 c I + 2 (1 - c) a a^T: the axis from its largest diagonal entry, signed by R - R^T
    k = 0
    if m[4] > m[0]:
        k = 1
    if m[8] > m[4 * k]:
        k = 2
    one_c = 1.0 - c
    a_k = math.sqrt(max(0.0, (m[4 * k] - c) / one_c))
    scale = 1.0 / (2.0 * one_c * a_k)
    a0 = a_k if k == 0 else (m[k] + m[3 * k]) * scale
    a1 = a_k if k == 1 else (m[3 + k] + m[3 * k + 1]) * scale
    a2 = a_k if k == 2 else (m[6 + k] + m[3 * k + 2]) * scale
    if a0 * s0 + a1 * s1 + a2 * s2 < 0.0:
        angle = -angle
    w[h], w[h + 1], w[h + 2] = angle * a0, angle * a1, angle * a2


@njit(cache=True, nogil=True)
def rotation_log(R, w):
    """w (3,) = log(R): the rotation vector of R (3, 3), |w| in [0, pi], exp([w]) = R."""
    _so3_log((R[0, 0], R[0, 1], R[0, 2], R[1, 0], R[1, 1], R[1, 2], R[2, 0], R[2, 1], R[2, 2]), w, 0)


@njit(cache=True, nogil=True)
def pose_error(R, p, R_d, p_d, e):
    """e (6,) = [log(R R_d^T); p - p_d], the pose (R (3, 3), p (3,)) less the target (R_d, p_d),
    angular first, both halves in the root frame: R = exp([e_rot]) R_d, so e_rot is the rotation
    that takes the target's orientation to the frame's, in world axes. An angular velocity
    w = -k e_rot (k > 0, root frame) turns R toward R_d along the shortest rotation, as a velocity
    -k e_pos takes p to p_d: -K e is the restoring term of an impedance law in LOCAL_WORLD_ALIGNED
    coordinates. False when an input is not finite."""
    if not (all_finite(R) and all_finite(p) and all_finite(R_d) and all_finite(p_d)):
        return False
    _so3_log((_row_row(R, R_d, 0, 0), _row_row(R, R_d, 0, 1), _row_row(R, R_d, 0, 2),
              _row_row(R, R_d, 1, 0), _row_row(R, R_d, 1, 1), _row_row(R, R_d, 1, 2),
              _row_row(R, R_d, 2, 0), _row_row(R, R_d, 2, 1), _row_row(R, R_d, 2, 2)), e, 0)
    for r in range(3):
        e[3 + r] = p[r] - p_d[r]
    return True


@njit(cache=True, inline="always")
def _row_row(A, B, r, c):
    """(A B^T)[r, c] for 3x3 A, B."""
    return A[r, 0] * B[c, 0] + A[r, 1] * B[c, 1] + A[r, 2] * B[c, 2]


@njit(cache=True, nogil=True)
def quaternion_to_rotation(quaternion, R):
    """R (3, 3) of the unit quaternion (x, y, z, w) (4,) (geometry_msgs order), normalized first.
    False when its norm is zero or it is not finite."""
    x, y, z, w = quaternion[0], quaternion[1], quaternion[2], quaternion[3]
    n2 = x * x + y * y + z * z + w * w
    if not (n2 > 0.0 and n2 < math.inf):
        return False
    s = 2.0 / n2
    R[0, 0] = 1.0 - s * (y * y + z * z)
    R[0, 1] = s * (x * y - z * w)
    R[0, 2] = s * (x * z + y * w)
    R[1, 0] = s * (x * y + z * w)
    R[1, 1] = 1.0 - s * (x * x + z * z)
    R[1, 2] = s * (y * z - x * w)
    R[2, 0] = s * (x * z - y * w)
    R[2, 1] = s * (y * z + x * w)
    R[2, 2] = 1.0 - s * (x * x + y * y)
    return True


@njit(cache=True, nogil=True)
def rotation_to_quaternion(R, quaternion):
    """The unit quaternion (x, y, z, w) (4,) of the rotation R (3, 3), w >= 0 (Shepperd's method:
    from the largest of w^2, x^2, y^2, z^2)."""
    t = R[0, 0] + R[1, 1] + R[2, 2]
    if t >= R[0, 0] and t >= R[1, 1] and t >= R[2, 2]:
        r = math.sqrt(1.0 + t)
        f = 0.5 / r
        w, x, y, z = 0.5 * r, (R[2, 1] - R[1, 2]) * f, (R[0, 2] - R[2, 0]) * f, (R[1, 0] - R[0, 1]) * f
    elif R[0, 0] >= R[1, 1] and R[0, 0] >= R[2, 2]:
        r = math.sqrt(1.0 + 2.0 * R[0, 0] - t)
        f = 0.5 / r
        x, y, z, w = 0.5 * r, (R[0, 1] + R[1, 0]) * f, (R[0, 2] + R[2, 0]) * f, (R[2, 1] - R[1, 2]) * f
    elif R[1, 1] >= R[2, 2]:
        r = math.sqrt(1.0 + 2.0 * R[1, 1] - t)
        f = 0.5 / r
        x, y, z, w = (R[0, 1] + R[1, 0]) * f, 0.5 * r, (R[1, 2] + R[2, 1]) * f, (R[0, 2] - R[2, 0]) * f
    else:
        r = math.sqrt(1.0 + 2.0 * R[2, 2] - t)
        f = 0.5 / r
        x, y, z, w = (R[0, 2] + R[2, 0]) * f, (R[1, 2] + R[2, 1]) * f, 0.5 * r, (R[1, 0] - R[0, 1]) * f
    sign = -1.0 if w < 0.0 else 1.0
    quaternion[0], quaternion[1], quaternion[2], quaternion[3] = sign * x, sign * y, sign * z, sign * w
