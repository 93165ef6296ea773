"""Configuration spaces: integrate, difference and their Jacobians, neutral, normalize and random
configurations, for every model (Pinocchio's integrate, difference, dIntegrate, dDifference, neutral,
normalize, randomConfiguration).

A fixed-base model's q is a vector: integrate(q, v) = q + v. A free flyer's pose (floating_base.py:
q[:7] = [p; quaternion (x, y, z, w)]) moves on SE(3) in its own frame, as Pinocchio's:

    T(integrate(q, v)) = T(q) exp(v[:6]),      v[:6] = [w; v] angular first,
    difference(q0, q1)[:6] = log(T(q0)^-1 T(q1)),

the joints after it as vectors. The Jacobians are those of this parametrization (the tangent space
the package's derivatives with respect to q use), with the right Jacobian of SE(3)'s exponential
J_r(xi) = sum_k (-ad_xi)^k / (k + 1)!:

    d integrate / d q = Ad(exp(v)^-1),   d integrate / d v = J_r(v),
    d difference / d q1 = J_r(xi)^-1,    d difference / d q0 = -J_r(xi)^-1 Ad(exp(xi)^-1),  xi = difference.
"""
import numpy as np
import scipy.linalg

from .floating_base import check_quaternion
from .model import FREE_FLYER_DOFS, Model, as_real_array
from .spatial import Ad, ad

_SERIES = 1e-4   # [rad] below this angle, the closed forms' series
RANDOM_RANGE = 1e3  # joint limits beyond +-RANDOM_RANGE count as none in random_configuration


def _model(model):
    if not isinstance(model, Model):
        raise ValueError(f"model must be a dyn_control.Model, got {type(model).__name__}")
    return model


def _configuration(model, name, q):
    """q as a finite float64 (nq,) array; a free flyer's quaternion a unit one, else a ValueError."""
    x = as_real_array(name, q, f"an array of {model.nq} real numbers")
    if x.shape != (model.nq,):
        raise ValueError(f"{name} must have shape ({model.nq},), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} has non-finite entries (NaN or inf) at indices {np.flatnonzero(~np.isfinite(x)).tolist()}")
    if model.root_joint is not None:
        check_quaternion(name, x)
    return x


def _tangent(model, name, v):
    x = as_real_array(name, v, f"an array of {model.nv} real numbers")
    if x.shape != (model.nv,):
        raise ValueError(f"{name} must have shape ({model.nv},), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} has non-finite entries (NaN or inf) at indices {np.flatnonzero(~np.isfinite(x)).tolist()}")
    return x


# ----------------------------------------------------------------------------------------------
# SE(3) with unit quaternions (x, y, z, w)


def _quaternion_product(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


def _rotation(quaternion):
    x, y, z, w = quaternion
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _skew(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _exp(xi):
    """(quaternion, translation) of exp(xi), xi = [w; v]: exp([w]) as a unit quaternion, and V(w) v."""
    w, v = xi[:3], xi[3:]
    angle = float(np.linalg.norm(w))
    half = 0.5 * angle
    sinc_half = 0.5 - angle * angle / 48.0 if angle < _SERIES else np.sin(half) / angle  # sin(a/2) / a
    quaternion = np.array([*(sinc_half * w), np.cos(half)])
    W = _skew(w)
    if angle < _SERIES:
        b, c = 0.5 - angle * angle / 24.0, 1.0 / 6.0 - angle * angle / 120.0
    else:
        b, c = (1.0 - np.cos(angle)) / angle ** 2, (angle - np.sin(angle)) / angle ** 3
    return quaternion, v + b * (W @ v) + c * (W @ (W @ v))


def _log(quaternion, p):
    """xi = [w; v] with exp(xi) the pose (quaternion, p); the rotation angle in [0, pi]."""
    if quaternion[3] < 0.0:
        quaternion = -quaternion      # the same rotation, with the angle in [0, pi]
    s = float(np.linalg.norm(quaternion[:3]))
    angle = 2.0 * np.arctan2(s, quaternion[3])
    w = (2.0 / quaternion[3] * (1.0 - s * s / (3.0 * quaternion[3] ** 2)) if s < _SERIES else angle / s) * quaternion[:3]
    W = _skew(w)
    if angle < _SERIES:
        d = 1.0 / 12.0 + angle * angle / 720.0
    else:
        d = (1.0 - angle * np.sin(angle) / (2.0 * (1.0 - np.cos(angle)))) / angle ** 2
    return np.concatenate([w, p - 0.5 * (W @ p) + d * (W @ (W @ p))])


def _right_jacobian(xi):
    """J_r(xi) = sum_k (-ad_xi)^k / (k + 1)!, the top-right block of expm([[-ad_xi, I], [0, 0]])."""
    block = np.zeros((12, 12))
    block[:6, :6] = -ad(np.ascontiguousarray(xi))
    block[:6, 6:] = np.eye(6)
    return scipy.linalg.expm(block)[:6, 6:]


def _inverse_adjoint(quaternion, p):
    """Ad(T^-1) (6, 6) of T = (quaternion, p)."""
    R = _rotation(quaternion)
    return Ad(np.ascontiguousarray(R.T), np.ascontiguousarray(-R.T @ p))


# ----------------------------------------------------------------------------------------------
# Public API


def neutral(model):
    """The neutral configuration (nq,): joints at zero (inside their limits), a free flyer at the
    world's origin with the identity orientation (quaternion (0, 0, 0, 1))."""
    return _model(model).neutral_configuration()


def normalize(model, q):
    """q (nq,) with a free flyer's quaternion scaled to unit norm (a copy; a fixed-base q unchanged).
    A zero or non-finite quaternion is a ValueError."""
    model = _model(model)
    x = as_real_array("q", q, f"an array of {model.nq} real numbers").copy()
    if x.shape != (model.nq,):
        raise ValueError(f"q must have shape ({model.nq},), got {x.shape}")
    if model.root_joint is not None:
        norm = float(np.linalg.norm(x[3:7]))
        if not (norm > 0.0 and np.isfinite(norm)):
            raise ValueError(f"q[3:7], the free flyer's quaternion, cannot be normalized: {x[3:7].tolist()}")
        x[3:7] /= norm
    return x


def random_configuration(model, rng=None, position_range=1.0):
    """A random configuration (nq,): each joint uniform within its limits (a limit that is infinite, or
    beyond +-RANDOM_RANGE as URDFs write "none", is 2 pi from the other, [-pi, pi] without either); a free flyer at a position uniform in [-position_range, position_range]^3
    with an orientation uniform on SO(3). rng: a numpy Generator, or a seed."""
    model = _model(model)
    rng = np.random.default_rng(rng)
    start = FREE_FLYER_DOFS if model.root_joint is not None else 0
    lower, upper = model.lower[start:], model.upper[start:]
    # a side without a limit (or one beyond +-RANDOM_RANGE) lies 2 pi from the other, or at -pi, pi where
    # neither side has one
    has_lower, has_upper = np.abs(lower) <= RANDOM_RANGE, np.abs(upper) <= RANDOM_RANGE
    low = np.where(has_lower, lower, np.where(has_upper, upper - 2 * np.pi, -np.pi))
    high = np.where(has_upper, upper, np.where(has_lower, lower + 2 * np.pi, np.pi))
    joints = rng.uniform(low, high)
    if model.coupling is not None:
        joints = joints[[model.joint_names.index(n) for n in model.actuated_joints]]
    if model.root_joint is None:
        return joints
    quaternion = rng.normal(size=4)
    quaternion /= np.linalg.norm(quaternion)
    return np.concatenate([rng.uniform(-position_range, position_range, 3), quaternion, joints])


def integrate(model, q, v):
    """The configuration reached from q (nq,) moving with velocity v (nv,) for unit time (module
    docstring)."""
    model = _model(model)
    q, v = _configuration(model, "q", q), _tangent(model, "v", v)
    if model.root_joint is None:
        return q + v
    quaternion, p = _exp(v[:6])
    out = np.empty(model.nq)
    out[:3] = q[:3] + _rotation(q[3:7]) @ p
    out[3:7] = _quaternion_product(q[3:7], quaternion)
    out[3:7] /= np.linalg.norm(out[3:7])
    out[7:] = q[7:] + v[6:]
    return out


def difference(model, q0, q1):
    """The velocity v (nv,) with integrate(q0, v) = q1 (module docstring)."""
    model = _model(model)
    q0, q1 = _configuration(model, "q0", q0), _configuration(model, "q1", q1)
    if model.root_joint is None:
        return q1 - q0
    conjugate = np.array([-q0[3], -q0[4], -q0[5], q0[6]])
    relative = _quaternion_product(conjugate, q1[3:7])
    p = _rotation(q0[3:7]).T @ (q1[:3] - q0[:3])
    return np.concatenate([_log(relative, p), q1[7:] - q0[7:]])


def integrate_jacobians(model, q, v):
    """(d integrate / d q, d integrate / d v), each (nv, nv), in the tangent spaces of q and of the
    result (module docstring)."""
    model = _model(model)
    q, v = _configuration(model, "q", q), _tangent(model, "v", v)
    d_q, d_v = np.eye(model.nv), np.eye(model.nv)
    if model.root_joint is not None:
        d_q[:6, :6] = _inverse_adjoint(*_exp(v[:6]))
        d_v[:6, :6] = _right_jacobian(v[:6])
    return d_q, d_v


def difference_jacobians(model, q0, q1):
    """(d difference / d q0, d difference / d q1), each (nv, nv) (module docstring)."""
    model = _model(model)
    q0, q1 = _configuration(model, "q0", q0), _configuration(model, "q1", q1)
    d_q0, d_q1 = -np.eye(model.nv), np.eye(model.nv)
    if model.root_joint is not None:
        xi = difference(model, q0, q1)[:6]
        inverse = np.linalg.inv(_right_jacobian(xi))
        d_q1[:6, :6] = inverse
        d_q0[:6, :6] = -inverse @ _inverse_adjoint(*_exp(xi))
    return d_q0, d_q1
