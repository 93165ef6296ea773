"""Spatial algebra (dyn_control.spatial) against independent definitions: scipy's matrix
exponential, 4x4 homogeneous matrices, Lie brackets of twist matrices, and Pinocchio's inertia
transforms (linear-first: halves swapped)."""
import numpy as np
import pinocchio as pin
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.transform import Rotation

from dyn_control import spatial
from oracles import JIT_DISABLED, OURS_FROM_PIN_PARAM, central_difference, swap_halves

pytestmark = pytest.mark.kernels

EXAMPLES = settings(max_examples=15 if JIT_DISABLED else 60, deadline=None)

unit_floats = st.floats(-1.0, 1.0, allow_nan=False)
vec3 = arrays(np.float64, 3, elements=unit_floats)
vec6 = arrays(np.float64, 6, elements=st.floats(-5.0, 5.0, allow_nan=False))
nonzero_vec3 = vec3.filter(lambda a: np.linalg.norm(a) > 1e-3)


@st.composite
def poses(draw):
    """(R, p): R from a rotation vector (scipy), p up to 2 m."""
    R = Rotation.from_rotvec(3.0 * draw(vec3)).as_matrix()
    return R, 2.0 * draw(vec3)


@st.composite
def screws(draw, max_angle=3.0):
    """Screws [w; v] with rotation angle |w| <= max_angle (log_se3 needs angles below pi)."""
    axis = draw(nonzero_vec3)
    angle = draw(st.one_of(st.floats(0.0, max_angle), st.sampled_from([0.0, 1e-9, 1e-7, 1e-6, 1e-5])))
    return np.concatenate([angle * axis / np.linalg.norm(axis), 3.0 * draw(vec3)])


@st.composite
def phis(draw):
    """Physically consistent inertial parameters [m, h, Ixx, Iyy, Izz, Ixy, Ixz, Iyz] about the
    frame origin, and the (mass, com, inertia about the com) they come from."""
    mass = draw(st.floats(0.1, 10.0))
    com = 0.5 * draw(vec3)
    A = draw(arrays(np.float64, (3, 3), elements=unit_floats))
    I_c = A @ A.T + 0.01 * np.eye(3)
    I_o = I_c + mass * (com @ com * np.eye(3) - np.outer(com, com))
    phi = np.array([mass, *(mass * com), I_o[0, 0], I_o[1, 1], I_o[2, 2], I_o[0, 1], I_o[0, 2], I_o[1, 2]])
    return phi, (mass, com, I_c)


def homogeneous(R, p):
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = p
    return T


def twist_matrix(xi):
    """[xi] in se(3), 4x4, for xi = [w; v]."""
    X = np.zeros((4, 4))
    X[:3, :3] = [[0, -xi[2], xi[1]], [xi[2], 0, -xi[0]], [-xi[1], xi[0], 0]]
    X[:3, 3] = xi[3:]
    return X


def vee(X):
    return np.array([X[2, 1], X[0, 2], X[1, 0], X[0, 3], X[1, 3], X[2, 3]])


def pin_inertia(mass, com, I_c):
    return pin.Inertia(mass, com, I_c)


@EXAMPLES
@given(vec3, vec3)
def test_skew_is_the_cross_product(w, x):
    np.testing.assert_allclose(spatial.skew(w) @ x, np.cross(w, x), atol=1e-15)


@EXAMPLES
@given(screws())
def test_exp_se3_is_the_matrix_exponential(xi):
    np.testing.assert_allclose(spatial.exp_se3(xi), scipy.linalg.expm(twist_matrix(xi)), rtol=0, atol=1e-12)


@EXAMPLES
@given(nonzero_vec3, vec3, st.floats(-4.0, 4.0), st.booleans())
def test_screw_exp_into_is_the_matrix_exponential(axis, v, theta, prismatic):
    """A unit rotation axis (revolute or general screw), or w = 0 (prismatic)."""
    screw = np.concatenate([np.zeros(3) if prismatic else axis / np.linalg.norm(axis), v])
    R, p = np.empty((3, 3)), np.empty(3)
    spatial.screw_exp_into(screw, theta, R, p)
    np.testing.assert_allclose(homogeneous(R, p), scipy.linalg.expm(theta * twist_matrix(screw)),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("theta", [0.0, 1e-9, 1e-7, 1e-6 * (1 - 1e-9), 1e-6 * (1 + 1e-9), 1e-5, 1e-3])
def test_screw_exp_into_around_the_small_angle_switch(theta):
    screw = np.array([0.6, 0.0, 0.8, 0.3, -1.0, 2.0])
    R, p = np.empty((3, 3)), np.empty(3)
    spatial.screw_exp_into(screw, theta, R, p)
    np.testing.assert_allclose(homogeneous(R, p), scipy.linalg.expm(theta * twist_matrix(screw)),
                               rtol=0, atol=1e-15)


@EXAMPLES
@given(screws())
def test_log_se3_inverts_exp_se3(xi):
    T = scipy.linalg.expm(twist_matrix(xi))
    np.testing.assert_allclose(spatial.log_se3(T), xi, rtol=0, atol=1e-9)
    np.testing.assert_allclose(spatial.exp_se3(spatial.log_se3(T)), T, rtol=0, atol=1e-12)


@EXAMPLES
@given(poses(), poses())
def test_compose_into_is_the_homogeneous_product(pose1, pose2):
    R, p = np.empty((3, 3)), np.empty(3)
    spatial.compose_into(*pose1, *pose2, R, p)
    np.testing.assert_allclose(homogeneous(R, p), homogeneous(*pose1) @ homogeneous(*pose2), atol=1e-14)


@EXAMPLES
@given(poses(), vec6)
def test_Ad_is_conjugation_of_twist_matrices(pose, xi):
    """[Ad_T xi] = T [xi] T^-1."""
    T = homogeneous(*pose)
    expected = vee(T @ twist_matrix(xi) @ np.linalg.inv(T))
    np.testing.assert_allclose(spatial.Ad(*pose) @ xi, expected, atol=1e-12)


@EXAMPLES
@given(vec6, vec6)
def test_ad_is_the_lie_bracket(V, m):
    """[ad_V m] = [V][m] - [m][V]."""
    bracket = twist_matrix(V) @ twist_matrix(m) - twist_matrix(m) @ twist_matrix(V)
    np.testing.assert_allclose(spatial.ad(V) @ m, vee(bracket), atol=1e-12)


@EXAMPLES
@given(vec6)
def test_ad_is_the_derivative_of_Ad_along_exp(V):
    """d/dt Ad_{exp(t V)} at t = 0 is ad_V (central differences of the 4x4 exponential)."""

    def Ad_along(t):
        T = scipy.linalg.expm(t[0] * twist_matrix(V))
        return spatial.Ad(T[:3, :3].copy(), T[:3, 3].copy())

    derivative = central_difference(Ad_along, np.zeros(1))[..., 0]
    np.testing.assert_allclose(spatial.ad(V), derivative, atol=1e-7)


@EXAMPLES
@given(vec6, vec6, vec6)
def test_ad_star_is_the_dual_of_ad(V, m, f):
    """ad*_V = ad_V^T: <ad_V m, f> = <m, ad*_V f>, and V x* f = -ad*_V f (power is invariant)."""
    np.testing.assert_allclose(spatial.ad_star(V), spatial.ad(V).T, atol=0)
    assert (spatial.ad(V) @ m) @ f == pytest.approx(m @ (spatial.ad_star(V) @ f), abs=1e-11)
    out = np.empty(6)
    spatial.cross_force(V, f, out)
    np.testing.assert_allclose(out, -(spatial.ad_star(V) @ f), atol=1e-12)


@EXAMPLES
@given(vec6, vec6)
def test_cross_motion_is_ad(V, m):
    out = np.empty(6)
    spatial.cross_motion(V, m, out)
    np.testing.assert_allclose(out, vee(twist_matrix(V) @ twist_matrix(m) - twist_matrix(m) @ twist_matrix(V)),
                               atol=1e-12)


@EXAMPLES
@given(poses())
def test_motion_transform_into_is_the_inverse_of_Ad(pose):
    X = np.empty((6, 6))
    spatial.motion_transform_into(*pose, X)
    np.testing.assert_allclose(X, np.linalg.inv(spatial.Ad(*pose)), atol=1e-12)
    # and the definition: [X xi] = T^-1 [xi] T
    T = homogeneous(*pose)
    xi = np.arange(1.0, 7.0)
    np.testing.assert_allclose(X @ xi, vee(np.linalg.inv(T) @ twist_matrix(xi) @ T), atol=1e-12)


@EXAMPLES
@given(poses(), vec6, vec6)
def test_motion_and_force_helpers_match_Ad(pose, m, f):
    T = homogeneous(*pose)
    to_child = np.empty(6)
    spatial.motion_to_child(*pose, m, to_child)
    np.testing.assert_allclose(to_child, vee(np.linalg.inv(T) @ twist_matrix(m) @ T), atol=1e-12)
    to_parent = np.empty(6)
    spatial.motion_to_parent(*pose, m, to_parent)
    np.testing.assert_allclose(to_parent, vee(T @ twist_matrix(m) @ np.linalg.inv(T)), atol=1e-12)
    # a child-frame force carried to the parent does the same work on the same motion
    start = np.arange(6.0)
    force_parent = start.copy()
    spatial.force_to_parent_add(*pose, f, force_parent)
    assert (force_parent - start) @ to_parent == pytest.approx(f @ m, abs=1e-10)
    np.testing.assert_allclose(force_parent - start, np.linalg.inv(spatial.Ad(*pose)).T @ f, atol=1e-12)


@EXAMPLES
@given(phis())
def test_spatial_inertia_matches_pinocchio(sample):
    phi, (mass, com, I_c) = sample
    G = np.empty((6, 6))
    spatial.spatial_inertia_into(phi, G)
    expected = swap_halves(swap_halves(pin_inertia(mass, com, I_c).matrix(), 0), 1)
    np.testing.assert_allclose(G, expected, atol=1e-12)
    m = np.linspace(-1.0, 2.0, 6)
    out = np.empty(6)
    spatial.inertia_times(phi, m, out)
    np.testing.assert_allclose(out, expected @ m, atol=1e-12)


@EXAMPLES
@given(phis(), poses())
def test_transform_inertia_matches_pinocchio(sample, pose):
    """Inertia of a child body, frame at `pose` in the parent, expressed in the parent frame."""
    phi, (mass, com, I_c) = sample
    moved = pin.SE3(*pose).act(pin_inertia(mass, com, I_c))
    G = np.empty((6, 6))
    spatial.spatial_inertia_into(phi, G)
    np.testing.assert_allclose(spatial.transform_inertia(G, *pose),
                               swap_halves(swap_halves(moved.matrix(), 0), 1), atol=1e-12)
    out = np.full(10, 0.5)
    spatial.phi_to_parent_add(*pose, phi, out)
    np.testing.assert_allclose(out - 0.5, moved.toDynamicParameters()[OURS_FROM_PIN_PARAM], atol=1e-12)


@EXAMPLES
@given(poses(), phis())
def test_congruence_add(pose, sample):
    X = np.empty((6, 6))
    spatial.motion_transform_into(*pose, X)
    A = np.empty((6, 6))
    spatial.spatial_inertia_into(sample[0], A)
    out = np.eye(6)
    spatial.congruence_add(X, A, np.empty((6, 6)), out)
    np.testing.assert_allclose(out, np.eye(6) + X.T @ A @ X, atol=1e-12)


@EXAMPLES
@given(vec6, vec6)
def test_dot6(a, b):
    assert spatial.dot6(a, b) == pytest.approx(float(np.dot(a, b)), abs=1e-13)
