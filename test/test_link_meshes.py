"""inertia_from_link_meshes: a link's URDF meshes as solids of uniform density.

Oracles: trimesh's own mass properties of the same mesh file, scaled and placed by trimesh and
moved to the link origin here (parallel axis theorem), on example-robot-data's UR5 and on a
two-mesh link; and the analytic inertia of a box written to an STL in tmp_path.
"""
import os

import numpy as np
import pytest
import trimesh

import dyn_control as dc
from oracles import robot_urdf, robots_dir

pytestmark = pytest.mark.kernels

DENSITY = 1200.0


def phi_at_origin(mass, com, inertia_at_com):
    """phi = [m, m c, Ixx, Iyy, Izz, Ixy, Ixz, Iyz] about the frame origin (tensor entries)."""
    I_o = inertia_at_com + mass * (com @ com * np.eye(3) - np.outer(com, com))
    return np.array([mass, *(mass * com), I_o[0, 0], I_o[1, 1], I_o[2, 2], I_o[0, 1], I_o[0, 2], I_o[1, 2]])


def trimesh_phi(path, density, scale=(1.0, 1.0, 1.0), R=np.eye(3), p=np.zeros(3)):
    mesh = trimesh.load(path, force="mesh")
    mesh.apply_transform(np.diag([*scale, 1.0]))
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    mesh.apply_transform(T)
    mesh.density = density
    return phi_at_origin(mesh.mass, np.asarray(mesh.center_mass), np.asarray(mesh.moment_inertia))


def assert_relative(ours, ref, rtol=1e-9):
    # each group of parameters on its own scale: mass, first moment, inertia
    for sl in (slice(0, 1), slice(1, 4), slice(4, 10)):
        scale = float(np.abs(ref[sl]).max())
        assert np.abs(ours[sl] - ref[sl]).max() <= rtol * scale, (ours, ref)


def test_ur5_collision_meshes_match_trimesh():
    share = os.path.dirname(os.path.dirname(robots_dir()))
    model = dc.load_urdf(robot_urdf("ur5_robot"), package_dirs=[share])
    checked = []
    for link, shapes in model.link_geometry.items():
        meshes = [s for s in shapes if s["kind"] == "collision" and s["type"] == "mesh"]
        if not meshes or any(s["path"] is None or not trimesh.load(s["path"], force="mesh").is_watertight
                             for s in meshes):
            continue
        ref = sum(trimesh_phi(s["path"], DENSITY, s["scale"], s["R"], s["p"]) for s in meshes)
        assert_relative(dc.inertia_from_link_meshes(model, link, DENSITY), ref)
        checked.append(link)
    if not checked:
        pytest.skip("no UR5 link has a resolvable watertight collision mesh to compare")
    assert "upper_arm_link" in checked


# ----------------------------------------------------------------------------------------------
# A small URDF with box meshes made here


BOX = np.array([0.3, 0.2, 0.1])
# STL stores float32 coordinates: the box the file holds has corners at float32(+-extent / 2)
BOX_STORED = 2.0 * (BOX / 2).astype(np.float32).astype(np.float64)


def box_urdf(folder, shapes, mesh="box.stl"):
    """A one-joint URDF whose link `tool` carries the given (kind, xyz, rpy, scale) mesh shapes."""
    trimesh.creation.box(extents=BOX).export(os.path.join(folder, "box.stl"))
    elements = "".join(
        f'<{kind}><origin xyz="{xyz}" rpy="{rpy}"/><geometry><mesh filename="{mesh}" scale="{scale}"/>'
        f"</geometry></{kind}>" for kind, xyz, rpy, scale in shapes)
    text = f"""<robot name="boxes">
  <link name="base"/>
  <link name="tool">
    <inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>
    {elements}
  </link>
  <joint name="j" type="revolute"><parent link="base"/><child link="tool"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""
    path = os.path.join(folder, "boxes.urdf")
    with open(path, "w") as f:
        f.write(text)
    return path


def rpy_matrix(r, p, y):
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def analytic_box_phi(extents, density, R, p):
    a, b, c = extents
    m = density * a * b * c
    I_c = m / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    return phi_at_origin(m, np.asarray(p, dtype=float), R @ I_c @ R.T)


def test_scaled_and_placed_box_is_the_analytic_box(tmp_path):
    path = box_urdf(str(tmp_path), [("collision", "0.1 -0.2 0.3", "0.3 -0.5 1.1", "2 1 0.5")])
    model = dc.load_urdf(path)
    R = rpy_matrix(0.3, -0.5, 1.1)
    ref = analytic_box_phi(BOX_STORED * [2, 1, 0.5], DENSITY, R, [0.1, -0.2, 0.3])
    assert_relative(dc.inertia_from_link_meshes(model, "tool", DENSITY), ref)


def test_two_meshes_add_up_and_collision_comes_before_visual(tmp_path):
    path = box_urdf(str(tmp_path), [("collision", "0 0 0", "0 0 0", "1 1 1"),
                                    ("collision", "0 0.5 0", "0 0 1.5707963267948966", "1 1 1"),
                                    ("visual", "5 5 5", "0 0 0", "3 3 3")])
    model = dc.load_urdf(path)
    R = rpy_matrix(0, 0, np.pi / 2)
    ref = analytic_box_phi(BOX_STORED, DENSITY, np.eye(3), np.zeros(3)) + analytic_box_phi(BOX_STORED, DENSITY, R, [0, 0.5, 0])
    assert_relative(dc.inertia_from_link_meshes(model, "tool", DENSITY), ref)


def test_visual_meshes_when_there_is_no_collision_mesh(tmp_path):
    path = box_urdf(str(tmp_path), [("visual", "0 0 0.2", "0 0 0", "1 1 1")])
    model = dc.load_urdf(path)
    ref = analytic_box_phi(BOX_STORED, DENSITY, np.eye(3), [0, 0, 0.2])
    assert_relative(dc.inertia_from_link_meshes(model, "tool", DENSITY), ref)


def test_mirroring_scale_keeps_a_positive_mass(tmp_path):
    path = box_urdf(str(tmp_path), [("collision", "0.2 0 0", "0 0 0", "-1 1 1")])
    model = dc.load_urdf(path)
    ref = analytic_box_phi(BOX_STORED, DENSITY, np.eye(3), [0.2, 0, 0])
    assert_relative(dc.inertia_from_link_meshes(model, "tool", DENSITY), ref)


def test_package_uri_through_package_dirs(tmp_path):
    package = tmp_path / "my_robot"
    package.mkdir()
    path = box_urdf(str(package), [("collision", "0 0 0", "0 0 0", "1 1 1")],
                    mesh="package://my_robot/box.stl")
    ref = analytic_box_phi(BOX_STORED, DENSITY, np.eye(3), np.zeros(3))
    model = dc.load_urdf(path, package_dirs=[str(tmp_path)])
    assert_relative(dc.inertia_from_link_meshes(model, "tool", DENSITY), ref)
    with pytest.raises(ValueError, match=r"link 'tool', collision mesh 'package://my_robot/box.stl'.*not found"):
        dc.inertia_from_link_meshes(dc.load_urdf(path), "tool", DENSITY)


def test_errors_name_the_link_and_the_mesh(tmp_path):
    folder = str(tmp_path)
    path = box_urdf(folder, [("collision", "0 0 0", "0 0 0", "1 1 1")], mesh="open.stl")
    box = trimesh.creation.box(extents=BOX)
    trimesh.Trimesh(box.vertices, box.faces[:-1], process=False).export(os.path.join(folder, "open.stl"))
    model = dc.load_urdf(path)
    with pytest.raises(ValueError, match=r"link 'tool', collision mesh 'open.stl'.*not watertight"):
        dc.inertia_from_link_meshes(model, "tool", DENSITY)
    os.remove(os.path.join(folder, "open.stl"))
    with pytest.raises(ValueError, match=r"link 'tool', collision mesh 'open.stl'.*not found"):
        dc.inertia_from_link_meshes(dc.load_urdf(path), "tool", DENSITY)
    with pytest.raises(ValueError, match="link 'base' has no collision or visual mesh"):
        dc.inertia_from_link_meshes(model, "base", DENSITY)
    with pytest.raises(ValueError, match="unknown link 'nope'"):
        dc.inertia_from_link_meshes(model, "nope", DENSITY)
    with pytest.raises(ValueError, match="density"):
        dc.inertia_from_link_meshes(model, "tool", -1.0)
