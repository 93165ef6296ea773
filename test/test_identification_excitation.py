"""The Fourier excitation: its compiled evaluator against central differences, the designer's limits,
start at rest and reported condition number (against NumPy's SVD of the base regressor), and the
parameter file `dyn-control excite` writes, read by rcl's own parser as a node gets it."""
import numpy as np
import pytest

import dyn_control as dc
from dyn_control.control.fourier import fourier_reference
from dyn_control.identification.base_parameters import regressor_rows, structural_base_parameters
from dyn_control.identification.excitation import (Excitation, design_excitation, fourier_trajectory, joint_limits,
                                                   read_excitation)
from dyn_control.nodes.cli import main


def _series(rng, n=3, harmonics=4):
    return rng.uniform(-1, 1, n), rng.uniform(-1, 1, (n, harmonics)), rng.uniform(-1, 1, (n, harmonics)), 0.7


@pytest.mark.kernels
def test_fourier_reference_against_its_formula_and_central_differences():
    q0, a, b, w = _series(np.random.default_rng(0))
    q, v, acc = np.empty(3), np.empty(3), np.empty(3)

    def position(t):
        l = np.arange(1, a.shape[1] + 1)
        return q0 + (a / (l * w)) @ np.sin(l * w * t) - (b / (l * w)) @ np.cos(l * w * t)

    h = 1e-4
    for t in (0.0, 0.37, 5.2):
        fourier_reference(t, q0, a, b, w, q, v, acc)
        np.testing.assert_allclose(q, position(t), rtol=0, atol=1e-14)
        np.testing.assert_allclose(v, (position(t + h) - position(t - h)) / (2 * h), rtol=0, atol=1e-7)
        np.testing.assert_allclose(acc, (position(t + h) - 2 * position(t) + position(t - h)) / h ** 2,
                                   rtol=0, atol=1e-5)
        batch = fourier_trajectory([t], q0, a, b, w)
        np.testing.assert_allclose(np.concatenate([x[0] for x in batch]), np.concatenate([q, v, acc]), atol=1e-14)


@pytest.fixture(scope="module")
def planar():
    model = dc.load_urdf(dc.bundled_urdf("planar2"))
    return model, design_excitation(model, period=4.0, harmonics=4, restarts=2, max_iterations=40)


def test_design_within_limits_starting_at_rest(planar):
    model, excitation = planar
    lower, upper, v_max, a_max = joint_limits(model)
    q, v, a = excitation(np.linspace(0.0, 4.0, 4001))
    # sampled at 100 points a period, so between them a limit can be passed by a hair
    span = upper - lower
    assert np.all(q >= lower - 0.01 * span) and np.all(q <= upper + 0.01 * span)
    assert np.all(np.abs(v) <= 1.01 * v_max) and np.all(np.abs(a) <= 1.01 * a_max)
    np.testing.assert_allclose(q[0], excitation.q0, atol=1e-12)
    np.testing.assert_allclose([v[0], a[0], v[-1], a[-1]], 0.0, atol=1e-12)
    np.testing.assert_allclose(q[-1], q[0], atol=1e-12)     # periodic


def test_reported_condition_number_is_the_base_regressors(planar):
    model, excitation = planar
    base = structural_base_parameters(model)
    t = np.arange(100) * (excitation.period / 100)
    W = regressor_rows(model, *excitation(t), True)[:, base.independent]
    singular = np.linalg.svd(W, compute_uv=False)
    np.testing.assert_allclose(excitation.condition_number, singular[0] / singular[-1], rtol=1e-6)
    # better conditioned than a single sine per joint at the same limits
    sine = Excitation(model.joint_names, excitation.q0, np.array([[0.5, -0.5, 0, 0]] * 2),
                      np.zeros((2, 4)), excitation.period)
    s = np.linalg.svd(regressor_rows(model, *sine(t), True)[:, base.independent], compute_uv=False)
    assert excitation.condition_number < s[0] / s[-1]


def test_excite_command_writes_a_parameter_file_rcl_reads(tmp_path):
    rclpy = pytest.importorskip("rclpy", reason="rcl's parameter parser comes with rclpy")
    from rclpy.node import Node
    path = str(tmp_path / "excitation.yaml")
    urdf = dc.bundled_urdf("planar2")
    assert main(["excite", urdf, "--duration", "4", "--harmonics", "4", "--restarts", "1", "--iterations", "5",
                 "-o", path]) == 0
    excitation = read_excitation(path)
    context = rclpy.Context()
    rclpy.init(args=["--ros-args", "--params-file", path], context=context)
    try:
        node = Node("dyn_controller", namespace="/robot1", context=context,
                    automatically_declare_parameters_from_overrides=True)
        values = {k: p.value for k, p in node.get_parameters_by_prefix("reference").items()}
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
    assert values["type"] == "fourier"
    assert list(values["fourier.joints"]) == list(dc.load_urdf(urdf).joint_names)
    np.testing.assert_array_equal(values["fourier.q0"], excitation.q0)
    np.testing.assert_array_equal(np.reshape(values["fourier.a"], (2, 4)), excitation.a)
    np.testing.assert_array_equal(np.reshape(values["fourier.b"], (2, 4)), excitation.b)
    assert values["fourier.harmonics"] == 4 and values["fourier.frequency"] == pytest.approx(0.25)


def test_design_errors_name_the_argument():
    model = dc.load_urdf(dc.bundled_urdf("planar2"))
    with pytest.raises(ValueError, match="harmonics must be at least 3"):
        design_excitation(model, harmonics=2)
    with pytest.raises(ValueError, match="max_velocity"):
        design_excitation(model, max_velocity=[1.0, -1.0])
    unlimited = model._replace(velocity_limit=np.zeros(2))
    with pytest.raises(ValueError, match="joint1, joint2 have no velocity limit"):
        joint_limits(unlimited)
