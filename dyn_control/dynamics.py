"""Public functional API (model + data, like Pinocchio): checks inputs once, calls the kernels.

Every function writes into and returns a buffer of `data` (as Pinocchio returns data.tau):
copy a result to keep it past the next call with the same data. Shapes are checked here; the
kernels screen finiteness on their way in (cheaper than NumPy from Python) and this module turns
a refusal into a ValueError naming the argument. Models with coupled mimic joints go through the
tree kernels and the coupling matrix G (q_tree = G q + offset, tau = G^T tau_tree).
"""
import numpy as np

from .kernels import aba as _aba
from .kernels import coriolis as _coriolis
from .kernels import crba as _crba
from .kernels import kinematics as _kin
from .kernels import rnea as _rnea
from .model import Data, Model

_F64 = np.dtype(np.float64)
_REFERENCES = {"world": _kin.WORLD, "local": _kin.LOCAL, "local_world_aligned": _kin.LOCAL_WORLD_ALIGNED}


def as_vector(name, x, n):
    """x as a contiguous float64 (n,) array (finiteness is left to the kernel), or a ValueError."""
    if type(x) is not np.ndarray or x.dtype is not _F64 or not x.flags.c_contiguous:
        x = as_real_array(name, x, f"an array of {n} real numbers")
    if x.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {x.shape}")
    return x


def as_real_array(name, x, expected):
    if x is None or np.iscomplexobj(x):
        raise ValueError(f"{name} must be {expected}, got {type(x).__name__}")
    try:
        return np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {expected}, got {type(x).__name__}") from None


def as_finite_array(name, x, shape):
    """x as a contiguous float64 array of `shape` with finite entries, or a ValueError."""
    x = as_real_array(name, x, f"a {shape} array of real numbers")
    if x.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} has non-finite entries (NaN or inf)")
    return x


def non_finite_error(**arrays):
    """The ValueError for a kernel that refused its inputs: names every non-finite argument."""
    parts = []
    for name, x in arrays.items():
        bad = np.flatnonzero(~np.isfinite(np.asarray(x)))
        if bad.size:
            parts.append(f"{name} at indices {bad.tolist()}")
    return ValueError("non-finite input (NaN or inf): " + "; ".join(parts))


def require_finite(**arrays):
    """Raise the named ValueError unless every array is finite (for paths no kernel screens)."""
    if not all(np.all(np.isfinite(x)) for x in arrays.values()):
        raise non_finite_error(**arrays)


def check_model_data(model, data):
    try:
        matches = type(data) is Data and data.nbodies == model.nbodies and data.nv == model.nv
    except AttributeError:  # model is not a Model
        matches = False
    if not matches:
        if not isinstance(model, Model):
            raise ValueError(f"model must be a dyn_control.Model, got {type(model).__name__}")
        raise ValueError("data must come from model.create_data() of this model")


def external_forces(model, data, f_ext):
    if f_ext is None:
        return data.f_ext_zero
    return as_finite_array("f_ext", f_ext, (model.nbodies, 6))


# ----------------------------------------------------------------------------------------------
# Tree-level calls: arguments already checked, tree coordinates, outputs in data.


def rnea_tree(model, data, q, v, a, f_ext, tau):
    if not _rnea.rnea(model._parents, model._screw_axes, model._home_R, model._home_p, model._phi, q,
                      v, a, model._base_accel, f_ext, data.R, data.p, data.V, data.Vdot, data.F,
                      data.tmp6, tau):
        raise non_finite_error(q=q, v=v, a=a)
    return tau


def crba_tree(model, data, q, M):
    if not _crba.crba(model._parents, model._screw_axes, model._home_R, model._home_p, model._phi, q,
                      data.R, data.p, data.oR, data.op, data.oS, data.phi_composite, data.F, M):
        raise non_finite_error(q=q)
    return M


def coupled_tree_state(model, data, q, v=None, a=None):
    """Tree coordinates of a mimic-coupled model: q_tree = G q + offset, v_tree = G v, a_tree = G a."""
    G = model.coupling
    data.q_tree[:] = G @ q + model.coupling_offset
    if v is not None:
        data.v_tree[:] = G @ v
    if a is not None:
        data.a_tree[:] = G @ a
    return data.q_tree, data.v_tree, data.a_tree


# ----------------------------------------------------------------------------------------------
# Public API


def rnea(model, data, q, v, a, f_ext=None):
    """Inverse dynamics tau = M(q) a + C(q, v) v + g(q) - sum_i J_i^T f_ext_i  -> data.tau (nv,).

    f_ext: None or (nbodies, 6), the spatial force [n; f] on each body, in the body's frame."""
    check_model_data(model, data)
    nv = model.nv
    q = as_vector("q", q, nv)
    v = as_vector("v", v, nv)
    a = as_vector("a", a, nv)
    f_ext = external_forces(model, data, f_ext)
    if model.coupling is None:
        return rnea_tree(model, data, q, v, a, f_ext, data.tau)
    require_finite(q=q, v=v, a=a)
    q_t, v_t, a_t = coupled_tree_state(model, data, q, v, a)
    data.tau[:] = model.coupling.T @ rnea_tree(model, data, q_t, v_t, a_t, f_ext, data.tau_tree)
    return data.tau


def nonlinear_effects(model, data, q, v):
    """C(q, v) v + g(q)  -> data.nle (nv,)."""
    data.nle[:] = rnea(model, data, q, v, np.zeros(model.nv))
    return data.nle


def gravity(model, data, q):
    """Generalized gravity g(q)  -> data.g (nv,)."""
    zero = np.zeros(model.nv)
    data.g[:] = rnea(model, data, q, zero, zero)
    return data.g


def crba(model, data, q):
    """Joint-space inertia matrix M(q), full symmetric  -> data.M (nv, nv)."""
    check_model_data(model, data)
    q = as_vector("q", q, model.nv)
    if model.coupling is None:
        return crba_tree(model, data, q, data.M)
    require_finite(q=q)
    G = model.coupling
    data.M[:, :] = G.T @ crba_tree(model, data, coupled_tree_state(model, data, q)[0], data.M_tree) @ G
    return data.M


def aba(model, data, q, v, tau, f_ext=None):
    """Forward dynamics a = M(q)^-1 (tau - C(q, v) v - g(q) + sum_i J_i^T f_ext_i)  -> data.ddq."""
    check_model_data(model, data)
    nv = model.nv
    q = as_vector("q", q, nv)
    v = as_vector("v", v, nv)
    tau = as_vector("tau", tau, nv)
    f_ext = external_forces(model, data, f_ext)
    if model.coupling is not None:
        # coupled joints: no articulated-body recursion; solve with the reduced M instead
        bias = rnea(model, data, q, v, np.zeros(nv), f_ext).copy()
        data.ddq[:] = np.linalg.solve(crba(model, data, q), tau - bias)
        return data.ddq
    try:
        finite = _aba.aba(model._parents, model._screw_axes, model._home_R, model._home_p, model._phi, q,
                          v, tau, model._base_accel, f_ext, data.R, data.p, data.oR, data.op, data.oS,
                          data.oV, data.phi_world, data.c, data.IA, data.pA, data.U, data.D, data.u,
                          data.oA, data.tmp6, data.ddq)
    except ZeroDivisionError:
        raise singular_inertia_error(model, data) from None
    if not finite:
        raise non_finite_error(q=q, v=v, tau=tau)
    return data.ddq


def singular_inertia_error(model, data):
    """The ValueError for ABA meeting a zero articulated inertia D_i = S_i^T IA_i S_i: M(q) is
    singular (a subtree without inertia about its joint axis) and forward dynamics undefined.
    Pass 2 writes D from the leaves down and stops at the first zero, so it is the last one."""
    joint = model.joint_names[int(np.flatnonzero(data.D == 0.0)[-1])]
    return ValueError(f"forward dynamics undefined: M(q) is singular, joint {joint!r} moves bodies "
                      "without inertia about its axis")


def coriolis_matrix(model, data, q, v):
    """C(q, v) with C v = nonlinear_effects - gravity and Mdot - 2C skew-symmetric  -> data.C."""
    check_model_data(model, data)
    q = as_vector("q", q, model.nv)
    v = as_vector("v", v, model.nv)
    G = model.coupling
    if G is not None:
        require_finite(q=q, v=v)
        q_t, v_t, _ = coupled_tree_state(model, data, q, v)
    else:
        q_t, v_t = q, v
    C = data.C if G is None else data.C_tree
    if not _coriolis.coriolis_matrix(model._parents, model._screw_axes, model._home_R, model._home_p,
                                     model._phi, q_t, v_t, data.R, data.p, data.oR, data.op, data.oS,
                                     data.oV, data.oPsi, data.oIc, data.oBc, data.X, data.tmp6,
                                     data.tmp66, C):
        raise non_finite_error(q=q, v=v)
    if G is not None:
        data.C[:, :] = G.T @ C @ G
    return data.C


def _tree_q(model, data, q):
    q = as_vector("q", q, model.nv)
    if model.coupling is None:
        return q
    require_finite(q=q)
    return coupled_tree_state(model, data, q)[0]


def forward_kinematics(model, data, q):
    """World (root-frame) poses of all frames, (nframes, 4, 4) in model.frame_names order."""
    check_model_data(model, data)
    q_t = _tree_q(model, data, q)
    if not _kin.forward_kinematics(model._parents, model._screw_axes, model._home_R, model._home_p,
                                   model._frame_body, model._frame_R, model._frame_p, q_t, data.R,
                                   data.p, data.oR, data.op, data.frame_poses):
        raise non_finite_error(q=q)
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
    q_t = _tree_q(model, data, q)
    G = model.coupling
    J = data.J if G is None else data.J_tree
    if not _kin.frame_jacobian(model._parents, model._screw_axes, model._home_R, model._home_p, q_t,
                               data.support, data.R, data.p, data.oR, data.op, model._frame_body[f], model._frame_R[f],
                               model._frame_p[f], code, J):
        raise non_finite_error(q=q)
    if G is not None:
        data.J[:, :] = J @ G
    return data.J
