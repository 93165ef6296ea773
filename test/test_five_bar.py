"""The spherical five-bar closed-chain mapping (seed "Differential Dynamics and Mesh-Based Inertia",
sec. 3, eqs. 11-14) and the closed-chain plugin mechanism.

Oracles: the seed's own world-frame formulation (eq. 11 as a product of axis-angle rotations built
with SciPy from the URDF's axes, eq. 12 from the rotated axes w_i'), central differences of
complete() and inverse_dynamics(), a Lagrangian of the closed chain built from Pinocchio's mass
matrix and potential energy, and Pinocchio's energies for the work-energy balance of a simulation.
"""
import importlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy.optimize import fsolve
from scipy.spatial.transform import Rotation

import dyn_control as dc
from dyn_control.mappings import MappingPluginError, available_mappings, simulate_closed_chain
from dyn_control.mappings.five_bar import FiveBarMapping
from oracles import central_difference

HERE = Path(__file__).resolve().parent
URDF = dc.bundled_urdf("five_bar")
ACTIVE, PASSIVE = [0, 3], [1, 2, 4]   # joint1, joint4 | joint2, joint3, joint5
N_SAMPLES = 25


# ------------------------------------------------------------------------------------------------
# the seed's world-frame formulation, from the URDF text


def _urdf_axes():
    """Unit joint axes at q = 0 by name; every joint origin of the bundled five-bar is the identity."""
    axes = {}
    for joint in ET.parse(URDF).getroot().iter("joint"):
        if joint.get("type") == "fixed":
            continue    # the end-effector frame
        origin = joint.find("origin")
        assert origin.get("xyz").split() == ["0", "0", "0"] and origin.get("rpy").split() == ["0", "0", "0"]
        axis = np.array([float(x) for x in joint.find("axis").get("xyz").split()])
        axes[joint.get("name")] = axis / np.linalg.norm(axis)   # written with 9 digits
    return axes


AXES = _urdf_axes()


def _rot(joint, angle):
    return Rotation.from_rotvec(AXES[joint] * angle).as_matrix()


def _branch_rotations(q):
    """Both sides of eq. (11): e^{w1 q1} e^{w2 q2} e^{w3 q3} and e^{w4 q4} e^{w5 q5}."""
    return (_rot("joint1", q[0]) @ _rot("joint2", q[1]) @ _rot("joint3", q[2]),
            _rot("joint4", q[3]) @ _rot("joint5", q[4]))


def _seed_g(q):
    """g_p = [w2' w3' -w5'], g_a = [w1' -w4'] of eq. (12), w_i' the axes at configuration q."""
    R1 = _rot("joint1", q[0])
    w2 = R1 @ AXES["joint2"]
    w3 = R1 @ _rot("joint2", q[1]) @ AXES["joint3"]
    w5 = _rot("joint4", q[3]) @ AXES["joint5"]
    return np.column_stack([w2, w3, -w5]), np.column_stack([AXES["joint1"], -AXES["joint4"]])


def _closure_error(q):
    A, B = _branch_rotations(q)
    return np.linalg.norm(Rotation.from_matrix(B.T @ A).as_rotvec())


# ------------------------------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module")
def model():
    return dc.load_urdf(URDF)


@pytest.fixture(scope="module")
def mapping(model):
    return dc.load_mapping("five_bar", model)


@pytest.fixture(scope="module")
def pin():
    import pinocchio
    pm = pinocchio.buildModelFromUrdf(URDF)
    assert list(pm.names)[1:] == ["joint1", "joint2", "joint3", "joint4", "joint5"]
    return pinocchio, pm, pm.createData()


def _samples(seed, n=N_SAMPLES):
    """Active joint angles well inside the workspace of the bundled five-bar."""
    return np.random.default_rng(seed).uniform(-0.6, 0.6, size=(n, 2))


# ------------------------------------------------------------------------------------------------
# eqs. (11)-(13)


def test_complete_closes_the_loop(mapping):
    for theta_a in _samples(1):
        q = mapping.complete(theta_a)
        np.testing.assert_array_equal(q[ACTIVE], theta_a)
        assert _closure_error(q) < 1e-10
        assert np.linalg.norm(mapping.closure_residual(q)) < 1e-10


def test_closure_residual_is_the_relative_rotation(mapping):
    """Off the loop, the residual is log(R_branch2^T R_branch1) in link 3's frame."""
    for q in np.random.default_rng(2).uniform(-1, 1, size=(10, 5)):
        A, B = _branch_rotations(q)
        np.testing.assert_allclose(mapping.closure_residual(q), Rotation.from_matrix(B.T @ A).as_rotvec(),
                                   atol=1e-12)


def test_passive_jacobian_against_differences_and_eq12(mapping):
    for theta_a in _samples(3):
        q = mapping.complete(theta_a)
        J_p = mapping.passive_jacobian(q)
        J_fd = central_difference(lambda x: mapping.complete(x, guess=q)[PASSIVE], theta_a)
        np.testing.assert_allclose(J_p, J_fd, atol=1e-8)
        g_p, g_a = _seed_g(q)
        np.testing.assert_allclose(J_p, -np.linalg.solve(g_p, g_a), atol=1e-12)


def test_virtual_work_identity_eq13(mapping):
    rng = np.random.default_rng(4)
    for theta_a in _samples(5):
        q = mapping.complete(theta_a)
        tau_tree = rng.normal(size=5)
        dtheta_a = rng.normal(size=2)
        # dtheta of the tree along the closed chain, by differences of complete()
        dtheta = central_difference(lambda t: mapping.complete(theta_a + t[0] * dtheta_a, guess=q),
                                    np.zeros(1))[:, 0]
        tau_a = mapping.map_torque(q, tau_tree)
        assert tau_a @ dtheta_a == pytest.approx(tau_tree @ dtheta, abs=1e-8)


def test_map_torque_derivative_eq14(mapping):
    """d/dtheta_a of map_torque(complete(theta_a), tau_tree(theta_a)) for a tau_tree linear in theta_a,
    with and without a torque at the cut joint."""
    rng = np.random.default_rng(6)
    for k, theta_a in enumerate(_samples(7)):
        q = mapping.complete(theta_a)
        A = rng.normal(size=(5, 2))
        c = rng.normal(size=5)
        if k % 2:
            A[4] = 0.0   # joint 5 cut: tau_5 = 0 (eq. 14)
            c[4] = 0.0
        expected = central_difference(lambda x: mapping.map_torque(mapping.complete(x, guess=q), A @ x + c),
                                      theta_a)
        np.testing.assert_allclose(mapping.map_torque_derivative(q, A @ theta_a + c, A), expected, atol=1e-8)


def test_cut_joint_carries_no_tree_torque(model, mapping):
    data = model.create_data()
    rng = np.random.default_rng(8)
    for theta_a in _samples(9, 5):
        q, v, a = mapping.tree_state(theta_a, rng.normal(size=2), rng.normal(size=2))
        assert dc.rnea(model, data, q, v, a)[4] == 0.0


# ------------------------------------------------------------------------------------------------
# dynamics


def _state(rng):
    return rng.uniform(-0.6, 0.6, 2), 3.0 * rng.normal(size=2), 10.0 * rng.normal(size=2)


def test_tree_state_moves_with_the_closed_chain(mapping):
    """v and a of the tree are the first and second time derivatives of complete(theta_a(t))."""
    rng = np.random.default_rng(10)
    for _ in range(10):
        theta_a, dtheta_a, ddtheta_a = _state(rng)
        q, v, a = mapping.tree_state(theta_a, dtheta_a, ddtheta_a)

        def path(t):
            return mapping.complete(theta_a + t * dtheta_a + 0.5 * t * t * ddtheta_a, guess=q)

        h = 1e-4
        np.testing.assert_allclose(v, (path(h) - path(-h)) / (2 * h), atol=1e-6)
        np.testing.assert_allclose(a, (path(h) - 2 * q + path(-h)) / h**2, atol=1e-4)


def test_inverse_dynamics_against_a_lagrangian(mapping, model, pin):
    """tau_a = d/dt dL/d dtheta - dL/d theta with L = 1/2 dtheta^T M_a dtheta - V, M_a = E^T M E from
    Pinocchio's CRBA and V Pinocchio's potential energy, derivatives by central differences."""
    pinocchio, pm, pd = pin
    data = model.create_data()

    def closed(theta_a, q_near):
        q = mapping.complete(theta_a, guess=q_near)
        E = np.zeros((5, 2))
        E[ACTIVE] = np.eye(2)
        E[PASSIVE] = mapping.passive_jacobian(q)
        M = pinocchio.crba(pm, pd, q)
        M = np.triu(M) + np.triu(M, 1).T
        return E.T @ M @ E, pinocchio.computePotentialEnergy(pm, pd, q)

    rng = np.random.default_rng(11)
    for _ in range(10):
        theta_a, dtheta_a, ddtheta_a = _state(rng)
        q = mapping.complete(theta_a)
        M_a, _ = closed(theta_a, q)
        dM_a = central_difference(lambda x: closed(x, q)[0], theta_a)           # [i, j, k] = dM_ij / dtheta_k
        dV = central_difference(lambda x: np.array([closed(x, q)[1]]), theta_a)[0]
        expected = (M_a @ ddtheta_a + np.einsum("ijk,k,j->i", dM_a, dtheta_a, dtheta_a)
                    - 0.5 * np.einsum("jki,j,k->i", dM_a, dtheta_a, dtheta_a) + dV)
        tau = mapping.inverse_dynamics(model, data, theta_a, dtheta_a, ddtheta_a)
        np.testing.assert_allclose(tau, expected, atol=1e-8)
        assert np.abs(expected).max() > 1e-2   # the comparison is not between near-zero numbers


def test_inverse_dynamics_derivatives_against_differences(mapping, model):
    data = model.create_data()
    rng = np.random.default_rng(12)
    for _ in range(N_SAMPLES):
        theta_a, dtheta_a, ddtheta_a = _state(rng)
        q = mapping.complete(theta_a)

        def tau(x, dx, ddx):
            return mapping.inverse_dynamics(model, data, x, dx, ddx, guess=q).copy()

        dtau_dtheta, dtau_ddtheta, M_a = mapping.inverse_dynamics_derivatives(model, data, theta_a, dtheta_a,
                                                                              ddtheta_a)
        np.testing.assert_allclose(
            dtau_dtheta, central_difference(lambda x: tau(x, dtheta_a, ddtheta_a), theta_a), atol=1e-7)
        np.testing.assert_allclose(
            dtau_ddtheta, central_difference(lambda x: tau(theta_a, x, ddtheta_a), dtheta_a), atol=1e-7)
        np.testing.assert_allclose(M_a, central_difference(lambda x: tau(theta_a, dtheta_a, x), ddtheta_a),
                                   atol=1e-8)
        np.testing.assert_allclose(M_a, M_a.T, atol=1e-15)
        assert np.linalg.eigvalsh(M_a)[0] > 0.0


def test_forward_dynamics_inverts_inverse_dynamics(mapping, model):
    data = model.create_data()
    rng = np.random.default_rng(13)
    for _ in range(10):
        theta_a, dtheta_a, ddtheta_a = _state(rng)
        tau = mapping.inverse_dynamics(model, data, theta_a, dtheta_a, ddtheta_a)
        np.testing.assert_allclose(mapping.forward_dynamics(model, data, theta_a, dtheta_a, tau), ddtheta_a,
                                   rtol=1e-9, atol=1e-9)


# ------------------------------------------------------------------------------------------------
# singular and unreachable configurations, bad inputs


@pytest.fixture(scope="module")
def singular_configuration(mapping):
    """A closed configuration with theta_1 = 0 where g_p is singular (links 2 and 3 on one great
    circle), solved from the seed's formulation: eq. (11) and det g_p = 0."""
    def equations(x):
        q = np.array([0.0, *x])
        A, B = _branch_rotations(q)
        return [*Rotation.from_matrix(B.T @ A).as_rotvec(), np.linalg.det(_seed_g(q)[0])]

    start = mapping.complete([0.0, 1.5])   # near the stretched links
    x, info, ok, message = fsolve(equations, start[1:], xtol=1e-12, full_output=True)
    assert ok == 1, message
    q = np.array([0.0, *x])
    assert _closure_error(q) < 1e-12 and abs(np.linalg.det(_seed_g(q)[0])) < 1e-12
    return q


def test_singular_configuration_gives_a_clear_error(mapping, model, singular_configuration):
    q = singular_configuration
    data = model.create_data()
    with pytest.raises(ValueError, match="singular"):
        mapping.passive_jacobian(q)
    with pytest.raises(ValueError, match="singular"):
        mapping.map_torque(q, np.ones(5))
    for call in (lambda: mapping.complete(q[ACTIVE]),
                 lambda: mapping.complete(q[ACTIVE], guess=q),
                 lambda: mapping.inverse_dynamics(model, data, q[ACTIVE], [0.1, 0.2], [0.0, 0.0])):
        with pytest.raises(ValueError, match="five_bar"):
            call()
    # slightly inside the workspace the mapping still answers, with finite (large) numbers
    q_near = mapping.complete(q[ACTIVE] - [0.0, 1e-3])
    J_p = mapping.passive_jacobian(q_near)
    assert np.all(np.isfinite(J_p)) and np.abs(J_p).max() > 10.0


def test_out_of_reach_gives_a_clear_error(mapping):
    with pytest.raises(ValueError, match="no loop-closing configuration"):
        mapping.complete([-1.0, 1.0])


def test_bad_inputs(mapping, model):
    with pytest.raises(ValueError, match="theta_a"):
        mapping.complete([0.1, np.nan])
    with pytest.raises(ValueError, match="theta_a"):
        mapping.complete([0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="does not close the loop"):
        mapping.passive_jacobian(np.full(5, 0.3))
    with pytest.raises(ValueError, match="closure_components"):
        FiveBarMapping(model, closure_components=(0, 1))
    with pytest.raises(ValueError, match="massless leaf"):
        FiveBarMapping(model, cut_joint="joint3")
    with pytest.raises(ValueError, match="unknown joint"):
        FiveBarMapping(model, active_joints=("joint1", "motor4"))


def test_yaml_parameters_build_the_default_mapping(model, mapping):
    config = yaml.safe_load((HERE.parent / "config" / "five_bar.yaml").read_text())["mapping"]
    from_yaml = dc.load_mapping(config["name"], model, **config["parameters"])
    assert isinstance(from_yaml, FiveBarMapping)
    assert from_yaml.active_joints == ("joint1", "joint4")
    assert from_yaml.passive_joints == ("joint2", "joint3", "joint5")
    theta_a = np.array([0.3, -0.2])
    np.testing.assert_allclose(from_yaml.complete(theta_a), mapping.complete(theta_a), atol=1e-12)


def test_parameters_as_a_config_dict_as_in_the_design(model):
    """dc.load_mapping(name, model, config) (DESIGN.md's form) reads the same parameters as keywords;
    a keyword overrides the dict; a config that is not a dict is refused by name."""
    config = yaml.safe_load((HERE.parent / "config" / "five_bar.yaml").read_text())["mapping"]
    swapped = dict(config["parameters"], active_joints=["joint4", "joint1"])
    from_dict = dc.load_mapping(config["name"], model, swapped)
    assert from_dict.active_joints == ("joint4", "joint1")
    overridden = dc.load_mapping(config["name"], model, swapped, active_joints=["joint1", "joint4"])
    assert overridden.active_joints == ("joint1", "joint4")
    q = from_dict.complete(np.array([-0.2, 0.3]))
    assert _closure_error(q) < 1e-10     # the seed's eq. 11, written independently above
    with pytest.raises(ValueError, match="five_bar"):
        dc.load_mapping("five_bar", model, ["joint1"])


# ------------------------------------------------------------------------------------------------
# plugins


@pytest.fixture(scope="module")
def plugin_package(tmp_path_factory):
    """Install test/plugin_pkg into this interpreter, offline: setuptools writes its metadata
    (egg-info with entry_points.txt) next to a copy of the package, and the copy goes on sys.path,
    where importlib.metadata finds its entry points."""
    root = tmp_path_factory.mktemp("plugin") / "plugin_pkg"
    shutil.copytree(HERE / "plugin_pkg", root)
    done = subprocess.run([sys.executable, "setup.py", "-q", "egg_info", "--egg-base", str(root)], cwd=root,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    yield
    sys.path.remove(str(root))
    for name in [m for m in sys.modules if m == "dc_test_plugin" or m.startswith("dc_test_plugin.")]:
        del sys.modules[name]


def test_bundled_plugin_is_registered(mapping):
    assert "five_bar" in available_mappings()
    assert type(mapping) is FiveBarMapping


def test_third_party_plugin_is_found_and_used(plugin_package, model):
    assert "elbow_driven_five_bar" in available_mappings()
    mapping = dc.load_mapping("elbow_driven_five_bar", model)
    assert type(mapping).__module__ == "dc_test_plugin.elbow_driven"
    assert mapping.active_joints == ("joint1", "joint2")
    assert mapping.passive_joints == ("joint3", "joint4", "joint5")
    q = mapping.complete([0.2, -0.1])
    assert _closure_error(q) < 1e-10
    np.testing.assert_array_equal(q[[0, 1]], [0.2, -0.1])


def test_failing_plugin_is_reported_by_name(plugin_package, model):
    with pytest.raises(MappingPluginError, match="broken_test_mapping.*broken on purpose"):
        dc.load_mapping("broken_test_mapping", model)
    # the broken plugin does not hide the others
    assert type(dc.load_mapping("five_bar", model)) is FiveBarMapping


def test_unknown_mapping_lists_the_installed_ones(model):
    with pytest.raises(ValueError, match="no closed-chain mapping named 'four_bar'.*five_bar"):
        dc.load_mapping("four_bar", model)


# ------------------------------------------------------------------------------------------------
# closed-loop simulation in reduced coordinates


def test_computed_torque_tracking_in_simulation(mapping, model, pin):
    """10 s of computed-torque control at 200 Hz: the loop stays closed, the active joints track the
    reference, and the actuators' work equals the change of Pinocchio's total energy."""
    pinocchio, pm, pd = pin
    offset, amplitude, omega = np.array([0.1, -0.2]), np.array([0.4, 0.3]), np.array([1.3, 2.1])

    def reference(t):
        s, c = np.sin(omega * t), np.cos(omega * t)
        return offset + amplitude * s, amplitude * omega * c, -amplitude * omega**2 * s

    run = simulate_closed_chain(mapping, model, reference, duration=10.0, dt=5e-3, kp=400.0, kd=40.0,
                                theta_a0=reference(0.0)[0] + [2e-3, -2e-3])
    assert run.time[-1] == pytest.approx(10.0)
    assert run.closure_residual.max() < 1e-8
    assert max(_closure_error(q) for q in run.q) < 1e-8
    rms = np.sqrt(np.mean((run.theta_a - run.theta_a_desired) ** 2, axis=0))
    assert np.all(rms < 1e-3), rms

    def energy(q, dtheta_a):
        v = np.zeros(5)
        v[ACTIVE] = dtheta_a
        v[PASSIVE] = mapping.passive_jacobian(q) @ dtheta_a
        return pinocchio.computeKineticEnergy(pm, pd, q, v) + pinocchio.computePotentialEnergy(pm, pd, q)

    # the torque is held over each step, so its work there is tau_a . delta theta_a
    work = np.cumsum(np.sum(run.tau_a[:-1] * np.diff(run.theta_a, axis=0), axis=1))
    gained = np.array([energy(q, dq) for q, dq in zip(run.q, run.dtheta_a)])
    gained = gained[1:] - gained[0]
    assert np.abs(gained).max() > 0.02
    np.testing.assert_allclose(work, gained, atol=1e-7)
