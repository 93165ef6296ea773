"""Issue 15, class 7: tolerances relative to the mesh's size.

A valid closed mesh scaled by any factor from 1e-300 to 1e300, at any density, is neither refused as
degenerate nor as enclosing no volume: mesh_inertia gives the inertial parameters of the scaled mesh,
as float64 holds them (m grows as size^3 density, h as size^4, I as size^5: tiny ones underflow
towards zero, which is the answer), or, where one of them exceeds float64, a ValueError saying it
overflows and naming vertices and density. Likewise the vertex derivatives (one power of the size
less). Hypothesis draws the mesh (box, icosphere, hull of random points, placed off the origin), the
scale and the density. Oracle: trimesh's mass properties of the mesh at unit scale and density,
scaled exactly (an exact power of two times a rounding-free mantissa product), and central
differences of trimesh's for the derivatives.
"""
import numpy as np
import pytest
import trimesh
from hypothesis import given, settings
from hypothesis import strategies as st

import dyn_control as dc

EXAMPLES = settings(max_examples=60, deadline=None)
POWERS = np.array([3, 4, 4, 4, 5, 5, 5, 5, 5, 5])  # of the size, in [m, h, I]
TOLERANCE = 1e-9


def trimesh_phi(mesh):
    """[m, h, Ixx, Iyy, Izz, Ixy, Ixz, Iyz] at density 1, inertia about the origin (tensor entries)."""
    m, c = mesh.mass, mesh.center_mass
    I = mesh.moment_inertia + m * (c @ c * np.eye(3) - np.outer(c, c))
    return np.array([m, *(m * c), I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])


def natural_sizes(mesh):
    """The magnitude each entry of phi is rounded against: m, m L, m L^2 (L: the farthest vertex)."""
    m, L = mesh.mass, float(np.abs(mesh.vertices).max())
    return np.array([m] + [m * L] * 3 + [m * L * L] * 6)


def scaled(x, powers, scale, density):
    """x * density * scale^powers (row-wise), each with one rounding: mantissas multiplied, then an
    exact power of two (inf where float64 overflows, towards 0 where it underflows)."""
    scale_m, scale_e = np.frexp(scale)
    density_m, density_e = np.frexp(density)
    powers = powers.reshape((-1,) + (1,) * (x.ndim - 1))
    with np.errstate(over="ignore"):
        return np.ldexp(x * density_m * scale_m ** powers, density_e + powers * scale_e)


def meshes():
    def hull(seed):
        points = np.random.default_rng(seed).normal(size=(12, 3))
        return trimesh.convex.convex_hull(points)

    return st.one_of(
        st.tuples(st.floats(0.1, 2.0), st.floats(0.1, 2.0), st.floats(0.1, 2.0)).map(
            lambda e: trimesh.creation.box(extents=e)),
        st.just(trimesh.creation.icosphere(subdivisions=1)),
        st.integers(0, 2**32 - 1).map(hull))


@EXAMPLES
@given(mesh=meshes(), offset=st.tuples(*[st.floats(-3.0, 3.0)] * 3), exponent=st.floats(-300.0, 300.0),
       density=st.sampled_from([1e-300, 1e-3, 1.0, 1000.0, 1e300]))
def test_any_scale_is_the_scaled_mesh_or_a_named_overflow(mesh, offset, exponent, density):
    mesh = mesh.copy()
    mesh.apply_translation(offset)
    scale = 10.0 ** exponent
    expected = scaled(trimesh_phi(mesh), POWERS, scale, density)
    sizes = scaled(natural_sizes(mesh), POWERS, scale, density)
    try:
        phi = dc.mesh_inertia(mesh.vertices * scale, mesh.faces, density)
    except ValueError as error:
        assert "overflows" in str(error) and "vertices" in str(error) and "density" in str(error), str(error)
        assert not np.all(np.isfinite(expected)), f"refused although the result is {expected}"
        return
    assert np.all(np.isfinite(expected)), f"no error although the result overflows: {expected}"
    error = np.abs(phi - expected)
    assert np.all(error <= TOLERANCE * sizes + 1e-300), f"errors {error} at sizes {sizes}"


@settings(max_examples=20, deadline=None)
@given(extents=st.tuples(*[st.floats(0.2, 2.0)] * 3), exponent=st.floats(-250.0, 250.0))
def test_derivatives_at_any_scale(extents, exponent):
    mesh = trimesh.creation.box(extents=extents)
    mesh.apply_translation((0.3, -0.2, 0.1))
    scale = 10.0 ** exponent
    step = 1e-6
    unit = np.zeros((10,) + mesh.vertices.shape)
    for v in range(len(mesh.vertices)):
        for axis in range(3):
            plus, minus = mesh.copy(), mesh.copy()
            plus.vertices[v, axis] += step
            minus.vertices[v, axis] -= step
            unit[:, v, axis] = (trimesh_phi(plus) - trimesh_phi(minus)) / (2 * step)
    expected = scaled(unit, POWERS - 1, scale, 1.0)
    try:
        dphi = dc.mesh_inertia_derivatives(mesh.vertices * scale, mesh.faces, 1.0)
    except ValueError as error:
        assert "overflows" in str(error), str(error)
        assert not np.all(np.isfinite(expected))
        return
    for group in (slice(0, 1), slice(1, 4), slice(4, 10)):
        size = float(np.abs(expected[group]).max())
        error = float(np.abs(dphi[group] - expected[group]).max())
        assert error <= 1e-6 * size + 1e-300, f"{group}: error {error:.3g} at {size:.3g}"


def test_the_issue_cases():
    box = trimesh.creation.box(extents=(1.0, 2.0, 3.0))
    phi = dc.mesh_inertia(box.vertices * 1e-150, box.faces, 1e300)   # refused as degenerate before
    np.testing.assert_allclose(phi[0], 6e-150, rtol=1e-12)  # m = 6 (1e-150)^3 1e300
    assert np.all(phi[4:] == 0.0)   # I ~ 1e-450: below the smallest double
    with pytest.raises(ValueError, match="overflows.*vertices.*density"):   # OverflowError before
        dc.mesh_inertia(box.vertices * 1e150, box.faces, 1000.0)
