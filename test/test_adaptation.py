"""Online adaptation of the inertial parameters in log-Cholesky coordinates.

Oracles: the pseudo-inertia's eigenvalues and Model.with_inertial_parameters' consistency check
(independent of the parameterization), central differences for the chain rule, a known target for
a quadratic loss, and, in closed loop, the simulator's true model: the controller's model lacks a
2 kg payload at the arm7 tool, and the adapted model must predict the measured torques.
"""
import numpy as np
import pytest

import dyn_control as dc
from dyn_control.control.adaptation import InertialAdaptation, phi_to_theta, theta_gradient, theta_to_phi
from dyn_control.control.computed_torque import ComputedTorque
from dyn_control.control.parameter_gradient import AccelerationFilter, ParameterGradient
from dyn_control.inertia.parameters import check_physical_consistency, transform_phi
from dyn_control.simulation.builtin import BuiltinSimulator
from oracles import central_difference


def arm7():
    return dc.load_urdf(dc.bundled_urdf("arm7"))


def min_pseudo_inertia_eigenvalue(phi):
    """Smallest eigenvalue of J = [[0.5 tr(I) 1 - I, h], [h^T, m]] (written out here)."""
    m, h = phi[0], phi[1:4]
    I = np.array([[phi[4], phi[7], phi[8]], [phi[7], phi[5], phi[9]], [phi[8], phi[9], phi[6]]])
    J = np.block([[0.5 * np.trace(I) * np.eye(3) - I, h[:, None]], [h[None, :], np.array([[m]])]])
    return np.linalg.eigvalsh(J)[0]


@pytest.mark.kernels
def test_theta_round_trip_and_every_theta_is_consistent():
    model = arm7()
    for i in range(model.nbodies):
        assert np.allclose(theta_to_phi(phi_to_theta(model.phi[i])), model.phi[i], rtol=0, atol=1e-12)
    rng = np.random.default_rng(0)
    for _ in range(200):
        phi = theta_to_phi(rng.normal(scale=2.0, size=10))
        assert min_pseudo_inertia_eigenvalue(phi) > 0.0
        check_physical_consistency(phi)


@pytest.mark.kernels
def test_theta_gradient_is_the_chain_rule():
    rng = np.random.default_rng(1)
    for _ in range(5):
        theta = rng.normal(size=10)
        gradient_phi = rng.normal(size=10)
        numeric = central_difference(lambda t: gradient_phi @ theta_to_phi(t), theta)
        assert np.allclose(theta_gradient(theta, gradient_phi), numeric, rtol=1e-6, atol=1e-7)


@pytest.mark.kernels
def test_degenerate_bodies_are_regularised():
    point_mass = np.array([2.0, 0.2, 0.0, 0.0, 0.0, 0.02, 0.02, 0.0, 0.0, 0.0])  # singular J
    with pytest.raises(ValueError, match="not positive definite"):
        phi_to_theta(point_mass)
    phi = theta_to_phi(phi_to_theta(point_mass, min_eigenvalue=1e-9))
    assert np.allclose(phi, point_mass, atol=1e-8)
    assert min_pseudo_inertia_eigenvalue(phi) > 0.0


@pytest.mark.kernels
def test_random_steps_stay_consistent_and_bounded():
    model = arm7()
    adaptation = InertialAdaptation(model, step_size=10.0, max_step=0.3)
    rng = np.random.default_rng(2)
    for _ in range(300):
        before = adaptation.theta.copy()
        gradient = rng.normal(scale=rng.choice([1e-3, 1.0, 1e3]), size=10 * model.nbodies)
        phi = adaptation.update(gradient).reshape(model.nbodies, 10)
        assert np.all(np.linalg.norm(adaptation.theta - before, axis=1) <= 0.3 + 1e-12)
        assert all(min_pseudo_inertia_eigenvalue(phi[i]) > 0.0 for i in range(model.nbodies))
    adapted = adaptation.model()  # with_inertial_parameters checks every body again
    assert np.array_equal(adapted.phi, adaptation.phi.reshape(model.nbodies, 10))
    assert not np.allclose(adapted.phi, model.phi)


@pytest.mark.kernels
def test_descends_on_a_quadratic_loss():
    """Loss 0.5 ||phi - target||^2 with a consistent target near arm7's parameters: the bounded
    gradient steps bring it down by more than a thousand (first-order steps are slow along the
    rotational inertias, which this loss weighs little)."""
    model = arm7()
    rng = np.random.default_rng(3)
    target = np.array([theta_to_phi(phi_to_theta(model.phi[i]) + rng.normal(scale=0.2, size=10))
                       for i in range(model.nbodies)]).reshape(-1)
    adaptation = InertialAdaptation(model, step_size=0.01, max_step=0.01)
    initial = 0.5 * np.sum((adaptation.phi - target) ** 2)
    for _ in range(1500):
        adaptation.update(adaptation.phi - target)
    assert 0.5 * np.sum((adaptation.phi - target) ** 2) < 1e-3 * initial


def test_bad_arguments():
    model = arm7()
    with pytest.raises(ValueError, match="step_size"):
        InertialAdaptation(model, step_size=-1.0, max_step=0.1)
    with pytest.raises(ValueError, match="max_step"):
        InertialAdaptation(model, step_size=1.0, max_step=0.0)
    adaptation = InertialAdaptation(model, step_size=1.0, max_step=0.1)
    with pytest.raises(ValueError, match="gradient_phi"):
        adaptation.update(np.zeros(3))
    with pytest.raises(ValueError, match="gradient_phi"):
        adaptation.update(np.full(10 * model.nbodies, np.nan))


# ----------------------------------------------------------------------------------------------
# Closed loop: computed torque on the adapted model, simulator with a payload the model lacks

DT = 0.002
DURATION = 20.0
WINDOW = 500             # 1 s of samples
UPDATE_EVERY = 20        # an adaptation step every 40 ms
KP, KD = 100.0, 20.0
Q0 = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.8])
AMPLITUDE = np.array([0.5, 0.4, 0.5, 0.4, 0.6, 0.5, 0.8])
FREQUENCY = np.array([0.3, 0.45, 0.35, 0.5, 0.55, 0.4, 0.6])  # Hz


def reference(t):
    w = 2.0 * np.pi * FREQUENCY
    return (Q0 + AMPLITUDE * np.sin(w * t), AMPLITUDE * w * np.cos(w * t),
            -AMPLITUDE * w * w * np.sin(w * t))


def with_payload(model, frame, mass, radius):
    """The model with a solid sphere of `mass` centred at `frame` added to the frame's body."""
    f = model.frame_id(frame)
    body = model.frame_body[f]
    inertia = 0.4 * mass * radius ** 2
    sphere = np.array([mass, 0, 0, 0, inertia, inertia, inertia, 0, 0, 0])
    phi = model.phi.copy()
    phi[body] += transform_phi(sphere, model.frame_R[f], model.frame_p[f])
    return model.with_inertial_parameters(phi)


def test_adaptation_learns_a_payload_in_closed_loop():
    model = arm7()
    plant = with_payload(model, "arm7_tool", 2.0, 0.04)
    q_start, v_start, _ = reference(0.0)
    sim = BuiltinSimulator(plant, DT, q0=q_start, v0=v_start, damping=0.0)
    adaptation = InertialAdaptation(model, step_size=2e-7, max_step=0.01)
    gradient = ParameterGradient(model, WINDOW)
    accelerations = AccelerationFilter(model.nv, DT, cutoff_hz=30.0)
    controller = ComputedTorque(model, KP, KD)
    data = model.create_data()
    phi_initial = model.inertial_parameters()
    n = int(round(DURATION / DT))
    regressors = np.zeros((n, model.nv, 10 * model.nbodies))
    torques = np.zeros((n, model.nv))
    estimates = np.zeros((n, 10 * model.nbodies))
    tracking = np.zeros((n, model.nv))
    for k in range(n):
        q, v = sim.q.copy(), sim.v.copy()
        tau = controller.compute(q, v, *reference(k * DT))
        a = accelerations.update(v)
        sim.step(tau)
        gradient.add_sample(q, v, a, tau)
        if gradient.count == WINDOW and k % UPDATE_EVERY == 0:
            phi = adaptation.update(gradient.gradient(adaptation.phi)).reshape(model.nbodies, 10)
            assert all(min_pseudo_inertia_eigenvalue(phi[i]) > 0.0 for i in range(model.nbodies))
            controller = ComputedTorque(adaptation.model(), KP, KD)
        regressors[k] = dc.regressor(model, data, q, v, a)
        torques[k] = tau
        estimates[k] = adaptation.phi
        tracking[k] = q - reference(k * DT)[0]

    def rms(predicted):
        error = torques[last] - predicted
        return float(np.sqrt(np.mean(np.sum(error * error, axis=1))))

    first, last = slice(0, 2 * WINDOW), slice(n - 2 * WINDOW, n)   # the first and last 2 s
    before = rms(regressors[last] @ phi_initial)
    after = rms(np.einsum("kij,kj->ki", regressors[last], estimates[last]))
    print(f"\nRMS torque prediction error over the last 2 s: {before:.3f} N m with the initial model, "
          f"{after:.3f} N m adapted ({100 * (1 - after / before):.1f} % lower)")
    assert before > 5.0          # the payload matters
    assert after <= 0.1 * before
    # and the controller tracks better on the adapted model than on the initial one
    tracking_before = float(np.sqrt(np.mean(tracking[first] ** 2)))
    tracking_after = float(np.sqrt(np.mean(tracking[last] ** 2)))
    print(f"RMS tracking error: {tracking_before:.4f} rad in the first 2 s (adapting from 1 s on), "
          f"{tracking_after:.4f} rad in the last 2 s")
    assert tracking_after < 0.2 * tracking_before


def test_joint_terms_step_is_the_window_least_squares_projected_onto_physical_terms():
    """update_joint_terms with rate 1: per joint the least-squares fit of the residual torque by
    y = [a, v, sgn_s(v)] (NumPy's lstsq as the oracle), then any negative term set to zero."""
    rng = np.random.default_rng(21)
    model = dc.load_urdf(dc.bundled_urdf("planar2"))
    truth = np.array([[0.05, 0.8, 1.5], [0.02, -0.3, 0.4]])     # joint 2's viscous term is not physical
    adaptation = InertialAdaptation(model, 1e-6, 0.01)
    sum_yy, gradient, fits = np.zeros((2, 3, 3)), np.zeros(6), []
    for i in range(2):
        y = np.stack([rng.normal(size=50), rng.normal(size=50), np.tanh(rng.normal(size=50) / 1e-3)], axis=1)
        residual = y @ truth[i] + 0.01 * rng.normal(size=50)
        sum_yy[i] = y.T @ y
        gradient[3 * i:3 * i + 3] = -(y.T @ residual)          # the terms start at zero
        fits.append(np.linalg.lstsq(y, residual, rcond=None)[0])
    terms = adaptation.update_joint_terms(gradient, sum_yy, 1.0)
    np.testing.assert_allclose(terms[0], fits[0], rtol=1e-6)
    assert terms[1, 1] == 0.0 and fits[1][1] < 0.0
    np.testing.assert_allclose(terms[1, [0, 2]], fits[1][[0, 2]], rtol=0.05)
    assert np.all(adaptation.model().joint_terms == terms)
