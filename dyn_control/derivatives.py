"""Public API of the first-order derivatives of the dynamics and of the joint torque regressor.

Same pattern as dynamics.py: shapes are checked here, the kernels screen finiteness and refuse
non-finite input, results are Data buffers (copy to keep). Models with coupled mimic joints go
through the tree kernels and the coupling matrix G (q_tree = G q + offset, tau = G^T tau_tree).
"""
import numpy as np

from .dynamics import _coupled, as_vector, check_model_data, external_forces, non_finite_error
from .kernels import regressor as _regressor
from .kernels import rnea_derivatives as _rnea_derivatives


def _regressor_tree(model, data, q, v, a, Y):
    if not _regressor.regressor(model._parents, model._screw_axes, model._home_R, model._home_p, q, v,
                                a, model._base_accel, data.R, data.p, data.oR, data.op, data.oS,
                                data.V, data.Vdot, data.tmp6, Y):
        raise non_finite_error(q=q, v=v, a=a)
    return Y


def regressor(model, data, q, v, a):
    """Joint torque regressor Y (nv, 10 * nbodies) with rnea(q, v, a) = Y @ model.inertial_parameters()
    (per body [m, hx, hy, hz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz], inertia about the body origin)
    -> data.Y."""
    check_model_data(model, data)
    nv = model.nv
    q = as_vector("q", q, nv)
    v = as_vector("v", v, nv)
    a = as_vector("a", a, nv)
    if model.coupling is None:
        return _regressor_tree(model, data, q, v, a, data.Y)
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v)) and np.all(np.isfinite(a))):
        raise non_finite_error(q=q, v=v, a=a)
    q_t, v_t, a_t = _coupled(model, data, q, v, a)
    data.Y[:, :] = model.coupling.T @ _regressor_tree(model, data, q_t, v_t, a_t, data.Y_tree)
    return data.Y


def _rnea_derivatives_tree(model, data, q, v, a, f_ext, dtau_dq, dtau_dv, M):
    if not _rnea_derivatives.rnea_derivatives(
            model._parents, model._screw_axes, model._home_R, model._home_p, model._phi, q, v, a,
            model._base_accel, f_ext, data.R, data.p, data.oR, data.op, data.oS, data.oV, data.oA_gf,
            data.ophi_c, data.oL_c, data.oB_sym, data.oF_c, data.oAlpha, data.oBeta, data.tmp6,
            dtau_dq, dtau_dv, M):
        raise non_finite_error(q=q, v=v, a=a)


def rnea_derivatives(model, data, q, v, a, f_ext=None):
    """First-order derivatives of tau = rnea(q, v, a, f_ext): (dtau_dq, dtau_dv, M) -> data.dtau_dq,
    data.dtau_dv, data.M, each (nv, nv); M = d tau / d a. f_ext: None or (nbodies, 6), each body's
    spatial force [n; f] in its own frame (constant in that frame)."""
    check_model_data(model, data)
    nv = model.nv
    q = as_vector("q", q, nv)
    v = as_vector("v", v, nv)
    a = as_vector("a", a, nv)
    f_ext = external_forces(model, data, f_ext)
    G = model.coupling
    if G is None:
        _rnea_derivatives_tree(model, data, q, v, a, f_ext, data.dtau_dq, data.dtau_dv, data.M)
        return data.dtau_dq, data.dtau_dv, data.M
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v)) and np.all(np.isfinite(a))):
        raise non_finite_error(q=q, v=v, a=a)
    q_t, v_t, a_t = _coupled(model, data, q, v, a)
    _rnea_derivatives_tree(model, data, q_t, v_t, a_t, f_ext, data.dtau_dq_tree, data.dtau_dv_tree,
                           data.M_tree)
    data.dtau_dq[:, :] = G.T @ data.dtau_dq_tree @ G
    data.dtau_dv[:, :] = G.T @ data.dtau_dv_tree @ G
    data.M[:, :] = G.T @ data.M_tree @ G
    return data.dtau_dq, data.dtau_dv, data.M
