"""Configuration spaces: integrate, difference and their Jacobians, neutral, normalize and random
configurations, for every model (Pinocchio's integrate, difference, dIntegrate, dDifference, neutral,
normalize, randomConfiguration).

A fixed-base model's q is a vector: integrate(q, v) = q + v. A free flyer's pose (floating_base.py:
q[:7] = [p; quaternion (x, y, z, w)]) moves on SE(3) in its own frame, as Pinocchio's:

    T(integrate(q, v)) = T(q) exp(v[:6]),      v[:6] = [w; v] angular first,
    difference(q0, q1)[:6] = log(T(q0)^-1 T(q1)),

the joints after it as vectors. A multi-DoF joint (multi_dof.py) moves likewise on its kind's subgroup
(SO(3), SE(2) or SE(3)) in its own frame, computed as that subgroup's elements of SE(3). The Jacobians are those of this parametrization (the tangent space
the package's derivatives with respect to q use), with the right Jacobian of SE(3)'s exponential
J_r(xi) = sum_k (-ad_xi)^k / (k + 1)!:

    d integrate / d q = Ad(exp(v)^-1),   d integrate / d v = J_r(v),
    d difference / d q1 = J_r(xi)^-1,    d difference / d q0 = -J_r(xi)^-1 Ad(exp(xi)^-1),  xi = difference.
"""
from typing import Callable, NamedTuple

import numpy as np
import scipy.linalg

from . import multi_dof as _multi
from .dynamics import _FAST_REFUSED, as_vector, compiled_call, strict
from .floating_base import check_quaternion
from .kernels import free_flyer as _ff
from .kernels import multi_dof as _kernel
from .kernels.inputs import all_finite
from .model import FREE_FLYER_DOFS, MULTI_DOF_SCREWS, PLANAR, SPHERICAL, Model, as_real_array
from .spatial import Ad, ad

RANDOM_RANGE = 1e3  # joint limits beyond +-RANDOM_RANGE count as none in random_configuration


def _model(model):
    if not isinstance(model, Model):
        raise ValueError(f"model must be a dyn_control.Model, got {type(model).__name__}")
    return model


def _vector(name, x, n):
    """x as a finite float64 (n,) array, else a ValueError naming it."""
    x = as_vector(name, x, n)
    if not all_finite(x):
        bad = np.flatnonzero(~np.isfinite(x)).tolist()
        raise ValueError(f"{name} has non-finite entries (NaN or inf) at indices {bad}")
    return x


def checked_configuration(model, name, q):
    """q (nq,) finite, a free flyer's and multi-DoF joints' quaternions (and planar (cos, sin)) unit
    ones, else a ValueError naming it."""
    x = _vector(name, q, model.nq)
    if model.root_joint is not None:
        check_quaternion(name, x)
    _multi.check_configuration(model, name, x)
    return x


def _tangent(model, name, v):
    return _vector(name, v, model.nv)


# ----------------------------------------------------------------------------------------------
# SE(3) with unit quaternions (x, y, z, w)


def _exp(xi):
    """(quaternion, translation) of exp(xi), xi = [w; v] (kernels/free_flyer.py)."""
    quaternion, translation = np.empty(4), np.empty(3)
    _ff.exp_pose(np.ascontiguousarray(xi), quaternion, translation)
    return quaternion, translation


def _rotation(quaternion):
    x, y, z, w = quaternion
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


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
    for joint in model.multi_dof_joints:
        part = _multi.rotation_part(joint)
        norm = float(np.linalg.norm(x[part]))
        if not (norm > 0.0 and np.isfinite(norm)):
            raise ValueError(f"q[{part.start}:{part.stop}] of joint {joint.name!r} cannot be normalized: "
                             f"{x[part].tolist()}")
        x[part] /= norm
    return x


def random_configuration(model, rng=None, position_range=1.0):
    """A random configuration (nq,): each joint uniform within its limits (a limit that is infinite, or
    beyond +-RANDOM_RANGE as URDFs write "none", is 2 pi from the other, [-pi, pi] without either); a
    free flyer at a position uniform in [-position_range, position_range]^3 with an orientation
    uniform on SO(3). rng: a numpy Generator, or a seed."""
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
    if model.multi_dof_joints:
        return _random_multi_dof(model, rng, position_range, np.concatenate([np.zeros(start), joints]))
    if model.coupling is not None:
        joints = joints[[model.joint_names.index(n) for n in model.actuated_joints]]
    if model.root_joint is None:
        return joints
    quaternion = rng.normal(size=4)
    quaternion /= np.linalg.norm(quaternion)
    return np.concatenate([rng.uniform(-position_range, position_range, 3), quaternion, joints])


def _random_orientation(rng):
    quaternion = rng.normal(size=4)
    return quaternion / np.linalg.norm(quaternion)


def _random_multi_dof(model, rng, position_range, joints):
    """random_configuration of a model with multi-DoF joints, from the 1-DoF joints' values (nbodies,):
    a quaternion uniform on SO(3), a position uniform in [-position_range, position_range] per axis,
    a planar heading uniform in [-pi, pi]."""
    q = np.empty(model.nq)
    q_index, v_index, _ = _multi.layout(model)
    q[q_index] = joints[v_index]
    if model.root_joint is not None:
        q[:7] = np.concatenate([rng.uniform(-position_range, position_range, 3), _random_orientation(rng)])
    for joint in model.multi_dof_joints:
        part = slice(joint.q_index, joint.q_index + joint.nq)
        if joint.kind == SPHERICAL:
            q[part] = _random_orientation(rng)
        elif joint.kind == PLANAR:
            angle = rng.uniform(-np.pi, np.pi)
            q[part] = [*rng.uniform(-position_range, position_range, 2), np.cos(angle), np.sin(angle)]
        else:
            q[part] = [*rng.uniform(-position_range, position_range, 3), *_random_orientation(rng)]
    return q


class _Operation(NamedTuple):
    """integrate or difference: the free flyer's kernel (and its strict twin for arguments as given),
    the result's size (nq or nv), whether the second argument is a configuration, and the fixed-base
    result of the two vectors."""
    kernel: Callable
    fast_kernel: Callable
    size: str
    second_is_configuration: bool
    vectors: Callable


_INTEGRATE = _Operation(_ff.checked_integrate, strict(_ff.checked_integrate), "nq", False, lambda q, v: q + v)
_DIFFERENCE = _Operation(_ff.checked_difference, strict(_ff.checked_difference), "nv", True,
                         lambda q0, q1: q1 - q0)


def _group_operation(model, operation, first, second):
    """operation's result for the named arguments first and second ((name, value) each): a free
    flyer's by the compiled kernel on the arguments as given when they fit it, else checked (a
    ValueError names what is wrong)."""
    if getattr(model, "root_joint", None) is not None and not model.multi_dof_joints:
        try:
            out = np.empty(getattr(model, operation.size))
            x, y = first[1], second[1]
            if x.dtype.isnative and y.dtype.isnative and operation.fast_kernel(x, y, out) == _ff.OK:
                return out
        except _FAST_REFUSED:
            pass
    model = _model(model)
    if model.multi_dof_joints:
        y_size = model.nq if operation.second_is_configuration else model.nv
        return _multi_dof_operation(model, operation, (first[0], _vector(*first, model.nq)),
                                    (second[0], _vector(*second, y_size)))
    x = checked_configuration(model, *first)
    y = checked_configuration(model, *second) if operation.second_is_configuration else _tangent(model, *second)
    if model.root_joint is None:
        return operation.vectors(x, y)
    out = np.empty(getattr(model, operation.size))
    compiled_call(operation.kernel, x, y, out)
    return out


def _multi_dof_operation(model, operation, first, second):
    """integrate or difference of a model with multi-DoF joints on the named arguments ((name, value)
    each, checked for shape and finiteness; kernels/multi_dof.py): each joint on its subgroup of SE(3)
    as a free flyer's pose, a free flyer's root as its own, the 1-DoF joints as vectors; a ValueError
    names a joint whose rotation part is not of unit norm."""
    (x_name, x), (y_name, y) = first, second
    q_index, v_index, table = _multi.layout(model)
    if model.root_joint is not None:
        check_quaternion(x_name, x)
        if operation.second_is_configuration:
            check_quaternion(y_name, y)
    free_flyer = int(model.root_joint is not None)
    if operation is _INTEGRATE:
        out = np.empty(model.nq)
        done = _kernel.integrate(x, y, table, q_index, v_index, free_flyer, out, np.empty(7), np.empty(6),
                                 np.empty(7))
    else:
        out = np.empty(model.nv)
        done = _kernel.difference(x, y, table, q_index, v_index, free_flyer, out, np.empty(7), np.empty(7),
                                  np.empty(6))
    if not done:    # the kernel's refusal: a rotation part not of unit norm, which this names
        _multi.check_configuration(model, x_name, x)
        _multi.check_configuration(model, y_name, y)
    return out


def integrate(model, q, v):
    """The configuration reached from q (nq,) moving with velocity v (nv,) for unit time (module
    docstring)."""
    return _group_operation(model, _INTEGRATE, ("q", q), ("v", v))


def difference(model, q0, q1):
    """The velocity v (nv,) with integrate(q0, v) = q1 (module docstring)."""
    return _group_operation(model, _DIFFERENCE, ("q0", q0), ("q1", q1))


def integrate_jacobians(model, q, v):
    """(d integrate / d q, d integrate / d v), each (nv, nv), in the tangent spaces of q and of the
    result (module docstring)."""
    model = _model(model)
    q, v = checked_configuration(model, "q", q), _tangent(model, "v", v)
    d_q, d_v = np.eye(model.nv), np.eye(model.nv)
    for part, axes in _groups(model):
        xi = np.zeros(6)
        xi[axes] = v[part]
        d_q[part, part] = _inverse_adjoint(*_exp(xi))[np.ix_(axes, axes)]
        d_v[part, part] = _right_jacobian(xi)[np.ix_(axes, axes)]
    return d_q, d_v


def difference_jacobians(model, q0, q1):
    """(d difference / d q0, d difference / d q1), each (nv, nv) (module docstring)."""
    model = _model(model)
    q0, q1 = checked_configuration(model, "q0", q0), checked_configuration(model, "q1", q1)
    d_q0, d_q1 = -np.eye(model.nv), np.eye(model.nv)
    v = difference(model, q0, q1)
    for part, axes in _groups(model):
        # the subgroup's blocks: J_r and Ad map its subalgebra into itself, so the blocks of their
        # inverses and products are those of the blocks
        xi = np.zeros(6)
        xi[axes] = v[part]
        block = np.ix_(axes, axes)
        inverse = np.linalg.inv(_right_jacobian(xi)[block])
        d_q1[part, part] = inverse
        d_q0[part, part] = -inverse @ _inverse_adjoint(*_exp(xi))[block]
    return d_q0, d_q1


def _groups(model):
    """(v slice, unit-screw indices [w; v]) of the free flyer and of each multi-DoF joint."""
    groups = [(slice(0, FREE_FLYER_DOFS), list(range(FREE_FLYER_DOFS)))] if model.root_joint is not None else []
    return groups + [(slice(j.body, j.body + j.nv), list(MULTI_DOF_SCREWS[j.kind]))
                     for j in model.multi_dof_joints]
