"""Identification against a simulated robot's true values (test/identification_truth.py): the bundled
arm7 with 20 % heavier links, moved centres of mass, armature, viscous and Coulomb friction (the
builtin simulator's dry friction sticks) and a 1.5 kg payload, tracking a designed excitation for
10 s at 1 kHz; identification starts from the nominal URDF and never reads the truth."""
import numpy as np
import pytest

import dyn_control as dc
from dyn_control.identification.identify import identify
from identification_truth import nominal, pseudo_inertia_eigenvalues, recording, truth, truth_base_parameters

pytest.importorskip("cvxpy", reason="identification needs cvxpy and clarabel (pip install .[identification])")


@pytest.fixture(scope="module", params=[False, True], ids=["exact", "noisy"])
def identified(request):
    return request.param, identify(nominal(), recording(request.param))


def test_base_parameters_equal_the_truths_combinations(identified):
    """Each base parameter (weighted least squares) within 1 % of the truth's value without noise and
    5 % with noise; a combination whose whole effect is below 1 % of the torques (at random states)
    is held to an error whose effect is below 1 % of that (the floor)."""
    noisy, result = identified
    beta, floor = truth_base_parameters(result.base)
    relative = np.abs(result.base_estimate.values - beta) / np.maximum(np.abs(beta), floor)
    worst = int(np.argmax(relative))
    print(f"{'noisy' if noisy else 'exact'}: {result.base.count} base parameters, worst {100 * relative[worst]:.3f} % "
          f"({result.base.describe(worst)})")
    assert relative.max() <= (0.05 if noisy else 0.01), result.base.describe(worst)
    # the combination coefficients agree with the truth's least-squares values too
    standard = truth().parameters()
    np.testing.assert_allclose(result.base.of(standard), beta, rtol=1e-7, atol=1e-9 * np.abs(beta).max())


def test_held_out_torques_within_3_percent(identified):
    noisy, result = identified
    prior, ours = result.errors["prior"].relative, result.errors["identified"].relative
    print(f"held-out RMS error / torque RMS per joint: prior {np.round(100 * prior, 1)} %, "
          f"identified {np.round(100 * ours, 2)} %")
    assert np.all(ours <= 0.03)
    assert np.all(prior > 10 * ours)   # the nominal URDF is far off this robot


def test_identified_bodies_are_physical_and_joint_terms_non_negative(identified):
    _, result = identified
    for body, phi in zip(result.model.body_names, result.model.phi):
        assert pseudo_inertia_eigenvalues(phi).min() >= 0.0, body
    assert np.all(result.model.joint_parameters() >= 0.0)
    # the consistent parameters still reproduce the truth's combinations (the prior only fills in
    # what the motion cannot see)
    beta, floor = truth_base_parameters(result.base)
    relative = np.abs(result.base.of(result.model.parameters()) - beta) / np.maximum(np.abs(beta), floor)
    assert relative.max() <= 0.05


def test_identified_model_predicts_the_truths_torques_on_the_excitation():
    """Through rnea of the identified Model (not the regressor): torques of the truth along the
    excitation, where both move (no stick), agree within 1 % of their RMS."""
    from identification_truth import excitation
    result = identify(nominal(), recording(False))
    t = np.linspace(1.0, 9.0, 400)
    q, v, a = excitation()(t)
    moving = np.all(np.abs(v) > 0.05, axis=1)
    ours = dc.rnea_batch(result.model, q[moving], v[moving], a[moving])
    true = dc.rnea_batch(truth(), q[moving], v[moving], a[moving])
    rms = np.sqrt(np.mean(true ** 2, axis=0))
    assert np.all(np.sqrt(np.mean((ours - true) ** 2, axis=0)) <= 0.01 * rms)


def test_efforts_half_a_step_late_are_moved_back():
    """Efforts as dyn_simulator publishes them with its states (the torque of the step before):
    with effort_delay = dt / 2 the base parameters are within 1 % again."""
    from identification_truth import DURATION, excitation
    from dyn_control.identification.synthetic import track
    states = track(truth(), nominal(), excitation(), DURATION, effort="previous")
    result = identify(nominal(), states, effort_delay=0.0005)
    beta, floor = truth_base_parameters(result.base)
    assert np.max(np.abs(result.base_estimate.values - beta) / np.maximum(np.abs(beta), floor)) <= 0.01


def test_identified_from_mujoco_simulated_data():
    """The same robot simulated by MuJoCo (an engine independent of dyn_control's kernels: its own
    dynamics, dry friction by its friction-loss constraint), with measurement noise: base parameters
    within 5 %, held-out torques within 3 %."""
    pytest.importorskip("mujoco", reason="MuJoCo is the independent engine (pip install mujoco)")
    result = identify(nominal(), recording(True, "mujoco"))
    beta, floor = truth_base_parameters(result.base)
    relative = np.abs(result.base_estimate.values - beta) / np.maximum(np.abs(beta), floor)
    worst = int(np.argmax(relative))
    print(f"MuJoCo: worst base parameter {100 * relative[worst]:.2f} % ({result.base.describe(worst)}), held-out "
          f"error {np.round(100 * result.errors['identified'].relative, 2)} %")
    assert relative.max() <= 0.05
    assert np.all(result.errors["identified"].relative <= 0.03)
