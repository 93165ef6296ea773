"""Entry kernels of a free flyer's contacts and impacts (contact.py): one compiled call each, as a
fixed base has. The configuration becomes the tree's inputs (floating_entry.tree_q: q_tree, the
root's pose, gravity in the root link's frame), which go into the fixed-base twin's buffers (the same
tree, the free flyer's six bodies as joints of a root held at the root link's frame:
floating_base.tree_twin); the fixed-base kernels solve there, and their results become the free
flyer's as contact.py's NumPy path turns them:
- the acceleration gains the chain's velocity product b(nu) (a[:6] += b(v[:6]));
- the root's tangent columns of the forward derivatives are those of gravity turning with the root,
  - (d/d tau) M[:, :6] ad(a_g), and d a[:6] / d v[:6] gains d b / d nu; an impact sees no gravity:
  its root columns are zero;
- the rows of "local_world_aligned" contacts (the 3-row blocks starting at `world`) turn from the
  root link's axes into the world's, and their forces' derivatives in the root's rotations gain
  -R [f]x.
A model of another kind, a non-unit quaternion, sizes that do not fit: REFUSED (the checked path).
"""
from ..jit import njit
from .constrained_dynamics import OK, solve_constrained, solve_impulse
from .constrained_dynamics_derivatives import solve_constrained_derivatives, solve_impulse_derivatives
from .entry import A_TREE, BASE_ACCEL, BASE_R, DATA_BASE_ACCEL, M, Q_TREE, REFUSED, mat, vec
from .floating_entry import fits, tree_q
from .free_flyer import FREE_FLYER_DOFS, add_bias_jacobian, bias_acceleration


@njit(cache=True, inline="always")
def _to_twin(model, data, twin_model, q, v):
    """The tree's inputs of q into data (q_tree: data's Q_TREE), gravity in the root link's frame
    into the twin; False when q, v do not fit."""
    nb = int(model[0])
    if not (fits(model, data, q, False) and v.shape[0] == nb and int(twin_model[0]) == nb):
        return False
    tree_q(model, data, q)
    twin_gravity = vec(twin_model, BASE_ACCEL, 6)
    gravity = vec(data, DATA_BASE_ACCEL, 6)
    for k in range(6):
        twin_gravity[k] = gravity[k]
    return True


@njit(cache=True, inline="always")
def _world_rows(R, world, X):
    """Each 3-row block of X (rows m, any columns) starting at an index of `world`: R times it."""
    for start in world:
        for c in range(X.shape[1]):
            x0, x1, x2 = X[start, c], X[start + 1, c], X[start + 2, c]
            for r in range(3):
                X[start + r, c] = R[r, 0] * x0 + R[r, 1] * x1 + R[r, 2] * x2


@njit(cache=True, inline="always")
def _world_forces(R, world, lam, dlam_dq):
    """lam's world-aligned blocks into the world's axes; with dlam_dq (its rows already turned), the
    turning of the forces with the root's rotations: dlam_dq[block, :3] -= R [f]x (f in the root
    link's axes)."""
    for start in world:
        f0, f1, f2 = lam[start], lam[start + 1], lam[start + 2]
        if dlam_dq.shape[0] > 0:
            for r in range(3):
                # (R [f]x)[r, :] = (R[r, 1] f2 - R[r, 2] f1, R[r, 2] f0 - R[r, 0] f2, R[r, 0] f1 - R[r, 1] f0)
                dlam_dq[start + r, 0] -= R[r, 1] * f2 - R[r, 2] * f1
                dlam_dq[start + r, 1] -= R[r, 2] * f0 - R[r, 0] * f2
                dlam_dq[start + r, 2] -= R[r, 0] * f1 - R[r, 1] * f0
        for r in range(3):
            lam[start + r] = R[r, 0] * f0 + R[r, 1] * f1 + R[r, 2] * f2


@njit(cache=True, inline="always")
def _add_bias(data, nb, v, a):
    b = vec(data, A_TREE, nb)
    bias_acceleration(v, b)
    for k in range(FREE_FLYER_DOFS):
        a[k] += b[k]


@njit(cache=True, _nrt=False)
def constrained_dynamics(model, data, twin_model, twin_data, world, q, v, tau, spec, ws, a, lam):
    """contact.constrained_dynamics of a free flyer (module docstring)."""
    if not _to_twin(model, data, twin_model, q, v):
        return REFUSED
    q_tree = vec(data, Q_TREE, int(model[0]))
    status = solve_constrained(twin_model, twin_data, q_tree, v, tau, spec, ws, a, lam)
    if status == OK:
        nb = int(model[0])
        _add_bias(data, nb, v, a)
        _world_forces(mat(data, BASE_R, 3, 3), world, lam, mat(data, BASE_R, 0, 0))
    return status


@njit(cache=True, _nrt=False)
def impulse_dynamics(model, data, twin_model, twin_data, world, q, v_minus, restitution, spec, ws, v_plus,
                     impulses):
    """contact.impulse_dynamics of a free flyer: the twin's impact, the impulses in world axes."""
    if not _to_twin(model, data, twin_model, q, v_minus):
        return REFUSED
    q_tree = vec(data, Q_TREE, int(model[0]))
    status = solve_impulse(twin_model, twin_data, q_tree, v_minus, restitution, spec, ws, v_plus, impulses)
    if status == OK:
        _world_forces(mat(data, BASE_R, 3, 3), world, impulses, mat(data, BASE_R, 0, 0))
    return status


@njit(cache=True, _nrt=False)
def constrained_dynamics_derivatives(model, data, twin_model, twin_data, world, q, v, tau, spec, ws, dws, a, lam,
                                     da_dq, da_dv, da_dtau, dlam_dq, dlam_dv, dlam_dtau):
    """contact.constrained_dynamics_derivatives of a free flyer (module docstring)."""
    if not _to_twin(model, data, twin_model, q, v):
        return REFUSED
    q_tree = vec(data, Q_TREE, int(model[0]))
    status = solve_constrained_derivatives(twin_model, twin_data, q_tree, v, tau, spec, ws, dws, a, lam, da_dq,
                                           da_dv, da_dtau, dlam_dq, dlam_dv, dlam_dtau)
    if status != OK:
        return status
    nb = int(model[0])
    m = lam.shape[0]
    _add_bias(data, nb, v, a)
    # gravity turning with the root: d b / d delta = M[:, :6] ad(a_g), a_g = [0; g_r]: ad(a_g) e_j =
    # a_g x e_j is [0; g_r x e_j] for a rotation j < 3 and zero for a translation
    M_tree = mat(twin_data, M, nb, nb)
    g = vec(data, DATA_BASE_ACCEL, 6)
    turning = vec(data, A_TREE, nb)     # one column of M[:, :6] ad(a_g) at a time
    for j in range(3):
        e0, e1, e2 = 1.0 if j == 0 else 0.0, 1.0 if j == 1 else 0.0, 1.0 if j == 2 else 0.0
        c0, c1, c2 = g[4] * e2 - g[5] * e1, g[5] * e0 - g[3] * e2, g[3] * e1 - g[4] * e0    # g_r x e_j
        for i in range(nb):
            turning[i] = M_tree[i, 3] * c0 + M_tree[i, 4] * c1 + M_tree[i, 5] * c2
        for i in range(nb):
            total = 0.0
            for k in range(nb):
                total += da_dtau[i, k] * turning[k]
            da_dq[i, j] = -total
        for i in range(m):
            total = 0.0
            for k in range(nb):
                total += dlam_dtau[i, k] * turning[k]
            dlam_dq[i, j] = -total
    for j in range(3, FREE_FLYER_DOFS):
        for i in range(nb):
            da_dq[i, j] = 0.0
        for i in range(m):
            dlam_dq[i, j] = 0.0
    add_bias_jacobian(v, da_dv)
    R = mat(data, BASE_R, 3, 3)
    _world_rows(R, world, dlam_dq)
    _world_rows(R, world, dlam_dv)
    _world_rows(R, world, dlam_dtau)
    _world_forces(R, world, lam, dlam_dq)
    return OK


@njit(cache=True, _nrt=False)
def impulse_dynamics_derivatives(model, data, twin_model, twin_data, world, q, v_minus, restitution, spec, ws, dws,
                                 v_plus, impulses, dv_dq, dv_dv, dimp_dq, dimp_dv):
    """contact.impulse_dynamics_derivatives of a free flyer (module docstring)."""
    if not _to_twin(model, data, twin_model, q, v_minus):
        return REFUSED
    q_tree = vec(data, Q_TREE, int(model[0]))
    status = solve_impulse_derivatives(twin_model, twin_data, q_tree, v_minus, restitution, spec, ws, dws, v_plus,
                                       impulses, dv_dq, dv_dv, dimp_dq, dimp_dv)
    if status != OK:
        return status
    nb = int(model[0])
    for j in range(FREE_FLYER_DOFS):   # no gravity in an impact: the root's pose changes nothing but R
        for i in range(nb):
            dv_dq[i, j] = 0.0
        for i in range(impulses.shape[0]):
            dimp_dq[i, j] = 0.0
    R = mat(data, BASE_R, 3, 3)
    _world_rows(R, world, dimp_dq)
    _world_rows(R, world, dimp_dv)
    _world_forces(R, world, impulses, dimp_dq)
    return OK
