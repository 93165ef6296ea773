"""Mesh-based inertia (seed sec. 4), its vertex derivatives, and the derivative of a transformed
inertia (seed sec. 5), against independent references: trimesh's mass properties (moved to the
mesh origin here, by the parallel-axis theorem), closed-form box inertia, point-mass momenta, and
central differences of the public functions. Also runs with NUMBA_DISABLE_JIT=1.
"""
import os

import numpy as np
import pytest
import trimesh
from hypothesis import given, settings
from hypothesis import strategies as st

from dyn_control.inertia import (check_physical_consistency, mesh_inertia, mesh_inertia_derivatives,
                                 phi_to_spatial_inertia, spatial_inertia_to_phi, transform_phi,
                                 translated_inertia_derivative)

from oracles import central_difference, robots_dir

pytestmark = pytest.mark.kernels

RTOL_MASS = 1e-9    # against trimesh and closed forms
RTOL_FD = 1e-6      # against central differences
NAME = "link3.stl"


# ----------------------------------------------------------------------------------------------
# Independent reference helpers (no dyn_control code).


def trimesh_phi(mesh, density):
    """phi from trimesh: mass, centre of mass, inertia about the COM -> inertia about the origin."""
    mesh = mesh.copy()
    mesh.density = density
    m, c, I_c = mesh.mass, np.asarray(mesh.center_mass), np.asarray(mesh.moment_inertia)
    I_o = I_c + m * (c @ c * np.eye(3) - np.outer(c, c))  # parallel-axis theorem
    return np.array([m, *(m * c), I_o[0, 0], I_o[1, 1], I_o[2, 2], I_o[0, 1], I_o[0, 2], I_o[1, 2]])


def phi_scale(phi, vertices):
    """Per-entry scale for relative comparisons: m, m L for h, m L^2 for I (L the mesh's reach)."""
    L = np.abs(vertices).max()
    m = abs(phi[0])
    return np.array([m, m * L, m * L, m * L] + [m * L * L] * 6)


def assert_phi_close(phi, ref, vertices, rtol):
    err = np.abs(np.asarray(phi) - ref) / phi_scale(ref, vertices)
    assert err.max() <= rtol, f"relative error {err.max():.3e} > {rtol:.0e}: {phi} vs {ref}"


def hat(eta):
    """4x4 matrix of the twist eta = [w; v]."""
    w, v = eta[:3], eta[3:]
    X = np.zeros((4, 4))
    X[:3, :3] = [[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]
    X[:3, 3] = v
    return X


def expm(X, terms=30):
    """Matrix exponential by its series (small arguments only, as in the difference quotients)."""
    out = np.eye(X.shape[0])
    term = np.eye(X.shape[0])
    for k in range(1, terms):
        term = term @ X / k
        out = out + term
    return out


def skew(a):
    return np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])


def Ad_inv(T):
    """Ad_{T^-1} (angular-first) of a 4x4 transform, written out here."""
    R, p = T[:3, :3], T[:3, 3]
    X = np.zeros((6, 6))
    X[:3, :3] = R.T
    X[3:, 3:] = R.T
    X[3:, :3] = -R.T @ skew(p)
    return X


def spatial_G(phi):
    m, h = phi[0], phi[1:4]
    I = np.array([[phi[4], phi[7], phi[8]], [phi[7], phi[5], phi[9]], [phi[8], phi[9], phi[6]]])
    return np.block([[I, skew(h)], [skew(h).T, m * np.eye(3)]])


def phi_of_G(G):
    return np.array([G[3, 3], G[2, 4], G[0, 5], G[1, 3], G[0, 0], G[1, 1], G[2, 2],
                     G[0, 1], G[0, 2], G[1, 2]])


def transformed_phi_reference(phi_bar, T):
    """phi of Ad_T^-T Gbar Ad_T^-1 (seed eq. 29), with the adjoint built here."""
    X = Ad_inv(T)
    return phi_of_G(X.T @ spatial_G(phi_bar) @ X)


def rotation(rng):
    q = rng.normal(size=4)
    return quat_matrix(q)


def quat_matrix(q):
    w, x, y, z = np.asarray(q, dtype=float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def pose(R, p):
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = p
    return T


def _off_origin_box():
    R = quat_matrix([0.9, 0.2, -0.3, 0.4])
    return trimesh.creation.box(extents=(0.3, 0.5, 0.7), transform=pose(R, [0.4, -0.25, 0.6]))


def _off_origin_sphere():
    mesh = trimesh.creation.icosphere(subdivisions=1, radius=0.3)
    mesh.apply_translation([0.2, 0.5, -0.1])
    return mesh


PRIMITIVES = {
    "box": lambda: trimesh.creation.box(extents=(0.3, 0.5, 0.7)),
    "icosphere": lambda: trimesh.creation.icosphere(subdivisions=2, radius=0.4),
    "cylinder": lambda: trimesh.creation.cylinder(radius=0.2, height=0.6, sections=24),
    "box_moved": _off_origin_box,
    "icosphere_moved": _off_origin_sphere,
}

# small collision meshes (a few hundred faces) of real robots
REAL_MESHES = [
    "ur_description/meshes/ur5/collision/base.stl",
    "ur_description/meshes/ur5/collision/shoulder.stl",
    "ur_description/meshes/ur5/collision/upperarm.stl",
    "ur_description/meshes/ur5/collision/forearm.stl",
    "ur_description/meshes/ur5/collision/wrist1.stl",
    "ur_description/meshes/ur5/collision/wrist3.stl",
    "panda_description/meshes/collision/link0.stl",
    "panda_description/meshes/collision/link3.stl",
    "panda_description/meshes/collision/link7.stl",
    "panda_description/meshes/collision/hand.stl",
    "panda_description/meshes/collision/finger.stl",
]


def load_real_mesh(rel):
    """A real mesh that trimesh itself calls a closed, consistently wound volume, else skip."""
    try:
        path = os.path.join(robots_dir(), rel)
    except RuntimeError as exc:
        pytest.skip(f"example-robot-data not found: {exc}")
    if not os.path.isfile(path):
        pytest.skip(f"{rel} not in this example-robot-data version")
    mesh = trimesh.load(path, force="mesh")
    if not (mesh.is_watertight and mesh.is_winding_consistent):
        pytest.skip(f"{rel}: trimesh reports it not watertight or not winding-consistent")
    return mesh


# ----------------------------------------------------------------------------------------------
# Mass properties against trimesh and closed forms.


@pytest.mark.parametrize("shape", sorted(PRIMITIVES))
def test_primitives_match_trimesh(shape):
    mesh = PRIMITIVES[shape]()
    phi = mesh_inertia(mesh.vertices, mesh.faces, 2700.0, name=shape)
    assert_phi_close(phi, trimesh_phi(mesh, 2700.0), mesh.vertices, RTOL_MASS)


def test_rotated_translated_box_closed_form():
    """Box of sides (a, b, c): m = rho a b c, I_com = m/12 diag(b^2+c^2, ...), rotated and shifted."""
    a, b, c, rho = 0.3, 0.5, 0.7, 1200.0
    R, p = quat_matrix([0.9, 0.2, -0.3, 0.4]), np.array([0.4, -0.25, 0.6])
    mesh = _off_origin_box()
    m = rho * a * b * c
    I_c = R @ (m / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])) @ R.T
    I_o = I_c + m * (p @ p * np.eye(3) - np.outer(p, p))
    ref = np.array([m, *(m * p), I_o[0, 0], I_o[1, 1], I_o[2, 2], I_o[0, 1], I_o[0, 2], I_o[1, 2]])
    phi = mesh_inertia(mesh.vertices, mesh.faces, rho)
    assert_phi_close(phi, ref, mesh.vertices, RTOL_MASS)


@pytest.mark.parametrize("rel", REAL_MESHES,
                         ids=[os.path.splitext(r)[0].replace("/", ".") for r in REAL_MESHES])
def test_real_meshes_match_trimesh(rel):
    mesh = load_real_mesh(rel)
    phi = mesh_inertia(mesh.vertices, mesh.faces, 1000.0, name=rel)
    assert_phi_close(phi, trimesh_phi(mesh, 1000.0), mesh.vertices, RTOL_MASS)


def test_hollow_sphere_is_outer_minus_inner():
    """A cavity (inner shell wound inwards) is a valid closed outward-oriented mesh."""
    outer = trimesh.creation.icosphere(subdivisions=2, radius=0.5)
    inner = trimesh.creation.icosphere(subdivisions=2, radius=0.3)
    V = np.vstack([outer.vertices, inner.vertices])
    F = np.vstack([outer.faces, inner.faces[:, ::-1] + len(outer.vertices)])
    phi = mesh_inertia(V, F, 3.0)
    ref = trimesh_phi(outer, 3.0) - trimesh_phi(inner, 3.0)
    assert_phi_close(phi, ref, V, RTOL_MASS)


# ----------------------------------------------------------------------------------------------
# Vertex derivatives against central differences.


def _fd_check(V, F, density, vertex_ids=None):
    analytic = mesh_inertia_derivatives(V, F, density)
    assert analytic.shape == (10, len(V), 3)
    ids = range(len(V)) if vertex_ids is None else vertex_ids
    eps = 1e-6 * np.abs(V).max()
    for v in ids:
        def phi_of(x, v=v):
            W = V.copy()
            W[v] = x
            return mesh_inertia(W, F, density)
        fd = central_difference(phi_of, V[v], eps=eps)  # (10, 3)
        scale = np.abs(analytic).max(axis=(1, 2))[:, None]
        err = np.abs(analytic[:, v, :] - fd) / scale
        assert err.max() <= RTOL_FD, f"vertex {v}: relative error {err.max():.3e}"


@pytest.mark.parametrize("shape", ["box", "box_moved", "icosphere_moved"])
def test_derivatives_primitives(shape):
    mesh = PRIMITIVES[shape]()
    _fd_check(np.array(mesh.vertices), np.array(mesh.faces), 800.0)


def test_derivatives_real_mesh():
    mesh = load_real_mesh("panda_description/meshes/collision/link3.stl")
    rng = np.random.default_rng(3)
    ids = rng.choice(len(mesh.vertices), size=6, replace=False)
    _fd_check(np.array(mesh.vertices), np.array(mesh.faces), 1000.0, ids)


def test_derivatives_unused_vertex_is_zero():
    mesh = _off_origin_box()
    V = np.vstack([mesh.vertices, [[5.0, 5.0, 5.0]]])
    d = mesh_inertia_derivatives(V, mesh.faces, 10.0)
    assert np.all(d[:, -1, :] == 0.0)


def test_derivative_identities():
    """Translating every vertex by t: dm = 0, dh = m t (sum of vertex derivatives)."""
    mesh = _off_origin_sphere()
    phi = mesh_inertia(mesh.vertices, mesh.faces, 5.0)
    total = mesh_inertia_derivatives(mesh.vertices, mesh.faces, 5.0).sum(axis=1)  # (10, 3)
    scale = phi_scale(phi, mesh.vertices)[:, None]
    expected = np.zeros((10, 3))
    expected[1:4] = phi[0] * np.eye(3)
    assert np.abs(total - expected)[:4].max() <= 1e-12 * scale[:4].max()


# ----------------------------------------------------------------------------------------------
# Frame changes and the derivative of a transformed inertia (seed sec. 5).


def test_transform_phi_matches_moved_mesh_and_adjoint():
    rng = np.random.default_rng(0)
    mesh = _off_origin_box()
    phi = mesh_inertia(mesh.vertices, mesh.faces, 700.0)
    for _ in range(3):
        R, p = rotation(rng), rng.normal(size=3)
        moved = mesh_inertia(mesh.vertices @ R.T + p, mesh.faces, 700.0)
        out = transform_phi(phi, R, p)
        assert_phi_close(out, moved, mesh.vertices @ R.T + p, RTOL_MASS)
        assert_phi_close(out, transformed_phi_reference(phi, pose(R, p)), mesh.vertices @ R.T + p, 1e-12)


def test_spatial_inertia_matches_point_mass_momentum():
    """G [w; v] = [sum r_i x m_i u_i; sum m_i u_i] with u_i = v + w x r_i."""
    rng = np.random.default_rng(1)
    r, mi = rng.normal(size=(5, 3)), rng.uniform(0.5, 2.0, size=5)
    I = sum(m * (x @ x * np.eye(3) - np.outer(x, x)) for m, x in zip(mi, r))
    h = (mi[:, None] * r).sum(axis=0)
    phi = np.array([mi.sum(), *h, I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])
    w, v = rng.normal(size=3), rng.normal(size=3)
    u = v + np.cross(w, r)
    momentum = np.r_[(np.cross(r, mi[:, None] * u)).sum(axis=0), (mi[:, None] * u).sum(axis=0)]
    G = phi_to_spatial_inertia(phi)
    np.testing.assert_allclose(G @ np.r_[w, v], momentum, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(G, G.T, atol=0)
    np.testing.assert_allclose(spatial_inertia_to_phi(G), phi, rtol=1e-14, atol=1e-14)
    check_physical_consistency(phi, "points")


def _left_perturbed(phi_bar, T, eta):
    return transformed_phi_reference(phi_bar, expm(hat(eta)) @ T)


def test_translated_inertia_derivative_left_perturbation():
    rng = np.random.default_rng(2)
    mesh = _off_origin_box()
    phi_bar = mesh_inertia(mesh.vertices, mesh.faces, 900.0)
    R, p = rotation(rng), rng.normal(size=3)
    T = pose(R, p)
    D = translated_inertia_derivative(phi_bar, R, p)
    fd = central_difference(lambda eta: _left_perturbed(phi_bar, T, eta), np.zeros(6), eps=1e-6)
    scale = np.abs(D).max()
    assert np.abs(D - fd).max() <= RTOL_FD * scale
    assert np.all(D[0] == 0.0)  # mass does not move (eq. 34)
    # the same derivative by moving the mesh itself: vertices x -> exp(eta) T x
    def moved_mesh_phi(eta):
        E = expm(hat(eta)) @ T
        return mesh_inertia(mesh.vertices @ E[:3, :3].T + E[:3, 3], mesh.faces, 900.0)
    fd_mesh = central_difference(moved_mesh_phi, np.zeros(6), eps=1e-6)
    assert np.abs(D - fd_mesh).max() <= RTOL_FD * scale


def test_translated_inertia_derivative_identity_pose_and_right_perturbation():
    rng = np.random.default_rng(4)
    mesh = _off_origin_sphere()
    phi = mesh_inertia(mesh.vertices, mesh.faces, 300.0)
    D0 = translated_inertia_derivative(phi)  # T = identity: depends on phi only
    fd = central_difference(lambda eta: _left_perturbed(phi, np.eye(4), eta), np.zeros(6), eps=1e-6)
    assert np.abs(D0 - fd).max() <= RTOL_FD * np.abs(D0).max()
    # right perturbation T exp(xi) = exp(Ad_T xi) T: derivative D Ad_T, as the docstring says
    R, p = rotation(rng), rng.normal(size=3)
    T = pose(R, p)
    D = translated_inertia_derivative(phi, R, p)
    Ad_T = np.linalg.inv(Ad_inv(T))
    fd_right = central_difference(lambda xi: transformed_phi_reference(phi, T @ expm(hat(xi))),
                                  np.zeros(6), eps=1e-6)
    assert np.abs(D @ Ad_T - fd_right).max() <= RTOL_FD * np.abs(D @ Ad_T).max()


# ----------------------------------------------------------------------------------------------
# Physical consistency.


def test_physical_consistency_accepts_meshes_and_names_bad_bodies():
    mesh = _off_origin_box()
    check_physical_consistency(mesh_inertia(mesh.vertices, mesh.faces, 1.0), "box")
    rod = np.array([1.0, 0, 0, 0, 0.0, 1.0, 1.0, 0, 0, 0])  # thin rod along x: J = (0, 1, 1), boundary
    check_physical_consistency(rod, "rod")
    with pytest.raises(ValueError, match="forearm.*mass must be non-negative"):
        check_physical_consistency([-1.0, 0, 0, 0, 1, 1, 1, 0, 0, 0], "forearm")
    with pytest.raises(ValueError, match="forearm.*triangle"):
        check_physical_consistency([1.0, 0, 0, 0, 1, 1, 3, 0, 0, 0], "forearm")
    with pytest.raises(ValueError, match="forearm.*positive semi-definite"):
        check_physical_consistency([1.0, 0, 0, 0, -1, 1, 1, 0, 0, 0], "forearm")
    # PSD about the origin but not about the COM: a unit point mass at c = (1, 0, 0) needs Iyy >= 1
    with pytest.raises(ValueError, match="forearm"):
        check_physical_consistency([1.0, 1.0, 0, 0, 0, 0.5, 0.5, 0, 0, 0], "forearm")
    with pytest.raises(ValueError, match="forearm.*massless"):
        check_physical_consistency([0.0, 0.1, 0, 0, 0, 0, 0, 0, 0, 0], "forearm")
    with pytest.raises(ValueError, match="forearm.*finite"):
        check_physical_consistency([np.nan] * 10, "forearm")
    with pytest.raises(ValueError, match="shape"):
        check_physical_consistency([1.0, 0, 0], "forearm")


# ----------------------------------------------------------------------------------------------
# Bad meshes: each raises ValueError naming the mesh.


def _box():
    mesh = trimesh.creation.box(extents=(1.0, 1.0, 1.0))
    return np.array(mesh.vertices), np.array(mesh.faces)


def _open():
    V, F = _box()
    return V, F[1:], 1.0


def _flipped_face():
    V, F = _box()
    F[3] = F[3, ::-1]
    return V, F, 1.0


def _inward():
    V, F = _box()
    return V, F[:, ::-1], 1.0


def _zero_area_face():
    # tetrahedron 0-1-2-3 with vertex 4 in the middle of edge 0-1: face (0, 4, 1) has zero area,
    # but the mesh stays closed and consistently wound
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0.5, 0, 0]], dtype=float)
    F = np.array([[0, 2, 1], [0, 4, 1], [1, 4, 3], [4, 0, 3], [1, 2, 3], [0, 3, 2]])
    return V, F, 1.0


def _repeated_index():
    V, F = _box()
    F[0, 1] = F[0, 0]
    return V, F, 1.0


def _flat():
    # one triangle, both sides: closed and consistent, but encloses nothing
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=float)
    return V, np.array([[0, 1, 2], [0, 2, 1]]), 1.0


def _nan_vertex():
    V, F = _box()
    V[2, 1] = np.nan
    return V, F, 1.0


def _inf_vertex():
    V, F = _box()
    V[5, 0] = np.inf
    return V, F, 1.0


def _index_too_large():
    V, F = _box()
    F[4, 2] = len(V)
    return V, F, 1.0


def _index_negative():
    V, F = _box()
    F[4, 2] = -1
    return V, F, 1.0


def _vertices_2d():
    V, F = _box()
    return V[:, :2], F, 1.0


def _vertices_1d():
    V, F = _box()
    return V.reshape(-1), F, 1.0


def _quad_faces():
    V, F = _box()
    return V, np.hstack([F, F[:, :1]]), 1.0


def _float_faces():
    V, F = _box()
    return V, F + 0.5, 1.0


def _no_faces():
    V, _ = _box()
    return V, np.zeros((0, 3), dtype=np.int64), 1.0


def _negative_density():
    V, F = _box()
    return V, F, -1000.0


def _nan_density():
    V, F = _box()
    return V, F, np.nan


def _non_manifold():
    # two tetrahedra sharing one edge (0, 1): four faces on that edge
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0, -1, 0], [0, 0, -1]], dtype=float)
    tet = np.array([[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]])
    tet2 = np.array([[0, 4, 1], [0, 1, 5], [1, 4, 5], [0, 5, 4]])
    return V, np.vstack([tet, tet2[:, ::-1]]), 1.0


BAD_MESHES = {
    "open": (_open, "not closed"),
    "inconsistent_winding": (_flipped_face, "inconsistent winding"),
    "inward": (_inward, "negative volume"),
    "zero_area_face": (_zero_area_face, "degenerate"),
    "repeated_index": (_repeated_index, "degenerate"),
    "zero_volume": (_flat, "zero volume"),
    "nan_vertex": (_nan_vertex, "finite"),
    "inf_vertex": (_inf_vertex, "finite"),
    "index_too_large": (_index_too_large, "out of range"),
    "index_negative": (_index_negative, "out of range"),
    "vertices_2d": (_vertices_2d, "shape"),
    "vertices_1d": (_vertices_1d, "shape"),
    "quad_faces": (_quad_faces, "shape"),
    "float_faces": (_float_faces, "integer"),
    "no_faces": (_no_faces, "shape"),
    "negative_density": (_negative_density, "density"),
    "nan_density": (_nan_density, "density"),
    "non_manifold": (_non_manifold, "manifold"),
}


@pytest.mark.parametrize("case", sorted(BAD_MESHES))
def test_bad_meshes_raise_with_name(case):
    make, fragment = BAD_MESHES[case]
    V, F, rho = make()
    for fn in (mesh_inertia, mesh_inertia_derivatives):
        with pytest.raises(ValueError, match=fragment) as info:
            fn(V, F, rho, name=NAME)
        assert NAME in str(info.value)


def test_bad_mesh_without_name_still_says_mesh():
    V, F, rho = _open()
    with pytest.raises(ValueError, match="^mesh: "):
        mesh_inertia(V, F, rho)


# ----------------------------------------------------------------------------------------------
# Properties.

_ICOSAHEDRON = trimesh.creation.icosahedron()
_ICO_V = np.array(_ICOSAHEDRON.vertices) * 0.3 + [0.1, -0.2, 0.05]
_ICO_F = np.array(_ICOSAHEDRON.faces)
_PHI1 = None


def _phi_unit_density():
    global _PHI1
    if _PHI1 is None:
        _PHI1 = mesh_inertia(_ICO_V, _ICO_F, 1.0)
    return _PHI1


@settings(max_examples=25, deadline=None)
@given(density=st.floats(min_value=1e-3, max_value=1e5))
def test_mass_properties_scale_linearly_with_density(density):
    phi = mesh_inertia(_ICO_V, _ICO_F, density)
    np.testing.assert_allclose(phi, density * _phi_unit_density(), rtol=1e-12, atol=0)


_coords = st.floats(min_value=-2.0, max_value=2.0)


@settings(max_examples=25, deadline=None)
@given(t=st.tuples(_coords, _coords, _coords),
       q=st.tuples(*[st.floats(min_value=-1.0, max_value=1.0)] * 4).filter(
           lambda q: np.linalg.norm(q) > 0.1))
def test_rigid_motion_of_the_mesh(t, q):
    """Moving the mesh by (R, t): m unchanged, h -> R h + m t, all of phi as transform_phi says."""
    t, R = np.array(t), quat_matrix(q)
    phi = _phi_unit_density()
    moved = mesh_inertia(_ICO_V @ R.T + t, _ICO_F, 1.0)
    L = np.abs(_ICO_V).max() + np.abs(t).max()
    assert abs(moved[0] - phi[0]) <= 1e-12 * phi[0]
    assert np.abs(moved[1:4] - (R @ phi[1:4] + phi[0] * t)).max() <= 1e-12 * phi[0] * L
    assert_phi_close(moved, transformed_phi_reference(phi, pose(R, t)), _ICO_V @ R.T + t, 1e-11)
