"""Identities of rigid-body dynamics that tie our algorithms to each other and to independent
computations (central differences, energies written out in the test), on the bundled arm7, on a
branching robot (talos_reduced), and closed-form M(q), g(q), C(q, dq) dq of the bundled planar2.
"""
import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dyn_control as dc
from oracles import JIT_DISABLED, central_difference, random_state, robot_urdf

pytestmark = pytest.mark.kernels

ROBOTS = ["arm7", "talos_reduced"]
N_STATES = 1 if JIT_DISABLED else 3
EXAMPLES = settings(max_examples=5 if JIT_DISABLED else 25, deadline=None)


@functools.lru_cache(maxsize=None)
def load(name):
    path = dc.bundled_urdf(name) if name in ("arm7", "planar2") else robot_urdf(name)
    model = dc.load_urdf(path)
    return model, model.create_data()


def states(model, seed=0):
    rng = np.random.default_rng(seed)
    return [random_state(model, rng) for _ in range(N_STATES)]


def hat3(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def vee3(W):
    return np.array([W[2, 1], W[0, 2], W[1, 0]])


def vee4(X):
    """[w; v] of a 4x4 twist matrix."""
    return np.concatenate([vee3(X[:3, :3]), X[:3, 3]])


def spatial_inertia(phi):
    """The textbook 6x6 body inertia about the body origin, angular-first: [[I, [h]], [[h]^T, m 1]]."""
    m, h = phi[0], phi[1:4]
    ixx, iyy, izz, ixy, ixz, iyz = phi[4:]
    I = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    return np.block([[I, hat3(h)], [hat3(h).T, m * np.eye(3)]])


def assert_close(ours, expected, rel, what=""):
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    error = float(np.abs(np.asarray(ours) - expected).max(initial=0.0))
    assert error <= rel * scale, f"{what}: max error {error:.3e} (scale {scale:.3e})"


@pytest.mark.parametrize("name", ROBOTS)
def test_mass_matrix_is_symmetric_positive_definite(name):
    model, data = load(name)
    for q, _, _ in states(model):
        M = dc.crba(model, data, q).copy()
        np.testing.assert_array_equal(M, M.T)
        np.linalg.cholesky(M)  # raises LinAlgError unless positive definite
        assert np.linalg.eigvalsh(M)[0] > 0.0


@pytest.mark.parametrize("name", ROBOTS)
def test_aba_inverts_rnea(name):
    model, data = load(name)
    rng = np.random.default_rng(1)
    for q, v, a in states(model):
        f_ext = rng.normal(size=(model.nbodies, 6))
        tau = dc.rnea(model, data, q, v, a).copy()
        assert_close(dc.aba(model, data, q, v, tau), a, 1e-9, "aba(rnea(a))")
        tau = dc.rnea(model, data, q, v, a, f_ext).copy()
        assert_close(dc.aba(model, data, q, v, tau, f_ext), a, 1e-9, "aba(rnea(a, f_ext), f_ext)")


@pytest.mark.parametrize("name", ROBOTS)
def test_mdot_minus_2c_is_skew_symmetric(name):
    """Mdot = d/dt M(q + t v) by central differences of crba."""
    model, data = load(name)
    for q, v, _ in states(model):
        Mdot = central_difference(lambda t: dc.crba(model, data, q + t[0] * v).copy(), np.zeros(1))[..., 0]
        N = Mdot - 2.0 * dc.coriolis_matrix(model, data, q, v)
        assert_close(N + N.T, np.zeros_like(N), 1e-7 * max(1.0, np.abs(Mdot).max()), "Mdot - 2C + its transpose")
        assert np.abs(N).max() > 1e-3  # not trivially zero


@pytest.mark.parametrize("name", ROBOTS)
def test_coriolis_times_v_is_nle_minus_gravity(name):
    model, data = load(name)
    for q, v, _ in states(model):
        nle_minus_g = dc.nonlinear_effects(model, data, q, v).copy() - dc.gravity(model, data, q)
        assert_close(dc.coriolis_matrix(model, data, q, v) @ v, nle_minus_g, 1e-10, "C v")


def finite_difference_jacobians(model, data, q, frame):
    """(world, local, local_world_aligned) Jacobians of a frame from central differences of its
    forward-kinematics pose T(q): columns vee(dT T^-1), vee(T^-1 dT), [vee(dR R^T); dp]."""
    f = model.frame_id(frame)
    T = dc.forward_kinematics(model, data, q)[f].copy()
    dT = central_difference(lambda x: dc.forward_kinematics(model, data, x)[f].copy(), q)
    T_inv = np.linalg.inv(T)
    world = np.column_stack([vee4(dT[..., j] @ T_inv) for j in range(model.nv)])
    local = np.column_stack([vee4(T_inv @ dT[..., j]) for j in range(model.nv)])
    aligned = np.column_stack([np.concatenate([vee3(dT[:3, :3, j] @ T[:3, :3].T), dT[:3, 3, j]])
                               for j in range(model.nv)])
    return {"world": world, "local": local, "local_world_aligned": aligned}


def identity_frames(model):
    """Every moving body's frame, merged links, and the joint names (one call per joint name)."""
    merged = [n for n, b in zip(model.frame_names, model.frame_body) if b >= 0 and n not in model.body_names]
    frames = list(model.body_names) + merged + [model.joint_names[-1]]
    return frames[::4] + [frames[-2], frames[-1]] if JIT_DISABLED else frames


@pytest.mark.parametrize("name", ROBOTS)
def test_jacobians_are_derivatives_of_forward_kinematics(name):
    model, data = load(name)
    q = states(model)[0][0]
    for frame in identity_frames(model):
        expected = finite_difference_jacobians(model, data, q, frame)
        for reference, J in expected.items():
            assert_close(dc.jacobian(model, data, q, frame, reference), J, 1e-8, f"{frame} {reference}")


def potential_energy(model, data, q):
    """U(q) = -sum_b m_b g . c_b, centres of mass placed by forward kinematics."""
    poses = dc.forward_kinematics(model, data, q)
    U = 0.0
    for b, link in enumerate(model.body_names):
        T = poses[model.frame_id(link)]
        m, h = model.phi[b, 0], model.phi[b, 1:4]
        U -= model.gravity @ (T[:3, :3] @ h + m * T[:3, 3])
    return U


@pytest.mark.parametrize("name", ROBOTS)
def test_gravity_is_the_gradient_of_potential_energy(name):
    """g(q) = dU/dq, and its derivative d2U/dq2 is symmetric."""
    model, data = load(name)
    q = states(model)[0][0]
    dU = central_difference(lambda x: np.array([potential_energy(model, data, x)]), q)[0]
    assert_close(dc.gravity(model, data, q), dU, 1e-8, "g vs dU/dq")
    dg = central_difference(lambda x: dc.gravity(model, data, x).copy(), q)
    assert_close(dg, dg.T, 1e-7, "dg/dq symmetric")
    assert np.abs(dg).max() > 1.0


@EXAMPLES
@given(name=st.sampled_from(ROBOTS), seed=st.integers(0, 2**32 - 1))
def test_rnea_is_affine_in_a_with_slope_m(name, seed):
    """rnea(a1 + a2) - rnea(0) = (rnea(a1) - rnea(0)) + (rnea(a2) - rnea(0)) = M (a1 + a2)."""
    model, data = load(name)
    rng = np.random.default_rng(seed)
    q, v, a1 = random_state(model, rng)
    a2 = rng.normal(size=model.nv)
    zero = np.zeros(model.nv)
    bias = dc.rnea(model, data, q, v, zero).copy()
    d1 = dc.rnea(model, data, q, v, a1).copy() - bias
    d2 = dc.rnea(model, data, q, v, a2).copy() - bias
    d12 = dc.rnea(model, data, q, v, a1 + a2).copy() - bias
    assert_close(d12, d1 + d2, 1e-10, "linearity in a")
    assert_close(d12, dc.crba(model, data, q) @ (a1 + a2), 1e-10, "slope M")


@EXAMPLES
@given(name=st.sampled_from(ROBOTS), seed=st.integers(0, 2**32 - 1), scale=st.floats(0.1, 3.0))
def test_velocity_terms_are_quadratic_in_v(name, seed, scale):
    model, data = load(name)
    q, v, _ = random_state(model, np.random.default_rng(seed))
    g = dc.gravity(model, data, q).copy()
    base = dc.nonlinear_effects(model, data, q, v).copy() - g
    assert_close(dc.nonlinear_effects(model, data, q, scale * v) - g, scale ** 2 * base, 1e-10, "quadratic in v")


@EXAMPLES
@given(name=st.sampled_from(ROBOTS), seed=st.integers(0, 2**32 - 1))
def test_kinetic_energy_from_body_twists(name, seed):
    """1/2 v^T M v = sum_b 1/2 V_b^T G_b V_b, V_b = J_b,local v, G_b written out from phi."""
    model, data = load(name)
    q, v, _ = random_state(model, np.random.default_rng(seed))
    energy = 0.0
    for b, link in enumerate(model.body_names):
        V = dc.jacobian(model, data, q, link, "local") @ v
        energy += 0.5 * V @ spatial_inertia(model.phi[b]) @ V
    assert 0.5 * v @ dc.crba(model, data, q) @ v == pytest.approx(energy, rel=1e-10)


@EXAMPLES
@given(name=st.sampled_from(ROBOTS), seed=st.integers(0, 2**32 - 1))
def test_external_forces_enter_through_body_jacobians(name, seed):
    """rnea(f_ext) = rnea(0) - sum_b J_b,local^T f_b (f_b on body b, in its frame)."""
    model, data = load(name)
    rng = np.random.default_rng(seed)
    q, v, a = random_state(model, rng)
    f_ext = rng.normal(size=(model.nbodies, 6))
    expected = dc.rnea(model, data, q, v, a).copy()
    for b, link in enumerate(model.body_names):
        expected -= dc.jacobian(model, data, q, link, "local").T @ f_ext[b]
    assert_close(dc.rnea(model, data, q, v, a, f_ext), expected, 1e-10, "rnea with f_ext")


# planar2: closed forms from the numbers of config/urdf/planar2.urdf
L1, L2, M1, M2, I_POINT, G0 = 1.0, 0.8, 2.0, 1.5, 1e-6, 9.81


def planar2_mass_matrix(q):
    c2 = np.cos(q[1])
    m11 = M1 * L1 ** 2 + M2 * (L1 ** 2 + L2 ** 2 + 2 * L1 * L2 * c2) + 2 * I_POINT
    m12 = M2 * (L2 ** 2 + L1 * L2 * c2) + I_POINT
    m22 = M2 * L2 ** 2 + I_POINT
    return np.array([[m11, m12], [m12, m22]])


def planar2_gravity(q):
    c1, c12 = np.cos(q[0]), np.cos(q[0] + q[1])
    return np.array([-G0 * ((M1 + M2) * L1 * c1 + M2 * L2 * c12), -G0 * M2 * L2 * c12])


def planar2_coriolis_times_v(q, dq):
    h = M2 * L1 * L2 * np.sin(q[1])
    return np.array([-h * (2 * dq[0] * dq[1] + dq[1] ** 2), h * dq[0] ** 2])


@EXAMPLES
@given(q=st.tuples(st.floats(-np.pi, np.pi), st.floats(-np.pi, np.pi)),
       dq=st.tuples(st.floats(-5.0, 5.0), st.floats(-5.0, 5.0)))
def test_planar2_closed_forms(q, dq):
    model, data = load("planar2")
    q, dq = np.array(q), np.array(dq)
    np.testing.assert_allclose(dc.crba(model, data, q), planar2_mass_matrix(q), rtol=0, atol=1e-12)
    np.testing.assert_allclose(dc.gravity(model, data, q), planar2_gravity(q), rtol=0, atol=1e-12)
    np.testing.assert_allclose(dc.coriolis_matrix(model, data, q, dq) @ dq, planar2_coriolis_times_v(q, dq),
                               rtol=0, atol=1e-11)
    tip = dc.frame_pose(model, data, q, "tip")[:3, 3]
    expected_tip = [L1 * np.cos(q[0]) + L2 * np.cos(q[0] + q[1]), 0.0,
                    -(L1 * np.sin(q[0]) + L2 * np.sin(q[0] + q[1]))]
    np.testing.assert_allclose(tip, expected_tip, rtol=0, atol=1e-14)
