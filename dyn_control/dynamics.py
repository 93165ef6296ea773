"""Public functional API (model + data, like Pinocchio): checks inputs once, calls the kernels.

Every function writes into and returns a buffer of `data` (as Pinocchio returns data.tau):
copy a result to keep it past the next call with the same data.
"""
import math

import numpy as np

from .kernels import aba as _aba
from .kernels import coriolis as _coriolis
from .kernels import crba as _crba
from .kernels import kinematics as _kin
from .kernels import rnea as _rnea
from .model import Data, Model

_REFERENCES = {"world": _kin.WORLD, "local": _kin.LOCAL, "local_world_aligned": _kin.LOCAL_WORLD_ALIGNED}


def check_vector(name, x, n):
    """x as a contiguous float64 (n,) array, or a ValueError naming the argument."""
    if type(x) is not np.ndarray or x.dtype != np.float64 or not x.flags.c_contiguous:
        try:
            x = np.ascontiguousarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be an array of {n} numbers, got {type(x).__name__}") from None
    if x.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {x.shape}")
    if not math.isfinite(x @ x) and not np.all(np.isfinite(x)):  # x @ x: cheap screen for NaN/inf
        bad = np.flatnonzero(~np.isfinite(x))
        raise ValueError(f"{name} has non-finite entries (NaN or inf) at indices {bad.tolist()}")
    return x


def check_matrix(name, x, shape):
    if type(x) is not np.ndarray or x.dtype != np.float64 or not x.flags.c_contiguous:
        try:
            x = np.ascontiguousarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a {shape} array of numbers, got {type(x).__name__}") from None
    if x.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} has non-finite entries (NaN or inf)")
    return x


def check_model_data(model, data):
    if not isinstance(model, Model):
        raise ValueError(f"model must be a dyn_control.Model, got {type(model).__name__}")
    if not isinstance(data, Data) or data.nbodies != model.nbodies or data.nv != model.nv:
        raise ValueError("data must come from model.create_data() of this model")
    data.gravity_accel[3:] = -model.gravity  # gravity enters as the base acceleration -g


def tree_coordinates(model, data, q, v=None, a=None):
    """Checked joint-space vectors of the tree (expanded through the mimic coupling, if any)."""
    nv = model.nv
    q = check_vector("q", q, nv)
    v = None if v is None else check_vector("v", v, nv)
    a = None if a is None else check_vector("a", a, nv)
    G = model.coupling
    if G is None:
        return q, v, a
    data.q_tree[:] = G @ q + model.coupling_offset
    if v is not None:
        data.v_tree[:] = G @ v
        v = data.v_tree
    if a is not None:
        data.a_tree[:] = G @ a
        a = data.a_tree
    return data.q_tree, v, a


def external_forces(model, data, f_ext):
    if f_ext is None:
        return data.f_ext_zero
    return check_matrix("f_ext", f_ext, (model.nbodies, 6))


def _rnea_tree(model, data, q, v, a, f_ext):
    _rnea.rnea(model.parents, model.screw_axes, model.home_R, model.home_p, model.phi, q, v, a,
               data.gravity_accel, f_ext, data.R, data.p, data.V, data.Vdot, data.F, data.tmp6,
               data.tau_tree)
    return data.tau_tree


def _to_generalized(model, tree_vector, out):
    if model.coupling is None:
        out[:] = tree_vector
    else:
        out[:] = model.coupling.T @ tree_vector
    return out


def rnea(model, data, q, v, a, f_ext=None):
    """Inverse dynamics tau = M(q) a + C(q, v) v + g(q) - sum_i J_i^T f_ext_i  -> data.tau (nv,).

    f_ext: None or (nbodies, 6), the spatial force [n; f] on each body, in the body's frame."""
    check_model_data(model, data)
    q, v, a = tree_coordinates(model, data, q, v, a)
    return _to_generalized(model, _rnea_tree(model, data, q, v, a, external_forces(model, data, f_ext)),
                           data.tau)


def nonlinear_effects(model, data, q, v):
    """C(q, v) v + g(q)  -> data.nle (nv,)."""
    check_model_data(model, data)
    q, v, _ = tree_coordinates(model, data, q, v)
    data.a_tree[:] = 0.0
    return _to_generalized(model, _rnea_tree(model, data, q, v, data.a_tree, data.f_ext_zero), data.nle)


def gravity(model, data, q):
    """Generalized gravity g(q)  -> data.g (nv,)."""
    check_model_data(model, data)
    q, _, _ = tree_coordinates(model, data, q)
    data.v_tree[:] = 0.0
    data.a_tree[:] = 0.0
    return _to_generalized(model, _rnea_tree(model, data, q, data.v_tree, data.a_tree,
                                             data.f_ext_zero), data.g)


def _crba_tree(model, data, q):
    _crba.crba(model.parents, model.screw_axes, model.home_R, model.home_p, model.phi, q, data.R,
               data.p, data.phi_composite, data.F, data.M_tree)
    return data.M_tree


def crba(model, data, q):
    """Joint-space inertia matrix M(q), full symmetric  -> data.M (nv, nv)."""
    check_model_data(model, data)
    q, _, _ = tree_coordinates(model, data, q)
    M_tree = _crba_tree(model, data, q)
    G = model.coupling
    data.M[:, :] = M_tree if G is None else G.T @ M_tree @ G
    return data.M


def aba(model, data, q, v, tau, f_ext=None):
    """Forward dynamics a = M(q)^-1 (tau - C(q, v) v - g(q) + sum_i J_i^T f_ext_i)  -> data.ddq."""
    check_model_data(model, data)
    f_ext = external_forces(model, data, f_ext)
    if model.coupling is not None:
        # coupled joints: no articulated-body recursion; solve with the reduced M
        tau = check_vector("tau", tau, model.nv)
        q_t, v_t, _ = tree_coordinates(model, data, q, v)
        data.a_tree[:] = 0.0
        bias = model.coupling.T @ _rnea_tree(model, data, q_t, v_t, data.a_tree, f_ext)
        G = model.coupling
        data.ddq[:] = np.linalg.solve(G.T @ _crba_tree(model, data, q_t) @ G, tau - bias)
        return data.ddq
    q, v, _ = tree_coordinates(model, data, q, v)
    tau = check_vector("tau", tau, model.nv)
    _aba.aba(model.parents, model.screw_axes, model.home_R, model.home_p, model.phi, q, v, tau,
             data.gravity_accel, f_ext, data.R, data.p, data.X, data.V, data.c, data.IA, data.pA,
             data.U, data.D, data.u, data.Vdot, data.tmp6, data.tmp66, data.ddq)
    return data.ddq


def coriolis_matrix(model, data, q, v):
    """C(q, v) with C v = nonlinear_effects - gravity and Mdot - 2C skew-symmetric  -> data.C."""
    check_model_data(model, data)
    q, v, _ = tree_coordinates(model, data, q, v)
    _coriolis.coriolis_matrix(model.parents, model.screw_axes, model.home_R, model.home_p, model.phi,
                              q, v, data.R, data.p, data.oR, data.op, data.oS, data.oV, data.oPsi,
                              data.oIc, data.oBc, data.X, data.tmp6, data.tmp66, data.C_tree)
    G = model.coupling
    data.C[:, :] = data.C_tree if G is None else G.T @ data.C_tree @ G
    return data.C


def _world_poses(model, data, q):
    _kin.joint_transforms(model.screw_axes, model.home_R, model.home_p, q, data.R, data.p)
    _kin.world_poses(model.parents, data.R, data.p, data.oR, data.op)


def forward_kinematics(model, data, q):
    """World (root-frame) poses of all frames, (nframes, 4, 4) in model.frame_names order."""
    check_model_data(model, data)
    q, _, _ = tree_coordinates(model, data, q)
    _world_poses(model, data, q)
    _kin.frame_poses(model.frame_body, model.frame_R, model.frame_p, data.oR, data.op,
                     data.frame_poses)
    return data.frame_poses


def frame_pose(model, data, q, frame):
    """World pose (4, 4) of one frame (link or joint name)."""
    f = model.frame_id(frame)
    return forward_kinematics(model, data, q)[f]


def jacobian(model, data, q, frame, reference="world"):
    """Frame Jacobian (6, nv), angular rows first, so that J v is the frame's velocity:
    "world": spatial velocity in the root frame at the root origin (Pinocchio WORLD);
    "local": twist in the frame's own axes; "local_world_aligned": angular velocity and the
    frame origin's linear velocity in the root frame's axes."""
    check_model_data(model, data)
    f = model.frame_id(frame)
    try:
        code = _REFERENCES[reference]
    except (KeyError, TypeError):
        raise ValueError(f"reference must be one of {', '.join(_REFERENCES)}, got {reference!r}") from None
    q, _, _ = tree_coordinates(model, data, q)
    _world_poses(model, data, q)
    _kin.frame_jacobian(model.parents, model.screw_axes, data.oR, data.op, model.frame_body[f],
                        model.frame_R[f], model.frame_p[f], code, data.J_tree)
    G = model.coupling
    data.J[:, :] = data.J_tree if G is None else data.J_tree @ G
    return data.J
