"""Public API of the second-order derivatives of inverse and forward dynamics.

Same pattern as dynamics.py: inputs brought to one form and shapes checked here, the kernel screens
finiteness of inputs and results, results are read-only views of Data buffers (copy to keep); the
tensors are allocated on the first call with a data (4 nv^3 doubles each way, see model.Data). Tensors
are indexed [i, j, k] =
d2 y_i / dx_j dx'_k. Models with coupled mimic joints go through the tree kernel and the coupling
matrix G (q_tree = G q + offset, tau = G^T tau_tree), contracted on every index.

Joint terms (model.py, kernels/joint_terms.py) are included: the armature is constant (M + diag(I_a)
enters the forward-dynamics tensors, dM_dq is unchanged), viscous friction is linear, and Coulomb
friction's smooth sign adds F_c sgn_s''(v_i) to d2tau_dv2[i, i, i].
"""
import numpy as np

from . import floating_base as _floating
from . import multi_dof as _multi
from .derivatives import rnea_derivatives
from .dynamics import (aba, checked_inputs, coupled_result, coupled_tree_state, floating_tree_state, has_multi_dof,
                       multi_dof_inputs, non_finite_error, rnea)
from .kernels import free_flyer as _ff
from .kernels import joint_terms as _joint
from .kernels import rnea_second_derivatives as _so
from .kernels.inputs import all_finite


def _second_tree(model, data, q, v, a, f_ext):
    """The tree kernel at tree coordinates: fills data.so_second and the first-order by-products
    data.so_first = (dtau_dq, dtau_dv, M) of the tree."""
    if not _so.rnea_second_derivatives(
            model._parents, model._screw_axes, model._home_R, model._home_p, model._phi, q, v, a,
            model._base_accel, f_ext, data._R, data._p, data._oR, data._op, data._phi_world,
            data._so_vectors, data._so_matrices, data._so_mats, data._so_pair, data._so_tau, data._so_first,
            data._so_second):
        raise non_finite_error(q=q, v=v, a=a, f_ext=f_ext)
    _joint.add_joint_derivatives(model._joint_terms, v, data._so_first[1], data._so_first[2])
    _joint.add_friction_second_derivative(model._joint_terms, v, data._so_second[1])


def _inverse_dynamics_second(model, data, q, v, a, f_ext):
    """Fills data.d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq; returns the first-order derivatives
    (dtau_dq, dtau_dv, M) of the same evaluation (arrays of data or new arrays when coupled)."""
    if model.root_joint is not None:
        return _floating_second(model, data, q, v, a, f_ext)
    G = model.coupling
    if G is None:
        _second_tree(model, data, q, v, a, f_ext)
        return data._so_first
    q_t, v_t, a_t = coupled_tree_state(model, data, q, v, a)
    _second_tree(model, data, q_t, v_t, a_t, f_ext)
    inputs = dict(q=q, v=v, a=a, f_ext=f_ext)
    for tree, out in zip(data._so_second, (data._d2tau_dq2, data._d2tau_dv2, data._d2tau_dqdv, data._dM_dq)):
        coupled_result(out, np.einsum("ijk,ia,jb,kc->abc", tree, G, G, G, optimize=True), **inputs)
    first = [G.T @ tree @ G for tree in data._so_first]
    if not all(np.all(np.isfinite(x)) for x in first):
        raise non_finite_error(**inputs)
    return first


def _floating_second(model, data, q, v, a, f_ext):
    """_inverse_dynamics_second of a free-flyer model: the tree twin's (floating_base.py) at
    (q_tree, v, a - [b; 0]), then the free flyer's entries. Second derivatives in q are those of the
    first-order derivatives along integrate's tangent directions, d2tau_dq2[:, j, k] =
    d (dtau/dq_j)(q + dq_k e_k) / d dq_k (the central differences of rnea_derivatives through
    integrate): only gravity sees the root's pose, as a_g = [0; -R^T g], which a rotation e_k of the
    root turns by -e_k x a_g, and tau depends on it through M[:, :6] a_g; a_tree's -b(nu) adds
    -M[:, :6] b'' in v. The root's rotation columns do not commute: d2tau_dq2 is symmetric in j, k
    but in the root's block."""
    q_t, a_t = floating_tree_state(model, data, q, v, a, f_ext=f_ext)
    twin, twin_data = _floating.tree_twin(model, data)
    _second_tree(twin, twin_data, q_t, v, a_t, f_ext)
    d2q, d2v, d2qv, dM = data._d2tau_dq2, data._d2tau_dv2, data._d2tau_dqdv, data._dM_dq
    for out, tree in zip((d2q, d2v, d2qv, dM), twin_data._so_second):
        out[...] = tree
    dtau_dq, dtau_dv, M = (x.copy() for x in twin_data._so_first)
    _ff.correct_derivatives(M, data._base_accel, v, dtau_dq, dtau_dv, data._tmp6)
    n = _ff.FREE_FLYER_DOFS
    M_base, dM_base = M[:, :n], dM[:, :n, :]               # dM_base[:, c, k] = d M[:, c] / dq_k
    crosses = _floating.CROSSES                             # [k, j] = e_k x e_j
    a_g = data._base_accel
    turned = np.einsum("k,kjr->rj", a_g, crosses)           # a_g x e_j
    # a rotation e_k of the root turns a_g by -(e_k x a_g): spin[:, j, k] = -(e_k x a_g) x e_j
    turning = np.einsum("s,ksr->kr", a_g, crosses)          # e_k x a_g
    spin = -np.einsum("kr,rjs->sjk", turning, crosses)
    spin[:, :, 3:] = 0.0                                    # translations change nothing
    # q: joint-joint is the twin's; root-joint and joint-root through dM[:, :6] (a_g x e_j); root-root
    # through the turning of a_g
    d2q[:, :n, n:] = np.einsum("ick,cj->ijk", dM_base[:, :, n:], turned)
    d2q[:, n:, :n] = d2q[:, :n, n:].transpose(0, 2, 1)
    d2q[:, :n, :n] = np.einsum("ic,cjk->ijk", M_base, spin)
    # v: -M[:, :6] b'' (b'' constant: e_min(j,k) x e_max(j,k)); q-v: the twin's, less dM[:, :6] b'(v)
    d2v[:, :n, :n] -= np.einsum("ic,cjk->ijk", M_base, _BIAS_HESSIAN)
    d2qv[:, :n, :] = 0.0
    d2qv[:, n:, :n] -= np.einsum("icj,ck->ijk", dM_base[:, :, n:], _floating.bias_jacobian(v))
    dM[:, :, :n] = 0.0
    return dtau_dq, dtau_dv, M


def _multi_dof_second(model, data, twin, twin_data, q_t, v, a, f_ext):
    """_inverse_dynamics_second of a model with multi-DoF joints: the tree twin's at its accelerations,
    turned into the joints' (multi_dof.correct_second_derivatives); returns the first-order derivatives."""
    a_t = _multi.twin_acceleration(model, v, a, data._a_tree).copy()
    tau = rnea(twin, twin_data, q_t, v, a_t, f_ext).copy()
    F, V, M = (x.copy() for x in rnea_derivatives(twin, twin_data, q_t, v, a_t, f_ext))
    _multi.correct_derivatives(model, v, a_t, tau, M, F, V)
    outs = (data._d2tau_dq2, data._d2tau_dv2, data._d2tau_dqdv, data._dM_dq)
    for out, twin_out in zip(outs, rnea_second_derivatives(twin, twin_data, q_t, v, a_t, f_ext)):
        out[...] = twin_out
    _multi.correct_second_derivatives(model, v, a_t, tau, F, V, M, *outs)
    return F, V, M


def _bias_hessian():
    """d2 b / dnu_j dnu_k (6, 6, 6) of the chain's velocity product b (kernels/free_flyer.py):
    e_min(j,k) x e_max(j,k), zero for j = k."""
    out = np.zeros((6, 6, 6))
    for j in range(6):
        for k in range(6):
            if j != k:
                out[:, j, k] = _floating.CROSSES[min(j, k), max(j, k)]
    return out


_BIAS_HESSIAN = _bias_hessian()


def rnea_second_derivatives(model, data, q, v, a, f_ext=None):
    """Second-order partial derivatives of inverse dynamics tau = rnea(q, v, a, f_ext), by the
    recursive IDSVA-SO algorithm (no finite differences):
    (d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq), each (nv, nv, nv), with
    d2tau_dq2[i, j, k] = d2 tau_i / dq_j dq_k (symmetric in j, k), d2tau_dv2 likewise in v,
    d2tau_dqdv[i, j, k] = d2 tau_i / dq_j dv_k and dM_dq[i, j, k] = d M_ij / dq_k (symmetric in
    i, j; also d2 tau_i / dq_k da_j). f_ext: None or (nbodies, 6) body-frame forces [n; f], held
    fixed in the body frames. A free flyer's q-derivatives are iterated along integrate's tangent
    directions, not symmetric in the root's rotations (_floating_second), nor are a multi-DoF joint's
    (multi_dof.py). -> Data buffers."""
    if has_multi_dof(model):
        _multi_dof_second(model, data, *multi_dof_inputs(model, data, q, v=v, a=a, f_ext=f_ext))
        return data.d2tau_dq2, data.d2tau_dv2, data.d2tau_dqdv, data.dM_dq
    q, v, a, f_ext = checked_inputs(model, data, True, q=q, v=v, a=a, f_ext=f_ext)
    _inverse_dynamics_second(model, data, q, v, a, f_ext)
    return data.d2tau_dq2, data.d2tau_dv2, data.d2tau_dqdv, data.dM_dq


def aba_second_derivatives(model, data, q, v, tau, f_ext=None):
    """Second-order partial derivatives of forward dynamics ddq = aba(q, v, tau, f_ext):
    (d2ddq_dq2, d2ddq_dv2, d2ddq_dqdv, dMinv_dq), each (nv, nv, nv), indexed as in
    `rnea_second_derivatives`; the fourth is d (M^-1)_ij / dq_k (= d2 ddq_i / dq_k dtau_j).

    From the second-order relation between inverse and forward dynamics (seed sec. IX): with the
    inverse-dynamics derivatives taken at ddq = aba(q, v, tau),
        d2ddq/dx dy = -M^-1 (d2tau/dx dy + dM/dx ddq_y + dM/dy ddq_x),   ddq_x = -M^-1 dtau/dx,
    where dM/dv = 0, and dMinv/dq_k = -M^-1 (dM/dq_k) M^-1. -> Data buffers."""
    if has_multi_dof(model):
        twin, twin_data, q_t, v, tau, f_ext = multi_dof_inputs(model, data, q, v=v, tau=tau, f_ext=f_ext)
        ddq = aba(model, data, q, v, tau, f_ext).copy()
        dtau_dq, dtau_dv, M = _multi_dof_second(model, data, twin, twin_data, q_t, v, ddq, f_ext)
    else:
        q, v, tau, f_ext = checked_inputs(model, data, True, q=q, v=v, tau=tau, f_ext=f_ext)
        ddq = aba(model, data, q, v, tau, f_ext).copy()
        dtau_dq, dtau_dv, M = _inverse_dynamics_second(model, data, q, v, ddq, f_ext)
    minus_Minv = -np.linalg.inv(M)
    ddq_dq = minus_Minv @ dtau_dq
    ddq_dv = minus_Minv @ dtau_dv
    # Contractions as stacks of nv x nv products over one derivative index (page-major views that
    # BLAS takes as they are): small products stay single-threaded, which matters on a busy machine.
    dM_pages, Y, X = data._so_cube
    dM_pages[:, :, :] = data._dM_dq.transpose(2, 0, 1)  # dM_pages[k] = dM/dq_k
    # qq: X[j] = d2tau[:, j, :] + (dM/dq_j) ddq_dq + ((dM/dq_k) ddq_dq[:, j])_k
    np.matmul(dM_pages, ddq_dq, out=Y)  # Y[j, l, k] = (dM/dq_j ddq_dq)[l, k]
    np.add(data._d2tau_dq2.transpose(1, 0, 2), Y, out=X)
    np.add(X, Y.transpose(2, 1, 0), out=X)
    np.matmul(minus_Minv, X, out=data._d2ddq_dq2.transpose(1, 0, 2))
    # qv: X[j] = d2tau_dqdv[:, j, :] + (dM/dq_j) ddq_dv
    np.matmul(dM_pages, ddq_dv, out=Y)
    np.add(data._d2tau_dqdv.transpose(1, 0, 2), Y, out=X)
    np.matmul(minus_Minv, X, out=data._d2ddq_dqdv.transpose(1, 0, 2))
    np.matmul(minus_Minv, data._d2tau_dv2.transpose(1, 0, 2), out=data._d2ddq_dv2.transpose(1, 0, 2))
    # dMinv/dq_k = -Minv (dM/dq_k) Minv
    np.matmul(dM_pages, minus_Minv, out=Y)
    np.matmul(minus_Minv, Y, out=X)
    np.negative(X.transpose(1, 2, 0), out=data._dMinv_dq)
    if not all_finite(data._d2ddq):
        raise non_finite_error(q=q, v=v, tau=tau, f_ext=f_ext)
    return data.d2ddq_dq2, data.d2ddq_dv2, data.d2ddq_dqdv, data.dMinv_dq
