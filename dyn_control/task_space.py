"""Public task-space API (Cartesian impedance): frame velocity, Jacobian time variation and
acceleration, operational-space inertia, nullspace projector, pose error, quaternions.

Checks inputs once and calls the kernels of kernels/task_space.py (which the controller's tick calls
directly). Results live in a workspace kept on `data` and are returned as read-only views, as in
dynamics.py: copy one to keep it past the next call with the same data. The default reference is
"local_world_aligned": angular velocity and the frame origin's velocity in root axes, the
coordinates of the pose error. Models with mimic coupling: tree kernels, then through the
coupling matrix G (J = J_tree G, v_tree = G v).
"""
import numpy as np

from . import floating_base as _floating
from . import multi_dof as _multi
from .dynamics import (_FAST_REFUSED, _OK, _REFERENCES, as_finite_array, as_vector, checked_inputs, compiled_call,
                       coupled_tree_state, crba, floating_tree_state, forward_kinematics, has_multi_dof, jacobian,
                       multi_dof_inputs, non_finite_error, strict)
from .kernels import entry as _entry
from .kernels import task_space as _ts
from .model import FREE_FLYER_DOFS
from .spatial import Ad, ad, skew

_fast_time_variation = strict(_entry.frame_jacobian_time_variation)


class _Workspace:
    """Buffers of the task-space calls for one Data, allocated on its first use."""

    def __init__(self, model):
        nb, nv = model.nbodies, model.nv
        self.path = np.zeros(nb, dtype=np.int64)  # the frame's body and its supports, leaf to root
        self.oV = np.zeros((nb, 6))         # body twists, root frame
        self.out = np.zeros(12 * nb + 12)   # what the compiled call writes (entry.py), viewed as:
        self.J = self.out[:6 * nb].reshape(6, nb)               # frame Jacobian (tree coordinates)
        self.dJ = self.out[6 * nb:12 * nb].reshape(6, nb)       # its time variation
        self.velocity = self.out[12 * nb:12 * nb + 6]           # J v
        self.drift = self.out[12 * nb + 6:]                     # dJ v
        self.acceleration = np.zeros(6)     # classical acceleration
        self.dJ_out = self.dJ if model.coupling is None else np.zeros((6, nv))  # dJ_tree G
        self.L = np.zeros((nv, nv))         # Cholesky factor of M
        self.J_Minv = np.zeros(6 * nv)      # J M^-1 (m, nv), m = 6 or 3
        self.A = np.zeros(36)               # Cholesky factor of Lambda^-1 (m, m)
        self.Lambda = np.zeros(36)          # (m, m)
        self.J_bar = np.zeros(6 * nv)       # M^-1 J^T Lambda (nv, m)
        self.N = np.zeros((nv, nv))         # I - J^T J_bar^T


def _workspace(model, data):
    ws = data.__dict__.get("_task_space")
    if ws is None:
        ws = data.__dict__["_task_space"] = _Workspace(model)
    return ws


def _read_only(x):
    view = x.view()
    view.flags.writeable = False
    return view


def _reference(reference):
    try:
        return _REFERENCES[reference]
    except (KeyError, TypeError):
        raise ValueError(f"reference must be one of {', '.join(_REFERENCES)}, got {reference!r}") from None


def _time_variation(model, data, q, v, frame, reference):
    """Runs the kernel: (workspace, reference code, q and v checked); the workspace holds J, dJ (tree
    coordinates), J v and dJ v. First the compiled call on the arguments as they are (as in
    dynamics.py), once a checked call made the workspace."""
    try:
        ws, code = data._task_space, _REFERENCES[reference]
        if (q.dtype.isnative and v.dtype.isnative and not model.multi_dof_joints
                and _fast_time_variation(model._buf, data._buf, q, v, model._frame_index[frame], code, ws.out) == _OK):
            return ws, code, q, v
    except (*_FAST_REFUSED, KeyError):
        pass
    if has_multi_dof(model):
        return _multi_dof_time_variation(model, data, q, v, frame, reference)
    q, v = checked_inputs(model, data, True, q=q, v=v)
    f = model.frame_id(frame)
    code = _reference(reference)
    ws = _workspace(model, data)
    if model.root_joint is not None:
        _floating_time_variation(model, data, q, v, f, code, ws)
        return ws, code, q, v
    if (model.coupling is None and compiled_call(_entry.frame_jacobian_time_variation, model._buf, data._buf, q, v,
                                                 f, code, ws.out) == _OK):
        return ws, code, q, v
    q_t, v_t = (q, v) if model.coupling is None else coupled_tree_state(model, data, q, v)[:2]
    if not _ts.frame_jacobian_time_variation(
            model._parents, model._screw_axes, model._home_R, model._home_p, q_t, v_t, ws.path, data._R,
            data._p, data._oR, data._op, ws.oV, model._frame_body[f], model._frame_R[f], model._frame_p[f], code,
            ws.J, ws.dJ, ws.velocity, ws.drift):
        raise non_finite_error(q=q, v=v)
    return ws, code, q, v


def _floating_time_variation(model, data, q, v, f, code, ws):
    """_time_variation of a free-flyer model: J and its variation along the joints' motion alone are the
    tree twin's (floating_base.py), relative to the root link; the root's motion nu = v[:6] turns them:
    "world" J = Ad_T J_root, dJ = Ad_T (ad_nu J_root + dJ_root); "local_world_aligned" J = R J_root,
    dJ = R (w x J_root + dJ_root) per half (w = v[:3]); "local" needs neither."""
    q_t = floating_tree_state(model, data, q, v)[0]
    twin, twin_data = _floating.tree_twin(model, data)
    joints_only = v.copy()
    joints_only[:FREE_FLYER_DOFS] = 0.0
    if not _ts.frame_jacobian_time_variation(
            twin._parents, twin._screw_axes, twin._home_R, twin._home_p, q_t, joints_only, ws.path, twin_data._R,
            twin_data._p, twin_data._oR, twin_data._op, ws.oV, twin._frame_body[f], twin._frame_R[f],
            twin._frame_p[f], code, ws.J, ws.dJ, ws.velocity, ws.drift):
        raise non_finite_error(q=q, v=v)
    if code != _ts.LOCAL:
        turn = ad(v[:FREE_FLYER_DOFS]) if code == _ts.WORLD else np.kron(np.eye(2), ad(v[:FREE_FLYER_DOFS])[:3, :3])
        ws.dJ += turn @ ws.J
        X = Ad(data._base_R, data._base_p) if code == _ts.WORLD else np.kron(np.eye(2), data._base_R)
        ws.J[:] = X @ ws.J
        ws.dJ[:] = X @ ws.dJ
    np.dot(ws.J, v, out=ws.velocity)
    np.dot(ws.dJ, v, out=ws.drift)


def _multi_dof_time_variation(model, data, q, v, frame, reference):
    """_time_variation of a model with multi-DoF joints: the tree twin's, whose columns of a joint turn
    with their chain body's twist instead of the joint's child link's (multi_dof.correct_time_variation)."""
    twin, twin_data, q_t, v = multi_dof_inputs(model, data, q, v=v)
    twin_ws, code, _, _ = _time_variation(twin, twin_data, q_t, v, frame, reference)
    ws = _workspace(model, data)
    ws.out[:] = twin_ws.out
    R, p = np.split(forward_kinematics(twin, twin_data, q_t)[twin.frame_id(frame)][:3], [3], axis=1)
    to_reference = (np.eye(6) if code == _ts.WORLD else np.linalg.inv(Ad(R, p.ravel())) if code == _ts.LOCAL
                    else np.block([[np.eye(3), np.zeros((3, 3))], [-skew(p.ravel()), np.eye(3)]]))
    _multi.correct_time_variation(model, v, jacobian(twin, twin_data, q_t, frame, "world"), to_reference, ws.dJ)
    np.dot(ws.dJ, v, out=ws.drift)
    return ws, code, q, v


def frame_jacobian_time_variation(model, data, q, v, frame, reference="local_world_aligned"):
    """dJ/dt (6, nv) at (q, v) of the frame Jacobian J = dc.jacobian(model, data, q, frame, reference),
    angular rows first: d/dt (J v) = dJ/dt v + J a. reference: "world", "local" or
    "local_world_aligned" (as Pinocchio's getFrameJacobianTimeVariation)."""
    ws, _, q, v = _time_variation(model, data, q, v, frame, reference)
    if model.coupling is not None:
        ws.dJ_out[:] = ws.dJ @ model.coupling
    return _read_only(ws.dJ_out)


def frame_velocity(model, data, q, v, frame, reference="local_world_aligned"):
    """The frame's velocity J v (6,), angular first: "local_world_aligned" [w; velocity of the frame
    origin] in root axes, "local" the twist in the frame's axes, "world" the spatial velocity at the
    root origin (Pinocchio's getFrameVelocity)."""
    ws, *_ = _time_variation(model, data, q, v, frame, reference)
    return _read_only(ws.velocity)


def frame_classical_acceleration(model, data, q, v, a, frame, reference="local_world_aligned"):
    """The frame's "classical" acceleration (6,) at (q, v, a), angular first (Pinocchio's
    getFrameClassicalAcceleration), gravity left out: [dw/dt; the frame origin's acceleration] for
    "local_world_aligned" (= dJ/dt v + J a), and for "world" and "local" the spatial acceleration
    dJ/dt v + J a plus [0; w x v] in that reference (w, v the halves of frame_velocity there)."""
    ws, code, q, v = _time_variation(model, data, q, v, frame, reference)
    a = as_vector("a", a, model.nv)
    a_t = a if model.coupling is None else model.coupling @ a
    acc = ws.acceleration
    acc[:] = ws.drift + ws.J @ a_t
    if code != _ts.LOCAL_WORLD_ALIGNED:
        acc[3:] += np.cross(ws.velocity[:3], ws.velocity[3:])
    if not np.all(np.isfinite(acc)):
        raise non_finite_error(q=q, v=v, a=a)
    return _read_only(acc)


def _operational_space(model, data, q, frame, damping, reference, translation_only):
    """Runs operational_space_inertia: (workspace, Lambda (m, m), J_bar (nv, m), J (m, nv))."""
    try:
        damping = float(damping)
    except (TypeError, ValueError):
        raise ValueError(f"damping must be a real number >= 0, got {damping!r}") from None
    if not (damping >= 0.0 and np.isfinite(damping)):
        raise ValueError(f"damping must be a real number >= 0, got {damping!r}")
    jacobian(model, data, q, frame, reference)  # checks model, data, q, frame and reference
    M = crba(model, data, q)
    J = data._J[3:] if translation_only else data._J
    m, nv = J.shape
    ws = _workspace(model, data)
    Lambda = ws.Lambda[:m * m].reshape(m, m)
    J_bar = ws.J_bar[:nv * m].reshape(nv, m)
    if not _ts.operational_space_inertia(data._M, J, damping, ws.L, ws.J_Minv[:m * nv].reshape(m, nv),
                                         ws.A[:m * m].reshape(m, m), Lambda, J_bar):
        if not np.all(np.isfinite(M)) or np.linalg.eigvalsh(M)[0] <= 0.0:
            raise ValueError(f"M(q) is not positive definite at q = {np.asarray(q).tolist()}")
        raise ValueError(f"the Jacobian of frame {frame!r} is singular (rank below {m}) at q = "
                         f"{np.asarray(q).tolist()}: pass damping > 0")
    return ws, Lambda, J_bar, J


def operational_space_inertia(model, data, q, frame, damping=0.0, reference="local_world_aligned",
                              translation_only=False):
    """Lambda = (J M^-1 J^T + damping^2 I)^-1 (6, 6), or (3, 3) for the Jacobian's translational rows
    (translation_only), J = dc.jacobian(model, data, q, frame, reference), M = dc.crba (rotors
    included). damping = 0 is exact and needs J of full row rank; damping > 0 bounds Lambda by
    1 / damping^2 near singularities (see kernels/task_space.operational_space_inertia)."""
    _, Lambda, _, _ = _operational_space(model, data, q, frame, damping, reference, translation_only)
    return _read_only(Lambda)


def nullspace_projector(model, data, q, frame, damping=0.0, reference="local_world_aligned",
                        translation_only=False):
    """N = I - J^T J_bar^T (nv, nv), J_bar = M^-1 J^T Lambda the dynamically consistent
    pseudo-inverse (operational_space_inertia's arguments): N tau_0 adds no force at the frame, and
    N^T = I - J_bar J projects joint velocities onto the Jacobian's nullspace."""
    ws, _, J_bar, J = _operational_space(model, data, q, frame, damping, reference, translation_only)
    _ts.nullspace_projector(J, J_bar, ws.N)
    return _read_only(ws.N)


def _rotation(name, R):
    """R as a finite (3, 3) array, or a ValueError unless it is a rotation (to 1e-6)."""
    R = as_finite_array(name, R, (3, 3))
    if np.abs(R.T @ R - np.eye(3)).max() > 1e-6 or np.linalg.det(R) < 0.0:
        raise ValueError(f"{name} must be a rotation matrix (orthonormal, determinant 1), got {R.tolist()}")
    return R


def _pose(name, T):
    T = as_finite_array(name, T, (4, 4))
    return _rotation(f"{name}'s rotation block", np.ascontiguousarray(T[:3, :3])), np.ascontiguousarray(T[:3, 3])


def pose_error(pose, target):
    """e = [log(R R_d^T); p - p_d] (6,) of a pose T = (R, p) (4, 4) from a target (R_d, p_d) (4, 4),
    angular first, in the root frame: R = exp([e_rot]) R_d. -K e (K positive definite) is the restoring
    term of an impedance law in "local_world_aligned" coordinates."""
    R, p = _pose("pose", pose)
    R_d, p_d = _pose("target", target)
    e = np.empty(6)
    _ts.pose_error(R, p, R_d, p_d, e)
    return e


def quaternion_to_rotation(quaternion):
    """The rotation matrix (3, 3) of a quaternion (x, y, z, w) (geometry_msgs order), normalized first."""
    quaternion = as_finite_array("quaternion", quaternion, (4,))
    R = np.empty((3, 3))
    if not _ts.quaternion_to_rotation(quaternion, R):
        raise ValueError("quaternion must not be zero")
    return R


def rotation_to_quaternion(R):
    """The unit quaternion (x, y, z, w) of a rotation matrix R (3, 3), with w >= 0."""
    R = _rotation("R", R)
    quaternion = np.empty(4)
    _ts.rotation_to_quaternion(R, quaternion)
    return quaternion
