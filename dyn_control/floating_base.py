"""Floating-base models: a free-flyer root (`load_urdf(path, root_joint="free_flyer")`, Pinocchio's
JointModelFreeFlyer).

Coordinates (DESIGN.md): q = [p (3); quaternion (x, y, z, w); joints], the root link's position in
the world and its orientation, nq = nv + 1; v = [w; v] the root link's spatial velocity in its own
frame (angular first; Pinocchio orders it linear first), then the joints; tau likewise, [n; f] the
wrench on the root link in its frame. Derivatives with respect to q are taken in the tangent space
(nv columns) of configuration.integrate: the root's pose moves as T exp(dq[:6]).

How the kernels compute them, unchanged: the model's first six bodies are a chain of 1-DoF joints
with the unit screws e_0..e_5 ([w; v]) at the root link's frame, the first five massless and the
sixth the root link itself (named after it; joint_names[:6] are root_joint_wx .. root_joint_vz, the
coordinates of v). The kernels run at the chain's zero position, where every transform of the chain
is the identity: the tree's root frame is the root link's frame, the chain's velocity is v[:6] and
its Jacobian the identity; so the root's pose enters only through gravity, seen in the root link's
frame as the base acceleration [0; -R^T g], and through the world poses of frames (T_root T_frame).
The chain's acceleration carries the velocity product b(nu) of its joints (kernels/free_flyer.py):
the tree is given a_tree = a - [b(nu); 0], and forward dynamics returns a = a_tree + [b(nu); 0]. The
derivatives follow: d tau / d v = (the tree's) - M[:, :6] db/dnu; d tau / d q in the root's tangent
directions is M[:, :6] ad(a_g) with a_g = [0; -R^T g] (only gravity sees the root's pose), and the
joints' columns are the tree's. The compiled entries: kernels/floating_entry.py.
"""
import numpy as np

from .kernels import free_flyer as _ff
from .kernels.free_flyer import UNIT_TOLERANCE
from .model import FREE_FLYER_DOFS


def check_quaternion(name, q):
    """A ValueError unless q[3:7] (the root's orientation in a configuration q) is a unit quaternion."""
    norm = float(np.linalg.norm(q[3:7]))
    if not abs(norm - 1.0) <= UNIT_TOLERANCE:
        raise ValueError(f"{name}[3:7], the free flyer's orientation (x, y, z, w), must be a unit quaternion, "
                         f"got norm {norm!r}: normalize it first (dyn_control.normalize)")


def tree_state(model, data, q, v=None, a=None):
    """The tree's inputs for a free-flyer configuration q (nq,), finite and checked for shape:
    data.base_R, base_p (the root's pose), base_accel ([0; -R^T g]) and q_tree; with a (and v),
    a_tree = a - [b(v[:6]); 0]. Returns (q_tree, a_tree or None)."""
    check_quaternion("q", q)
    _ff.base_state(q, model._base_accel, data._base_R, data._base_p, data._base_accel, data._q_tree)
    if a is None:
        return data._q_tree, None
    a_tree = data._a_tree
    _ff.bias_acceleration(v, a_tree)
    a_tree[:FREE_FLYER_DOFS] = a[:FREE_FLYER_DOFS] - a_tree[:FREE_FLYER_DOFS]
    a_tree[FREE_FLYER_DOFS:] = a[FREE_FLYER_DOFS:]
    return data._q_tree, a_tree


def add_bias(v, ddq, scratch):
    """ddq[:6] += b(v[:6]): the tree's forward dynamics as the free flyer's acceleration."""
    _ff.bias_acceleration(v, scratch)
    ddq[:FREE_FLYER_DOFS] += scratch[:FREE_FLYER_DOFS]


def tree_twin(model, data):
    """(twin, twin_data): the fixed-base model of the same tree (the free flyer's six bodies as joints
    of a root held at the root link's frame) and its Data, made once per Data, with the gravity of
    the last tree_state: the root's pose enters the twin only through it, so that a function the
    free flyer does not take on its own runs on the twin at (q_tree, v), and its results are turned
    into the free flyer's (contact.py)."""
    twin = data.__dict__.get("_tree_twin")
    if twin is None:
        tree = model._replace(root_joint=None)
        twin = data._tree_twin = (tree, tree.create_data())
    twin[0]._base_accel[:] = data._base_accel
    return twin


def bias_jacobian(v):
    """d b / d nu (6, 6) at nu = v[:6] (kernels/free_flyer.py)."""
    out = np.zeros((6, 6))
    _ff.add_bias_jacobian(v, out)
    return out


# ----------------------------------------------------------------------------------------------
# Batches (derivatives.py): T samples through the batch kernels of a gravity-free twin. At the chain's
# zero position the tree's root acceleration and the free flyer's six accelerations enter alike, so
# gravity, which turns with each sample's root, is moved into the accelerations: a_tree = a - [b; 0] +
# a_g, the tree without gravity.


def motion_cross(x, y):
    """x x y of two motion vectors [w; v] (6,)."""
    return np.concatenate([np.cross(x[:3], y[:3]), np.cross(x[:3], y[3:]) + np.cross(x[3:], y[:3])])


UNIT = np.eye(FREE_FLYER_DOFS)
CROSSES = np.array([[motion_cross(UNIT[k], UNIT[i]) for i in range(FREE_FLYER_DOFS)]
                    for k in range(FREE_FLYER_DOFS)])     # [k, i] = e_k x e_i
_UPPER = np.triu(np.ones((FREE_FLYER_DOFS, FREE_FLYER_DOFS)), 1)   # [k, i] = 1 for k < i


def batch_twin(model):
    """The model's fixed-base twin without gravity, made once per model."""
    twin = model.__dict__.get("_batch_twin")
    if twin is None:
        twin = model.__dict__["_batch_twin"] = model._replace(root_joint=None, gravity=np.zeros(3))
    return twin


def batch_tree_state(model, q, v, a=None):
    """For T free-flyer samples (finite, checked for shape): q_tree (T, nv), the base acceleration of
    gravity a_g (T, 6) in each root link's frame, and with a: a_tree = a - [b(nu); 0] + a_g for the
    gravity-free twin. A ValueError names the samples whose quaternion is not a unit one."""
    norms = np.linalg.norm(q[:, 3:7], axis=1)
    bad = np.flatnonzero(~(np.abs(norms - 1.0) <= UNIT_TOLERANCE))
    if bad.size:
        raise ValueError(f"q[:, 3:7], the free flyer's orientation (x, y, z, w), must be a unit quaternion at "
                         f"samples {bad.tolist()} (norms {norms[bad].tolist()}): normalize them first")
    T, nv = v.shape
    x, y, z, w = q[:, 3:7].T
    R = np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
                  2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
                  2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], axis=1).reshape(T, 3, 3)
    a_g = np.zeros((T, 6))
    a_g[:, 3:] = np.einsum("tkr,k->tr", R, model.base_accel[3:])
    q_tree = np.zeros((T, nv))
    q_tree[:, FREE_FLYER_DOFS:] = q[:, 7:]
    if a is None:
        return q_tree, a_g, None
    a_tree = a.copy()
    a_tree[:, :FREE_FLYER_DOFS] += a_g - batch_bias(v)
    return q_tree, a_g, a_tree


def batch_bias(v):
    """b(nu) (T, 6) = sum_{k < i} (e_k x e_i) nu_k nu_i of each sample's nu = v[t, :6]."""
    nu = v[:, :FREE_FLYER_DOFS]
    return np.einsum("kir,ki,tk,ti->tr", CROSSES, _UPPER, nu, nu)


def batch_correct_derivatives(dtau_dq, dtau_dv, M, a_g, v):
    """The tree's derivatives (T, nv, nv) as the free flyer's, in place (as correct_derivatives per
    sample): dq[:, :, :6] = M[:, :, :6] ad(a_g), dv[:, :, :6] -= M[:, :, :6] db/dnu."""
    nu = v[:, :FREE_FLYER_DOFS]
    # ad(a_g) e_j = a_g x e_j = sum_k a_g[k] e_k x e_j;
    # db/dnu_j = sum_{i > j} e_j x e_i nu_i + sum_{k < j} e_k x e_j nu_k
    turned = np.einsum("kjr,tk->trj", CROSSES, a_g)
    bias = np.einsum("jir,ji,ti->trj", CROSSES, _UPPER, nu) + np.einsum("kjr,kj,tk->trj", CROSSES, _UPPER, nu)
    base = M[:, :, :FREE_FLYER_DOFS]
    dtau_dq[:, :, :FREE_FLYER_DOFS] = base @ turned
    dtau_dv[:, :, :FREE_FLYER_DOFS] -= base @ bias
