"""Public API of the centre of mass, its Jacobian, the centroidal momentum matrix and the centroidal
momentum's rate (Pinocchio's centerOfMass, jacobianCenterOfMass, ccrba and
computeCentroidalMomentumTimeVariation), for fixed and floating bases (kernels/centroidal.py).

World frame: the centre of mass c, J_com with dc/dt = J_com v, and A_g with h_g = A_g v the
centroidal momentum [k; l], angular first (Pinocchio: linear first): the angular momentum about c
and the linear momentum, in the world's axes. Results are read-only views of Data buffers, but the
momentum and its rate (new arrays).

The momentum and its rate dh_g/dt = A_g a + dA_g/dt v come from one inverse dynamics pass
(kernels/centroidal.momentum_and_rate): the bodies' momenta summed, and the rate as the sum of the
wrenches on the robot about c (the point's own motion adds c' x m c' = 0): the forces through the
root joints (gravity's wrench taken out) plus m g. Multi-DoF joints through the tree twin (multi_dof.py).
"""
import numpy as np

from . import multi_dof as _multi
from .dynamics import (_tree_q, as_vector, check_model_data, coupled_result, entry_call, fast, has_multi_dof,
                       multi_dof_inputs, non_finite_error, rnea, strict)
from .kernels import centroidal as _centroidal
from .kernels import entry as _entry


_fast_centroidal = strict(_entry.centroidal)
_fast_center_of_mass = strict(_entry.center_of_mass)


def _compute(model, data, q):
    """Runs the kernel on q (nq,): data.com, data.J_com and data.A_g."""
    if fast(_fast_centroidal, model, data, q):
        return
    if has_multi_dof(model):    # on the tree twin (multi_dof.py), whose columns are the joints'
        twin, twin_data, q_t = multi_dof_inputs(model, data, q)
        _compute(twin, twin_data, q_t)
        data._com[:], data._J_com[:], data._A_g[:] = twin_data.com, twin_data.J_com, twin_data.A_g
        return
    check_model_data(model, data, True)
    q, q_t = _tree_q(model, data, q)
    if entry_call(_entry.centroidal, model, data, q):
        return
    G = model.coupling
    if not _centroidal.centroidal(model._parents, model._screw_axes, model._home_R, model._home_p, model._phi, q_t,
                                  data._base_R, data._base_p, data._R, data._p, data._oR, data._op, data._oS,
                                  data._phi_composite, data._F, data._com, data._J_com_tree, data._A_g_tree):
        if not model.phi[:, 0].sum() > 0.0:
            raise ValueError(f"robot {model.name!r} has no mass: its centre of mass is undefined")
        raise non_finite_error(q=q)
    if G is not None:
        coupled_result(data._J_com, data._J_com_tree @ G, q=q)
        coupled_result(data._A_g, data._A_g_tree @ G, q=q)


def center_of_mass(model, data, q):
    """The centre of mass (3,) in the world frame  -> data.com."""
    if fast(_fast_center_of_mass, model, data, q):
        return data.com
    if has_multi_dof(model):
        data._com[:] = center_of_mass(*multi_dof_inputs(model, data, q))
        return data.com
    check_model_data(model, data, True)
    q = as_vector("q", q, model.nq)
    if not entry_call(_entry.center_of_mass, model, data, q):
        _compute(model, data, q)    # names what is wrong, or a mimic coupling's (J_com and A_g too)
    return data.com


def jacobian_center_of_mass(model, data, q):
    """J_com (3, nv), the centre of mass's velocity J_com v in the world frame  -> data.J_com
    (data.com too)."""
    _compute(model, data, q)
    return data.J_com


def centroidal_momentum_matrix(model, data, q):
    """A_g (6, nv): A_g v = [k; l], the angular momentum about the centre of mass and the linear
    momentum, world axes  -> data.A_g (data.com and data.J_com too)."""
    _compute(model, data, q)
    return data.A_g


def centroidal_momentum(model, data, q, v):
    """h_g = A_g v (6,): [k; l], the angular momentum about the centre of mass and the linear momentum,
    world axes (a new array)."""
    A_g = centroidal_momentum_matrix(model, data, q)
    return A_g @ as_vector("v", v, model.nv)


def centroidal_momentum_time_variation(model, data, q, v, a):
    """(h_g, dh_g): the centroidal momentum A_g v and its rate A_g a + dA_g/dt v (6,) each, [angular
    about the centre of mass; linear], world axes (module docstring; new arrays)."""
    if has_multi_dof(model):
        twin, twin_data, q_t, v, a = multi_dof_inputs(model, data, q, v=v, a=a)
        a_t = _multi.twin_acceleration(model, v, a, np.empty(model.nv))
        return centroidal_momentum_time_variation(twin, twin_data, q_t, v, a_t)
    rnea(model, data, q, v, a)     # checks the inputs; the tree's poses, twists and joint forces
    scratch = data.__dict__.get("_momentum_scratch")
    if scratch is None:
        scratch = data.__dict__["_momentum_scratch"] = (np.empty((model.nbodies, 6)), np.empty((model.nbodies, 4)),
                                                        np.empty((3, 6)), np.empty((4, 3)))
    h, dh = np.empty(6), np.empty(6)
    if not _centroidal.momentum_and_rate(model._parents, data._R, data._p, model._phi, data._V, data._F,
                                         data._base_R, data._base_p, model._gravity, *scratch, h, dh):
        if not model.phi[:, 0].sum() > 0.0:
            raise ValueError(f"robot {model.name!r} has no mass: its centre of mass is undefined")
        raise non_finite_error(q=q, v=v, a=a)
    return h, dh
