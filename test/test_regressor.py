"""Joint torque regressor and Model.with_inertial_parameters.

Oracles: Pinocchio's computeJointTorqueRegressor (its columns per joint are [m, mc, Ixx, Ixy, Iyy,
Ixz, Iyz, Izz] about the joint frame origin: mapped with OURS_FROM_PIN_PARAM), and our rnea run on
a model whose parameters were replaced (tau must be linear in phi with exactly Y as coefficients).
"""
import functools

import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from oracles import (JIT_DISABLED, OURS_FROM_PIN_PARAM, pin_phi_to_ours, pin_q, pinocchio_model,
                     random_state, robot_urdf)

pytestmark = pytest.mark.kernels

ROBOTS = ["panda", "tiago"] if JIT_DISABLED else ["panda", "ur5_robot", "talos_reduced", "tiago",
                                                   "kinova", "solo12", "z1"]
N_STATES = 1 if JIT_DISABLED else 3


@functools.lru_cache(maxsize=None)
def robot(name):
    path = robot_urdf(name)
    model = dc.load_urdf(path)
    pin_model = pinocchio_model(path)
    rng = np.random.default_rng(sum(map(ord, name)))
    states = [random_state(model, rng) for _ in range(N_STATES)]
    return model, pin_model, states


def close(ours, ref, rtol=1e-10):
    scale = max(1.0, float(np.abs(ref).max()))
    return float(np.abs(ours - ref).max()) <= rtol * scale


def random_consistent_phi(model, rng):
    """Physically consistent parameters for every body: a random mass, centre of mass and
    principal moments (triangle inequality by construction), rotated and shifted to the origin."""
    phi = np.zeros((model.nbodies, 10))
    for i in range(model.nbodies):
        m = rng.uniform(0.5, 3.0)
        c = rng.uniform(-0.2, 0.2, 3)
        a, b = rng.uniform(0.01, 0.1, 2)
        J = np.diag([a, b, rng.uniform(abs(a - b), a + b)])
        Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        I_o = Q @ J @ Q.T + m * (c @ c * np.eye(3) - np.outer(c, c))
        phi[i] = [m, *(m * c), I_o[0, 0], I_o[1, 1], I_o[2, 2], I_o[0, 1], I_o[0, 2], I_o[1, 2]]
    return phi


@pytest.mark.parametrize("name", ROBOTS)
def test_regressor_matches_pinocchio(name):
    model, pin_model, states = robot(name)
    data, pin_data = model.create_data(), pin_model.createData()
    # the same parameters, mapped: Pinocchio's body inertia as [m, mc, I] -> ours
    pin_phi = np.concatenate([pin_phi_to_ours(pin_model.inertias[j].toDynamicParameters())
                              for j in range(1, pin_model.njoints)])
    assert close(model.inertial_parameters(), pin_phi)
    for q, v, a in states:
        Y = dc.regressor(model, data, q, v, a)
        Y_pin = pin.computeJointTorqueRegressor(pin_model, pin_data, pin_q(pin_model, q), v, a)
        Y_pin = Y_pin.reshape(model.nv, model.nbodies, 10)[:, :, OURS_FROM_PIN_PARAM].reshape(model.nv, -1)
        assert Y.shape == (model.nv, 10 * model.nbodies)
        assert close(Y, Y_pin), np.abs(Y - Y_pin).max()


@pytest.mark.parametrize("name", ROBOTS[:4])
def test_regressor_is_the_torque_of_any_parameters(name):
    model, _, states = robot(name)
    rng = np.random.default_rng(7)
    other = model.with_inertial_parameters(random_consistent_phi(model, rng))
    data, other_data = model.create_data(), other.create_data()
    for q, v, a in states:
        Y = dc.regressor(model, data, q, v, a).copy()
        assert close(Y @ model.inertial_parameters(), dc.rnea(model, data, q, v, a))
        assert close(Y @ other.inertial_parameters(), dc.rnea(other, other_data, q, v, a))


def test_regressor_with_mimic_coupling():
    model = dc.load_urdf(robot_urdf("panda"), mimic=True)
    assert model.coupling is not None
    data = model.create_data()
    q, v, a = random_state(model, np.random.default_rng(3))
    Y = dc.regressor(model, data, q, v, a)
    assert Y.shape == (model.nv, 10 * model.nbodies)
    assert close(Y @ model.inertial_parameters(), dc.rnea(model, data, q, v, a))


def test_regressor_bad_input():
    model, _, states = robot("panda")
    data = model.create_data()
    q, v, a = states[0]
    with pytest.raises(ValueError, match=r"\bq\b.*shape"):
        dc.regressor(model, data, q[:-1], v, a)
    with pytest.raises(ValueError, match=r"\ba\b"):
        dc.regressor(model, data, q, v, "fast")
    bad = v.copy()
    bad[2] = np.nan
    with pytest.raises(ValueError, match=r"non-finite.*\bv at indices \[2\]"):
        dc.regressor(model, data, q, bad, a)
    with pytest.raises(ValueError, match="data"):
        dc.regressor(model, dc.load_urdf(robot_urdf("ur5_robot")).create_data(), q, v, a)
    # a list is fine
    assert close(dc.regressor(model, data, list(q), list(v), list(a)) @ model.inertial_parameters(),
                 dc.rnea(model, data, q, v, a))


def test_with_inertial_parameters_returns_a_new_model():
    model, _, states = robot("panda")
    phi = random_consistent_phi(model, np.random.default_rng(11))
    other = model.with_inertial_parameters(phi.reshape(-1))
    assert other is not model
    np.testing.assert_array_equal(other.phi, phi)
    assert not np.array_equal(model.phi, phi)
    assert other.joint_names == model.joint_names
    np.testing.assert_array_equal(other.home_p, model.home_p)
    # (nbodies, 10) is accepted as well
    np.testing.assert_array_equal(model.with_inertial_parameters(phi).phi, phi)


def test_with_inertial_parameters_rejects_inconsistent_bodies():
    model, _, _ = robot("panda")
    phi = model.phi.copy()
    link = model.body_names[2]
    negative_mass = phi.copy()
    negative_mass[2, 0] = -1.0
    with pytest.raises(ValueError, match=f"{link}.*mass"):
        model.with_inertial_parameters(negative_mass)
    # principal moments (1, 1, 3) at the centre of mass: 1 + 1 < 3
    triangle = phi.copy()
    m, c = phi[3, 0], phi[3, 1:4] / phi[3, 0]
    I_o = np.diag([1.0, 1.0, 3.0]) + m * (c @ c * np.eye(3) - np.outer(c, c))
    triangle[3, 4:] = [I_o[0, 0], I_o[1, 1], I_o[2, 2], I_o[0, 1], I_o[0, 2], I_o[1, 2]]
    with pytest.raises(ValueError, match=f"{model.body_names[3]}.*triangle"):
        model.with_inertial_parameters(triangle)
    not_psd = phi.copy()
    not_psd[4, 4] = -1.0
    with pytest.raises(ValueError, match=f"{model.body_names[4]}"):
        model.with_inertial_parameters(not_psd)
    with pytest.raises(ValueError, match="phi.*shape"):
        model.with_inertial_parameters(phi[:-1])
    nan = phi.copy()
    nan[0, 1] = np.nan
    with pytest.raises(ValueError, match=model.body_names[0]):
        model.with_inertial_parameters(nan)
