"""Derivatives with respect to the model: twist_derivatives (d tau / d eta, 6 columns per joint)
against rnea_derivatives on panda and talos_reduced (the issue's target: ratio below 3), and mesh
inertia and its vertex derivatives on a real collision mesh (UR5 upper arm), checked public
functions and bare kernels, mesh_inertia next to trimesh's mass properties."""
import os

import numpy as np

import dyn_control as dc
from common import Row, per_call_us, robot_urdf
from dyn_control.inertia.mesh import mesh_inertia_derivatives_kernel, mesh_inertia_kernel

ROBOTS = ("panda", "talos_reduced")
MESH = os.path.join("ur_description", "meshes", "ur5", "collision", "upperarm.stl")


def _twist_rows():
    rows = []
    rng = np.random.default_rng(0)
    for name in ROBOTS:
        model = dc.load_urdf(robot_urdf(name))
        data = model.create_data()
        q = rng.uniform(-1, 1, model.nv)
        v = rng.normal(size=model.nv)
        a = rng.normal(size=model.nv)
        ours = per_call_us(lambda: dc.twist_derivatives(model, data, q, v, a))
        ref = per_call_us(lambda: dc.rnea_derivatives(model, data, q, v, a))
        rows.append(Row(f"twist_derivatives {name} (nv={model.nv})", ours, ref, ref_name="rnea_derivatives"))
    return rows


def _mesh_rows():
    import trimesh
    robots = os.path.dirname(os.path.dirname(os.path.dirname(robot_urdf("ur5_robot"))))
    mesh = trimesh.load(os.path.join(robots, MESH), force="mesh")
    V = np.ascontiguousarray(mesh.vertices, dtype=np.float64)
    F = np.ascontiguousarray(mesh.faces, dtype=np.int64)
    flat_v, flat_f = V.reshape(-1), F.reshape(-1)
    phi = np.empty(10)
    dphi = np.empty(10 * flat_v.shape[0])
    label = f"{len(V)} vertices, {len(F)} faces"

    def trimesh_mass_properties():
        mesh._cache.clear()   # trimesh caches its mass properties: recompute every call
        return mesh.moment_inertia

    return [
        Row("mesh_inertia (checked) ur5 upperarm.stl", per_call_us(lambda: dc.mesh_inertia(V, F, 1000.0)),
            per_call_us(trimesh_mass_properties), ref_name="trimesh", note=label),
        Row("mesh_inertia kernel ur5 upperarm.stl",
            per_call_us(lambda: mesh_inertia_kernel(flat_v, flat_f, 1000.0, phi)), note=f"us, {label}"),
        Row("mesh_inertia_derivatives (checked)", per_call_us(lambda: dc.mesh_inertia_derivatives(V, F, 1000.0)),
            note=f"us, {label}"),
        Row("mesh_inertia_derivatives kernel",
            per_call_us(lambda: mesh_inertia_derivatives_kernel(flat_v, flat_f, 1000.0, dphi)),
            note=f"us, {label}"),
    ]


def run():
    return _twist_rows() + _mesh_rows()
