"""Forward kinematics and frame Jacobians."""
import numpy as np

from ..jit import njit
from ..spatial import compose_into, motion_to_parent, screw_exp_into
from .inputs import all_finite


@njit(cache=True, forceinline=True)
def revolute_axis(screw):
    """0, 1 or 2 (times the sign, +1 offset: +-1, +-2, +-3) when the screw is a pure rotation about
    a coordinate axis through the origin, else 0: the common case gets a cheaper transform."""
    if screw[3] != 0.0 or screw[4] != 0.0 or screw[5] != 0.0:
        return 0
    for k in range(3):
        if screw[k] == 1.0 or screw[k] == -1.0:
            if screw[(k + 1) % 3] == 0.0 and screw[(k + 2) % 3] == 0.0:
                return int(screw[k]) * (k + 1)
    return 0


@njit(cache=True, inline="always")
def joint_transform(screw, home_R, home_p, q_i, R, p):
    """(R, p) = M_i exp([S_i] q_i) for one body, M_i = (home_R, home_p)."""
    axis = revolute_axis(screw)
    if axis != 0:
        # rotation about coordinate axis k: two columns of the home rotation turn, one stays
        k = abs(axis) - 1
        a = (k + 1) % 3
        b = (k + 2) % 3
        c = np.cos(q_i)
        s = np.sin(q_i) if axis > 0 else -np.sin(q_i)
        for r in range(3):
            h_a = home_R[r, a]
            h_b = home_R[r, b]
            R[r, k] = home_R[r, k]
            R[r, a] = c * h_a + s * h_b
            R[r, b] = c * h_b - s * h_a
            p[r] = home_p[r]
        return
    # general screw: exp([S_i] q_i) into (R, p) first, then premultiply by M_i
    screw_exp_into(screw, q_i, R, p)
    compose_into(home_R, home_p, R, p, R, p)


@njit(cache=True, forceinline=True)
def joint_transforms(screw_axes, home_R, home_p, q, R, p):
    """T_{parent,i}(q) = M_i exp([S_i] q_i) for every body, into (R, p)."""
    for i in range(q.shape[0]):
        joint_transform(screw_axes[i], home_R[i], home_p[i], q[i], R[i], p[i])


@njit(cache=True, inline="always")
def support_path(parents, body, path, n):
    """path[n:] = `body` and the bodies supporting it, body first (none for -1); returns the new n."""
    j = body
    while j >= 0:
        path[n] = j
        n += 1
        j = parents[j]
    return n


@njit(cache=True, forceinline=True)
def support_poses(parents, screw_axes, home_R, home_p, q, body, path, R, p, oR, op):
    """World poses (oR, op) of `body` and the bodies supporting it only (what its Jacobian needs);
    path receives them, body first."""
    n = support_path(parents, body, path, 0)
    for k in range(n - 1, -1, -1):
        i = path[k]
        joint_transform(screw_axes[i], home_R[i], home_p[i], q[i], R[i], p[i])
        world_pose(i, parents, R, p, oR, op)


@njit(cache=True, inline="always")
def world_pose(i, parents, R, p, oR, op):
    """Body i's pose in the root frame from its parent's: oT_i = oT_parent T_{parent,i}."""
    j = parents[i]
    if j < 0:
        for r in range(3):
            for c in range(3):
                oR[i, r, c] = R[i, r, c]
            op[i, r] = p[i, r]
    else:
        compose_into(oR[j], op[j], R[i], p[i], oR[i], op[i])


@njit(cache=True, forceinline=True)
def world_poses(parents, R, p, oR, op):
    """Body poses in the root frame, root first."""
    for i in range(parents.shape[0]):
        world_pose(i, parents, R, p, oR, op)


@njit(cache=True, forceinline=True)
def body_poses(parents, screw_axes, home_R, home_p, q, R, p, oR, op):
    """Every body's pose in its parent's frame (R, p) and in the root frame (oR, op)."""
    joint_transforms(screw_axes, home_R, home_p, q, R, p)
    world_poses(parents, R, p, oR, op)


@njit(cache=True, forceinline=True)
def forward_kinematics(parents, screw_axes, home_R, home_p, frame_body, frame_R, frame_p, q, R, p,
                       oR, op, out):
    """World poses of all bodies (oR, op) and frames (out, 4x4); False if q or the poses are not finite."""
    if not all_finite(q):
        return False
    joint_transforms(screw_axes, home_R, home_p, q, R, p)
    world_poses(parents, R, p, oR, op)
    frame_poses(frame_body, frame_R, frame_p, oR, op, out)
    return all_finite(out)


@njit(cache=True, forceinline=True)
def frame_poses(frame_body, frame_R, frame_p, oR, op, out):
    """World 4x4 poses of all frames: the body's pose times the frame's placement on it."""
    for f in range(frame_body.shape[0]):
        b = frame_body[f]
        T = out[f]
        if b < 0:
            for r in range(3):
                for c in range(3):
                    T[r, c] = frame_R[f, r, c]
                T[r, 3] = frame_p[f, r]
        else:
            # the placement in locals: the compiler cannot tell that the stores to out leave it be
            a00, a01, a02 = frame_R[f, 0, 0], frame_R[f, 0, 1], frame_R[f, 0, 2]
            a10, a11, a12 = frame_R[f, 1, 0], frame_R[f, 1, 1], frame_R[f, 1, 2]
            a20, a21, a22 = frame_R[f, 2, 0], frame_R[f, 2, 1], frame_R[f, 2, 2]
            b0, b1, b2 = frame_p[f, 0], frame_p[f, 1], frame_p[f, 2]
            for r in range(3):
                h0, h1, h2 = oR[b, r, 0], oR[b, r, 1], oR[b, r, 2]
                T[r, 0] = h0 * a00 + h1 * a10 + h2 * a20
                T[r, 1] = h0 * a01 + h1 * a11 + h2 * a21
                T[r, 2] = h0 * a02 + h1 * a12 + h2 * a22
                T[r, 3] = h0 * b0 + h1 * b1 + h2 * b2 + op[b, r]
        T[3, 0] = 0.0
        T[3, 1] = 0.0
        T[3, 2] = 0.0
        T[3, 3] = 1.0


@njit(cache=True, forceinline=True)
def world_jacobian(parents, screw_axes, oR, op, body, J):
    """Columns oS_j = Ad_{oT_j} S_j for the joints j supporting `body` (zero elsewhere): the
    spatial velocity of the body in the root frame, at the root origin, is J v."""
    J[:, :] = 0.0
    j = body
    while j >= 0:
        motion_to_parent(oR[j], op[j], screw_axes[j], J[:, j])
        j = parents[j]


WORLD = 0
LOCAL = 1
LOCAL_WORLD_ALIGNED = 2


@njit(cache=True, forceinline=True)
def frame_jacobian(parents, screw_axes, home_R, home_p, q, path, R, p, oR, op, body, frame_R, frame_p,
                   reference, J):
    """6 x nb Jacobian of a frame placed at (frame_R, frame_p) on `body`, angular rows first:
    WORLD: spatial velocity in the root frame at the root origin; LOCAL: twist in the frame;
    LOCAL_WORLD_ALIGNED: angular velocity and the frame origin's velocity, in root axes.
    Returns False, computing nothing, when q is not finite, and False when J is not."""
    if not all_finite(q):
        return False
    if body >= 0:
        support_poses(parents, screw_axes, home_R, home_p, q, body, path, R, p, oR, op)
    _frame_jacobian(parents, screw_axes, oR, op, body, frame_R, frame_p, reference, J)
    return all_finite(J)


@njit(cache=True, forceinline=True)
def _frame_jacobian(parents, screw_axes, oR, op, body, frame_R, frame_p, reference, J):
    J[:, :] = 0.0
    if body < 0:
        return
    world_jacobian(parents, screw_axes, oR, op, body, J)
    if reference == WORLD:
        return
    # frame origin and rotation in the root frame
    o0 = oR[body, 0, 0] * frame_p[0] + oR[body, 0, 1] * frame_p[1] + oR[body, 0, 2] * frame_p[2] + op[body, 0]
    o1 = oR[body, 1, 0] * frame_p[0] + oR[body, 1, 1] * frame_p[1] + oR[body, 1, 2] * frame_p[2] + op[body, 1]
    o2 = oR[body, 2, 0] * frame_p[0] + oR[body, 2, 1] * frame_p[1] + oR[body, 2, 2] * frame_p[2] + op[body, 2]
    j = body
    while j >= 0:
        w0, w1, w2 = J[0, j], J[1, j], J[2, j]
        # velocity of the point at the frame origin: v0 + w x o
        u0 = J[3, j] + w1 * o2 - w2 * o1
        u1 = J[4, j] + w2 * o0 - w0 * o2
        u2 = J[5, j] + w0 * o1 - w1 * o0
        if reference == LOCAL_WORLD_ALIGNED:
            J[3, j], J[4, j], J[5, j] = u0, u1, u2
        else:
            # rotate into the frame: R_f^T = (oR_b frame_R)^T
            for r in range(3):
                c0 = (oR[body, 0, 0] * frame_R[0, r] + oR[body, 0, 1] * frame_R[1, r]
                      + oR[body, 0, 2] * frame_R[2, r])
                c1 = (oR[body, 1, 0] * frame_R[0, r] + oR[body, 1, 1] * frame_R[1, r]
                      + oR[body, 1, 2] * frame_R[2, r])
                c2 = (oR[body, 2, 0] * frame_R[0, r] + oR[body, 2, 1] * frame_R[1, r]
                      + oR[body, 2, 2] * frame_R[2, r])
                J[r, j] = c0 * w0 + c1 * w1 + c2 * w2
                J[3 + r, j] = c0 * u0 + c1 * u1 + c2 * u2
        j = parents[j]
