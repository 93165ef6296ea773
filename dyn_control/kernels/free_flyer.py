"""A free-flyer root as six 1-DoF bodies (floating_base.py explains the construction): the tree's
inputs from a configuration q = [p (3); quaternion (x, y, z, w)], and the velocity-product
acceleration b(nu) of the six-body chain with its Jacobian.

The chain's joints k = 0..5 have the unit screws e_k ([w; v], angular first) at the root link's frame
and zero positions, so that its twist is nu = v[:6] and its acceleration sum_k e_k a_k + b(nu) with

    b(nu) = sum_{k < i} (e_k nu_k) x (e_i nu_i),       (the motion cross product of each pair)

the Coriolis term of the chain's forward pass; the floating base's acceleration a[:6] is the chain's
a_tree[:6] + b(nu).
"""
import math

from ..jit import njit
from ..model import FREE_FLYER_DOFS
from .kinematics import LOCAL, WORLD
from .task_space import quaternion_to_rotation

UNIT_TOLERANCE = 1e-9   # | |quaternion| - 1 | accepted in an input (configuration.normalize fixes the rest)


@njit(cache=True, inline="always")
def _unit_cross(k, i, scale, out):
    """out += scale e_k x e_i (motion cross product of unit screws, angular first)."""
    # [w1; v1] x [w2; v2] = [w1 x w2; w1 x v2 + v1 x w2]: unit axes a, b give a x b in the row block
    # of the result that the pair selects
    if k < 3 and i < 3:
        block, a, b = 0, k, i
    elif k < 3:
        block, a, b = 3, k, i - 3
    elif i < 3:
        block, a, b = 3, k - 3, i
    else:
        return
    c = 3 - a - b
    if a == b:
        return
    sign = 1.0 if (b - a) % 3 == 1 else -1.0  # x cross y = z, y cross z = x, z cross x = y
    out[block + c] += sign * scale


@njit(cache=True)
def bias_acceleration(nu, out):
    """out = b(nu) (6,), the chain's velocity-product acceleration (module docstring)."""
    for r in range(6):
        out[r] = 0.0
    for i in range(FREE_FLYER_DOFS):
        for k in range(i):
            _unit_cross(k, i, nu[k] * nu[i], out)


@njit(cache=True)
def add_bias_jacobian(nu, out):
    """out[:6, :6] += d b / d nu: column j = e_j x sum_{i > j} e_i nu_i + sum_{k < j} e_k nu_k x e_j."""
    for j in range(FREE_FLYER_DOFS):
        column = out[:FREE_FLYER_DOFS, j]
        for i in range(j + 1, FREE_FLYER_DOFS):
            _unit_cross(j, i, nu[i], column)
        for k in range(j):
            _unit_cross(k, j, nu[k], column)


@njit(cache=True)
def base_state(q, world_accel, R, p, base_accel, q_tree):
    """From q (nq,) of a free-flyer model: the root link's rotation R (3, 3) from its quaternion
    q[3:7] (x, y, z, w) and position p = q[:3] in the world, the base acceleration
    base_accel = R^T world_accel = [0; -R^T g] (the model's base acceleration [0; -g], gravity seen in
    the root link's frame) and the tree's joint positions q_tree = [0 (6); q[7:]]."""
    quaternion_to_rotation(q[3:7], R)
    for r in range(3):
        p[r] = q[r]
        base_accel[r] = 0.0
        base_accel[3 + r] = R[0, r] * world_accel[3] + R[1, r] * world_accel[4] + R[2, r] * world_accel[5]
    for k in range(FREE_FLYER_DOFS):
        q_tree[k] = 0.0
    for k in range(FREE_FLYER_DOFS, q_tree.shape[0]):
        q_tree[k] = q[k + 1]


@njit(cache=True)
def correct_derivatives(M, base_accel, nu, dq, dv, column):
    """The tree's d tau / dq and d tau / dv (nb, nb) as the free flyer's, in place (floating_base.py):
    dq[:, j] = M[:, :6] (a_g x e_j) and dv[:, j] -= M[:, :6] db/dnu_j for the root's six columns j;
    M the tree's M (nb, nb), base_accel a_g = [0; -R^T g]; column: scratch (2, 6)."""
    gravity_column, bias_column = column[0], column[1]
    for j in range(FREE_FLYER_DOFS):
        for r in range(6):
            gravity_column[r] = 0.0
            bias_column[r] = 0.0
        for k in range(FREE_FLYER_DOFS):
            _unit_cross(k, j, base_accel[k], gravity_column)
        for i in range(j + 1, FREE_FLYER_DOFS):
            _unit_cross(j, i, nu[i], bias_column)
        for k in range(j):
            _unit_cross(k, j, nu[k], bias_column)
        for r in range(M.shape[0]):
            g = 0.0
            b = 0.0
            for c in range(FREE_FLYER_DOFS):
                g += M[r, c] * gravity_column[c]
                b += M[r, c] * bias_column[c]
            dq[r, j] = g
            dv[r, j] -= b


@njit(cache=True)
def world_poses(R, p, poses):
    """poses (n, 4, 4) in the root link's frame (the tree's root frame) -> in the world, in place,
    the root link at (R, p)."""
    for f in range(poses.shape[0]):
        pose = poses[f]
        for c in range(4):
            x0, x1, x2 = pose[0, c], pose[1, c], pose[2, c]
            for r in range(3):
                pose[r, c] = R[r, 0] * x0 + R[r, 1] * x1 + R[r, 2] * x2 + (p[r] if c == 3 else 0.0)


@njit(cache=True)
def world_jacobian(R, p, reference, J):
    """A frame Jacobian J (6, nv) of the tree (root-link frame) -> the world's, in place: rows rotated
    by R for WORLD and LOCAL_WORLD_ALIGNED (kernels/kinematics.py), plus p x (angular rows) in the
    linear rows for WORLD (Ad_T J); LOCAL unchanged."""
    if reference == LOCAL:
        return
    for c in range(J.shape[1]):
        w0, w1, w2, v0, v1, v2 = J[0, c], J[1, c], J[2, c], J[3, c], J[4, c], J[5, c]
        for r in range(3):
            J[r, c] = R[r, 0] * w0 + R[r, 1] * w1 + R[r, 2] * w2
            J[3 + r, c] = R[r, 0] * v0 + R[r, 1] * v1 + R[r, 2] * v2
        if reference == WORLD:
            a0, a1, a2 = J[0, c], J[1, c], J[2, c]
            J[3, c] += p[1] * a2 - p[2] * a1
            J[4, c] += p[2] * a0 - p[0] * a2
            J[5, c] += p[0] * a1 - p[1] * a0


@njit(cache=True)
def correct_forward_derivatives(base_accel, nu, ddq, da_dq, da_dv, column):
    """The tree's forward dynamics and its derivatives (nb, nb) as the free flyer's, in place:
    ddq[:6] += b(nu); the root's tangent columns of da_dq are -[a_g x e_j; 0] (gravity turns with the
    root, -M^-1 M[:, :6] ad(a_g)); da_dv[:6, :6] += db/dnu. base_accel a_g = [0; -R^T g]; column:
    scratch (6,)."""
    bias_acceleration(nu, column)
    for r in range(FREE_FLYER_DOFS):
        ddq[r] += column[r]
    for j in range(FREE_FLYER_DOFS):
        for r in range(da_dq.shape[0]):
            da_dq[r, j] = 0.0
        for r in range(6):
            column[r] = 0.0
        for k in range(FREE_FLYER_DOFS):
            _unit_cross(k, j, base_accel[k], column)
        for r in range(6):
            da_dq[r, j] = -column[r]
            column[r] = 0.0
        for i in range(j + 1, FREE_FLYER_DOFS):
            _unit_cross(j, i, nu[i], column)
        for k in range(j):
            _unit_cross(k, j, nu[k], column)
        for r in range(6):
            da_dv[r, j] += column[r]


SERIES_ANGLE = 1e-4   # [rad] below this angle, the closed forms' Taylor series


@njit(cache=True)
def exp_pose(xi, quaternion, translation):
    """exp(xi) of xi = [w; v] (6,) as a unit quaternion (x, y, z, w) (4,) and a translation V(w) v (3,)."""
    w0, w1, w2 = xi[0], xi[1], xi[2]
    angle = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    if angle < SERIES_ANGLE:
        sinc_half = 0.5 - angle * angle / 48.0                    # sin(a / 2) / a
        b, c = 0.5 - angle * angle / 24.0, 1.0 / 6.0 - angle * angle / 120.0
    else:
        sinc_half = math.sin(0.5 * angle) / angle
        b, c = (1.0 - math.cos(angle)) / angle ** 2, (angle - math.sin(angle)) / angle ** 3
    quaternion[0], quaternion[1], quaternion[2] = sinc_half * w0, sinc_half * w1, sinc_half * w2
    quaternion[3] = math.cos(0.5 * angle)
    # V(w) v = v + b w x v + c w x (w x v)
    v0, v1, v2 = xi[3], xi[4], xi[5]
    x0, x1, x2 = w1 * v2 - w2 * v1, w2 * v0 - w0 * v2, w0 * v1 - w1 * v0
    y0, y1, y2 = w1 * x2 - w2 * x1, w2 * x0 - w0 * x2, w0 * x1 - w1 * x0
    translation[0] = v0 + b * x0 + c * y0
    translation[1] = v1 + b * x1 + c * y1
    translation[2] = v2 + b * x2 + c * y2


@njit(cache=True, inline="always")
def log_pose(x, y, z, qw, p0, p1, p2, out):
    """xi = [w; v] (6,) with exp(xi) the pose (unit quaternion (x, y, z, qw), p), angle in [0, pi]."""
    if qw < 0.0:    # the same rotation, with the angle in [0, pi]
        x, y, z, qw = -x, -y, -z, -qw
    s = math.sqrt(x * x + y * y + z * z)
    angle = 2.0 * math.atan2(s, qw)
    scale = 2.0 / qw * (1.0 - s * s / (3.0 * qw * qw)) if s < SERIES_ANGLE else angle / s
    w0, w1, w2 = scale * x, scale * y, scale * z
    if angle < SERIES_ANGLE:
        d = 1.0 / 12.0 + angle * angle / 720.0
    else:
        d = (1.0 - angle * math.sin(angle) / (2.0 * (1.0 - math.cos(angle)))) / angle ** 2
    # V(w)^-1 p = p - w x p / 2 + d w x (w x p)
    x0, x1, x2 = w1 * p2 - w2 * p1, w2 * p0 - w0 * p2, w0 * p1 - w1 * p0
    y0, y1, y2 = w1 * x2 - w2 * x1, w2 * x0 - w0 * x2, w0 * x1 - w1 * x0
    out[0], out[1], out[2] = w0, w1, w2
    out[3] = p0 - 0.5 * x0 + d * y0
    out[4] = p1 - 0.5 * x1 + d * y1
    out[5] = p2 - 0.5 * x2 + d * y2


@njit(cache=True, inline="always")
def _quaternion_product(a, b, out):
    ax, ay, az, aw = a[0], a[1], a[2], a[3]
    bx, by, bz, bw = b[0], b[1], b[2], b[3]
    out[0] = aw * bx + ax * bw + ay * bz - az * by
    out[1] = aw * by - ax * bz + ay * bw + az * bx
    out[2] = aw * bz + ax * by - ay * bx + az * bw
    out[3] = aw * bw - ax * bx - ay * by - az * bz


@njit(cache=True)
def integrate(q, v, out):
    """out = integrate(q, v) (nq,) of a free-flyer configuration: T(q) exp(v[:6]), joints q + v
    (configuration.py)."""
    exp_pose(v, out[3:7], out[:3])      # exp(v[:6]) in out first: (quaternion, translation)
    x, y, z, w = q[3], q[4], q[5], q[6]
    # q's position plus R(q) translation, the rotation of a unit quaternion
    t0, t1, t2 = out[0], out[1], out[2]
    out[0] = q[0] + (1 - 2 * (y * y + z * z)) * t0 + 2 * (x * y - z * w) * t1 + 2 * (x * z + y * w) * t2
    out[1] = q[1] + 2 * (x * y + z * w) * t0 + (1 - 2 * (x * x + z * z)) * t1 + 2 * (y * z - x * w) * t2
    out[2] = q[2] + 2 * (x * z - y * w) * t0 + 2 * (y * z + x * w) * t1 + (1 - 2 * (x * x + y * y)) * t2
    _quaternion_product(q[3:7], out[3:7], out[3:7])     # reads both factors before it writes
    norm = math.sqrt(out[3] ** 2 + out[4] ** 2 + out[5] ** 2 + out[6] ** 2)
    for r in range(3, 7):
        out[r] /= norm
    for k in range(7, q.shape[0]):
        out[k] = q[k] + v[k - 1]


@njit(cache=True)
def difference(q0, q1, out):
    """out = difference(q0, q1) (nv,) of free-flyer configurations: log(T(q0)^-1 T(q1)), joints
    q1 - q0 (configuration.py)."""
    x, y, z, w = q0[3], q0[4], q0[5], q0[6]
    d0, d1, d2 = q1[0] - q0[0], q1[1] - q0[1], q1[2] - q0[2]
    bx, by, bz, bw = q1[3], q1[4], q1[5], q1[6]
    # log of (conj(q0) (x) q1, R(q0)^T d)
    log_pose(w * bx - x * bw - y * bz + z * by, w * by + x * bz - y * bw - z * bx,
             w * bz - x * by + y * bx - z * bw, w * bw + x * bx + y * by + z * bz,
             (1 - 2 * (y * y + z * z)) * d0 + 2 * (x * y + z * w) * d1 + 2 * (x * z - y * w) * d2,
             2 * (x * y - z * w) * d0 + (1 - 2 * (x * x + z * z)) * d1 + 2 * (y * z + x * w) * d2,
             2 * (x * z + y * w) * d0 + 2 * (y * z - x * w) * d1 + (1 - 2 * (x * x + y * y)) * d2, out)
    for k in range(7, q0.shape[0]):
        out[k - 1] = q1[k] - q0[k]


OK = 0          # checked_integrate / checked_difference: done
REFUSED = 1     # sizes, a non-finite entry or a non-unit quaternion: configuration.py names it


@njit(cache=True, inline="always")
def _configuration_fits(q, nq):
    if q.shape[0] != nq:
        return False
    for k in range(nq):
        if not math.isfinite(q[k]):
            return False
    return abs(math.sqrt(q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6]) - 1.0) <= UNIT_TOLERANCE


@njit(cache=True, _nrt=False)
def checked_integrate(q, v, out):
    """integrate (out: nq) for checked-or-not inputs: REFUSED unless they fit."""
    nq = out.shape[0]
    if not (_configuration_fits(q, nq) and v.shape[0] == nq - 1):
        return REFUSED
    for k in range(nq - 1):
        if not math.isfinite(v[k]):
            return REFUSED
    integrate(q, v, out)
    return OK


@njit(cache=True, _nrt=False)
def checked_difference(q0, q1, out):
    """difference (out: nv) for checked-or-not inputs: REFUSED unless they fit."""
    nq = out.shape[0] + 1
    if not (_configuration_fits(q0, nq) and _configuration_fits(q1, nq)):
        return REFUSED
    difference(q0, q1, out)
    return OK
