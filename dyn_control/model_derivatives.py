"""Derivatives with respect to the model itself: joint screw axes (seed "Differential Dynamics and
Mesh-Based Inertia", sec. 2, Algorithm 1) and link inertia from the URDF's meshes (sec. 4).

Same pattern as dynamics.py: inputs brought to one form and shapes checked here, the kernels screen
finiteness of inputs and results, results are read-only views of Data buffers (copy to keep).
Models with coupled mimic joints go through the tree kernel and the coupling matrix G
(tau = G^T tau_tree).
"""
import os

import numpy as np

from . import floating_base as _floating
from . import multi_dof as _multi
from .dynamics import (checked_inputs, coupled_result, coupled_tree_state, floating_tree_state, has_multi_dof,
                       multi_dof_inputs, non_finite_error)
from .inertia.mesh import mesh_inertia
from .inertia.parameters import transform_phi
from .kernels import twist_derivatives as _twist
from .model import FREE_FLYER_DOFS, Model


def _twist_derivatives_tree(model, data, q, v, a, f_ext, out):
    if not _twist.twist_derivatives(
            model._parents, model._screw_axes, model._home_R, model._home_p, model._phi, q, v, a,
            model._base_accel, f_ext, data._R, data._p, data._oR, data._op, data._ophi_c,
            data._deriv_vectors, data._eta_columns, data._eta_pose, data._eta_tmp6, out):
        raise non_finite_error(q=q, v=v, a=a, f_ext=f_ext)
    return out


def twist_derivatives(model, data, q, v, a, f_ext=None):
    """d tau / d eta at eta = 0 -> data.dtau_deta, shape (nv, 6 * nbodies) (nv == nbodies without
    mimic coupling), for the joint screws perturbed as S_i <- Ad_{exp(eta_i)} S_i
    (`Model.with_twist_perturbation`): column 6 i + k is component k of eta_i = [w; v], in joint
    i's frame at q_i = 0. f_ext: None or (nbodies, 6), each body's spatial force [n; f] in its own
    frame (it moves with the body). A free flyer's six coordinates have no screw of their own: their
    columns are zero, the others the tree twin's (floating_base.py); so are a multi-DoF joint's
    (multi_dof.py)."""
    if has_multi_dof(model):
        twin, twin_data, q_t, v, a, forces = multi_dof_inputs(model, data, q, v=v, a=a, f_ext=f_ext)
        a_t = _multi.twin_acceleration(model, v, a, data._a_tree)
        data._dtau_deta[:] = twist_derivatives(twin, twin_data, q_t, v, a_t, None if f_ext is None else forces)
        for joint in model.multi_dof_joints:
            data._dtau_deta[:, 6 * joint.body:6 * (joint.body + joint.nv)] = 0.0
        return data.dtau_deta
    q, v, a, f_ext = checked_inputs(model, data, True, q=q, v=v, a=a, f_ext=f_ext)
    if model.root_joint is not None:
        q_t, a_t = floating_tree_state(model, data, q, v, a, f_ext=f_ext)
        twin, twin_data = _floating.tree_twin(model, data)
        data._dtau_deta[:] = _twist_derivatives_tree(twin, twin_data, q_t.copy(), v, a_t.copy(), f_ext,
                                                     twin_data._dtau_deta)
        data._dtau_deta[:, :6 * FREE_FLYER_DOFS] = 0.0
        return data.dtau_deta
    G = model.coupling
    if G is None:
        _twist_derivatives_tree(model, data, q, v, a, f_ext, data._dtau_deta)
        return data.dtau_deta
    q_t, v_t, a_t = coupled_tree_state(model, data, q, v, a)
    tree = _twist_derivatives_tree(model, data, q_t, v_t, a_t, f_ext, data._dtau_deta_tree)
    coupled_result(data._dtau_deta, G.T @ tree, q=q, v=v, a=a, f_ext=f_ext)
    return data.dtau_deta


# ----------------------------------------------------------------------------------------------
# Inertia from the link's meshes


def _load_triangles(path, where):
    """(vertices, faces) of a mesh file through trimesh, its parts merged (STL, OBJ, DAE, ...)."""
    try:
        import trimesh
    except ImportError:
        raise ValueError(f"{where}: reading meshes needs the trimesh package (pip install trimesh)") from None
    try:
        mesh = trimesh.load(path, force="mesh")
    except Exception as exc:  # trimesh raises many kinds (a missing pycollada for DAE among them)
        raise ValueError(f"{where}: cannot read the mesh file ({type(exc).__name__}: {exc})") from None
    if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
        raise ValueError(f"{where}: the file holds no triangles")
    if not mesh.is_watertight:
        raise ValueError(f"{where}: the mesh is not watertight (it has open edges), so it bounds "
                         "no volume; close it or give the link an <inertial> instead")
    return np.asarray(mesh.vertices, dtype=np.float64), np.asarray(mesh.faces, dtype=np.int64)


def inertia_from_link_meshes(model, link, density):
    """Inertial parameters phi (10,) = [m, hx, hy, hz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz] of a link's
    meshes as solids of uniform `density` [kg/m^3], in the link's own frame (h = m c, inertia about
    the link origin), summed over its collision meshes, or its visual meshes when it has no
    collision mesh. Each mesh is scaled by its <mesh scale>, then placed by its <origin>
    (seed sec. 4 for one mesh, eq. 29 for the placement). Primitive shapes (box, cylinder, sphere)
    are not counted. Raises ValueError naming the link and the mesh when the link has no mesh, a
    mesh file is unresolved, unreadable or not watertight."""
    if not isinstance(model, Model):
        raise ValueError(f"model must be a dyn_control.Model, got {type(model).__name__}")
    if not isinstance(link, str) or link not in model.link_geometry:
        raise ValueError(f"unknown link {link!r}: robot {model.name!r} has links "
                         f"{', '.join(model.link_geometry)}")
    try:
        rho = float(density)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"density must be a number, got {density!r}") from None
    if not (np.isfinite(rho) and rho > 0.0):
        raise ValueError(f"density must be finite and positive, got {density!r}")
    shapes = model.link_geometry[link]
    meshes = [s for s in shapes if s["kind"] == "collision" and s["type"] == "mesh"]
    if not meshes:
        meshes = [s for s in shapes if s["kind"] == "visual" and s["type"] == "mesh"]
    if not meshes:
        raise ValueError(f"link {link!r} has no collision or visual mesh")
    phi = np.zeros(10)
    for shape in meshes:
        where = f"link {link!r}, {shape['kind']} mesh {shape['uri']!r}"
        if shape["path"] is None:
            raise ValueError(f"{where}: the file was not found (pass package_dirs to load_urdf for "
                             "package:// URIs)")
        vertices, faces = _load_triangles(shape["path"], where)
        scale = np.asarray(shape["scale"], dtype=np.float64)
        vertices = vertices * scale
        if np.prod(scale) < 0.0:
            faces = faces[:, ::-1]  # a mirroring scale turns the faces inside out
        try:
            phi_mesh = mesh_inertia(vertices, faces, rho, name=os.path.basename(shape["path"]))
        except ValueError as exc:
            raise ValueError(f"link {link!r}: {exc}") from None
        phi += transform_phi(phi_mesh, shape["R"], shape["p"])
    return phi
