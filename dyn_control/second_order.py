"""Public API of the second-order derivatives of inverse and forward dynamics.

Same pattern as dynamics.py: shapes are checked here, the kernel screens finiteness and refuses
non-finite input, results are Data buffers (copy to keep). Tensors are indexed [i, j, k] =
d2 y_i / dx_j dx'_k. Models with coupled mimic joints go through the tree kernel and the coupling
matrix G (q_tree = G q + offset, tau = G^T tau_tree), contracted on every index.
"""
import numpy as np

from .dynamics import (aba, as_vector, check_model_data, coupled_tree_state, external_forces,
                       non_finite_error, require_finite)
from .kernels import rnea_second_derivatives as _so


def _second_tree(model, data, q, v, a, f_ext):
    """The tree kernel at tree coordinates: fills data.so_second and the first-order by-products
    data.so_first = (dtau_dq, dtau_dv, M) of the tree."""
    if not _so.rnea_second_derivatives(
            model._parents, model._screw_axes, model._home_R, model._home_p, model._phi, q, v, a,
            model._base_accel, f_ext, data.R, data.p, data.oR, data.op, data.phi_world, data.so_vectors,
            data.so_matrices, data.so_mats, data.so_pair, data.so_tau, data.so_first, data.so_second):
        raise non_finite_error(q=q, v=v, a=a)


def _inverse_dynamics_second(model, data, q, v, a, f_ext):
    """Fills data.d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq; returns the first-order derivatives
    (dtau_dq, dtau_dv, M) of the same evaluation (arrays of data or new arrays when coupled)."""
    G = model.coupling
    if G is None:
        _second_tree(model, data, q, v, a, f_ext)
        return data.so_first
    require_finite(q=q, v=v, a=a)
    q_t, v_t, a_t = coupled_tree_state(model, data, q, v, a)
    _second_tree(model, data, q_t, v_t, a_t, f_ext)
    for tree, out in zip(data.so_second, (data.d2tau_dq2, data.d2tau_dv2, data.d2tau_dqdv, data.dM_dq)):
        out[:, :, :] = np.einsum("ijk,ia,jb,kc->abc", tree, G, G, G, optimize=True)
    return [G.T @ first @ G for first in data.so_first]


def rnea_second_derivatives(model, data, q, v, a, f_ext=None):
    """Second-order partial derivatives of inverse dynamics tau = rnea(q, v, a, f_ext), by the
    recursive IDSVA-SO algorithm (no finite differences):
    (d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq), each (nv, nv, nv), with
    d2tau_dq2[i, j, k] = d2 tau_i / dq_j dq_k (symmetric in j, k), d2tau_dv2 likewise in v,
    d2tau_dqdv[i, j, k] = d2 tau_i / dq_j dv_k and dM_dq[i, j, k] = d M_ij / dq_k (symmetric in
    i, j; also d2 tau_i / dq_k da_j). f_ext: None or (nbodies, 6) body-frame forces [n; f], held
    fixed in the body frames. -> Data buffers."""
    check_model_data(model, data)
    nv = model.nv
    q = as_vector("q", q, nv)
    v = as_vector("v", v, nv)
    a = as_vector("a", a, nv)
    f_ext = external_forces(model, data, f_ext)
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
    check_model_data(model, data)
    nv = model.nv
    q = as_vector("q", q, nv)
    v = as_vector("v", v, nv)
    tau = as_vector("tau", tau, nv)
    f_ext = external_forces(model, data, f_ext)
    ddq = aba(model, data, q, v, tau, f_ext).copy()
    dtau_dq, dtau_dv, M = _inverse_dynamics_second(model, data, q, v, ddq, f_ext)
    minus_Minv = -np.linalg.inv(M)
    ddq_dq = minus_Minv @ dtau_dq
    ddq_dv = minus_Minv @ dtau_dv
    # Contractions as stacks of nv x nv products over one derivative index (page-major views that
    # BLAS takes as they are): small products stay single-threaded, which matters on a busy machine.
    dM_pages, Y, X = data.so_cube
    dM_pages[:, :, :] = data.dM_dq.transpose(2, 0, 1)  # dM_pages[k] = dM/dq_k
    # qq: X[j] = d2tau[:, j, :] + (dM/dq_j) ddq_dq + ((dM/dq_k) ddq_dq[:, j])_k
    np.matmul(dM_pages, ddq_dq, out=Y)  # Y[j, l, k] = (dM/dq_j ddq_dq)[l, k]
    np.add(data.d2tau_dq2.transpose(1, 0, 2), Y, out=X)
    np.add(X, Y.transpose(2, 1, 0), out=X)
    np.matmul(minus_Minv, X, out=data.d2ddq_dq2.transpose(1, 0, 2))
    # qv: X[j] = d2tau_dqdv[:, j, :] + (dM/dq_j) ddq_dv
    np.matmul(dM_pages, ddq_dv, out=Y)
    np.add(data.d2tau_dqdv.transpose(1, 0, 2), Y, out=X)
    np.matmul(minus_Minv, X, out=data.d2ddq_dqdv.transpose(1, 0, 2))
    np.matmul(minus_Minv, data.d2tau_dv2.transpose(1, 0, 2), out=data.d2ddq_dv2.transpose(1, 0, 2))
    # dMinv/dq_k = -Minv (dM/dq_k) Minv
    np.matmul(dM_pages, minus_Minv, out=Y)
    np.matmul(minus_Minv, Y, out=X)
    np.negative(X.transpose(1, 2, 0), out=data.dMinv_dq)
    return data.d2ddq_dq2, data.d2ddq_dv2, data.d2ddq_dqdv, data.dMinv_dq
