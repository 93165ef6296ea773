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

from .dynamics import (aba, checked_inputs, coupled_result, coupled_tree_state, non_finite_error)
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


def rnea_second_derivatives(model, data, q, v, a, f_ext=None):
    """Second-order partial derivatives of inverse dynamics tau = rnea(q, v, a, f_ext), by the
    recursive IDSVA-SO algorithm (no finite differences):
    (d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq), each (nv, nv, nv), with
    d2tau_dq2[i, j, k] = d2 tau_i / dq_j dq_k (symmetric in j, k), d2tau_dv2 likewise in v,
    d2tau_dqdv[i, j, k] = d2 tau_i / dq_j dv_k and dM_dq[i, j, k] = d M_ij / dq_k (symmetric in
    i, j; also d2 tau_i / dq_k da_j). f_ext: None or (nbodies, 6) body-frame forces [n; f], held
    fixed in the body frames. -> Data buffers."""
    q, v, a, f_ext = checked_inputs(model, data, q=q, v=v, a=a, f_ext=f_ext)
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
    q, v, tau, f_ext = checked_inputs(model, data, q=q, v=v, tau=tau, f_ext=f_ext)
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
