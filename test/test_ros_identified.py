"""Identification closes the reality gap, closed loop over DDS (issue: identify the robot, sec. 4):
the simulated robot of config/demo_mismatch.yaml (joint friction, armature, a 1.5 kg payload the
URDF lacks) tracks a designed excitation (the controller's reference.type fourier) while a bag is
recorded from the graph, `identify` fits a physically consistent model from that bag alone, and
the controller is configured with its parameters file (`model.parameters_file`) on the same robot in
the demo (a 10 N push from 3 s to 6 s). The oracle: the simulated robot's own forces, and the same
demo with the controller told the simulated robot's true values (`--matched`), run beside it on the
same machine: the push's estimate holds the observer's own lag along the sine and the loop's latency,
which grow on a slower machine alike for both. With the identified model the false force stays
below 0.3 N (mean and 95th percentile; or 0.1 N above the true values' on a machine where theirs
exceeds 0.2 N) and the push's estimate error exceeds the true values' by at
most 1 % of the push on average, 2 % at the 95th percentile. The fourier reference is checked against
the closed-form series.
"""
import numpy as np
import pytest
import ros_harness  # noqa: F401  (this process's own ROS domain)
import yaml

import dyn_control as dc
from dyn_control.nodes.bringup import bringup
from dyn_control.nodes.demo import DemoMonitor, identify_demo, run_demo

pytestmark = pytest.mark.ros


STALL_MS = 50.0     # a gap between the controller's commands over its watchdog: the machine stalled


def test_the_robot_identified_through_ros_removes_the_false_force(tmp_path):
    """dyn-control demo --mismatch --identify: excitation, a bag recorded from the running graph,
    identification, then the demo with model.parameters_file. A run in which the machine stalled
    the loop (a gap of the commands over STALL_MS while recording or in the demo: the robot brakes,
    the observer restarts) is run once more, and skipped with the evidence when it stalls again."""
    for attempt in range(2):
        code, figures = identify_demo(7.0, str(tmp_path / f"run{attempt}"))
        assert code == 0
        code, truth = run_demo(7.0, str(tmp_path / f"run{attempt}"), "arm", mismatch=True, matched=True)
        assert code == 0
        print("identified:", figures)
        print("true values:", truth)
        gaps = (figures["excitation longest command gap [ms]"], figures["longest command gap [ms]"],
                truth["longest command gap [ms]"])
        if max(gaps) <= STALL_MS:
            break
    else:
        pytest.skip(f"the machine stalled the loop twice (commands {gaps[0]:.0f} ms apart while recording, "
                    f"{max(gaps[1:]):.0f} ms in a demo; the watchdog is {STALL_MS:g} ms): the figures are the machine's")
    for key in ("false force mean", "false force p95"):
        assert figures[key] <= max(0.3, truth[key] + 0.1), f"{key}: {figures[key]:.3f} N, true values {truth[key]:.3f} N"
    # the 10 N push: within 1 % (mean) and 2 % (95th percentile) of what the true values give
    assert figures["force error mean"] <= truth["force error mean"] + 0.1
    assert figures["force error p95"] <= truth["force error p95"] + 0.2


def test_fourier_reference_is_the_series(tmp_path):
    """reference.type fourier: after the re-engagement blend (the series starts at rest at q0), the
    controller's ~/desired is the closed-form series at the joint states' stamps, and the arm tracks it."""
    nominal = dc.load_urdf(dc.bundled_urdf("arm7"))
    q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
    rng = np.random.default_rng(4)
    a, b = np.zeros((7, 2)), np.zeros((7, 2))
    a[:, 0] = rng.uniform(-0.1, 0.1, 7)
    a[:, 1] = -a[:, 0]                # v(0) = sum_l a_il = 0 and, with b = 0, q(0) = q0: at rest at q0
    frequency = 0.25
    omega = 2 * np.pi * frequency
    series_q0 = q0
    reference = {"type": "fourier", "fourier": {
        "joints": list(nominal.joint_names), "q0": series_q0.tolist(), "a": a.reshape(-1).tolist(),
        "b": b.reshape(-1).tolist(), "harmonics": 2, "frequency": frequency}}
    tree = {"/**/dyn_controller": {"ros__parameters": {"urdf_path": dc.bundled_urdf("arm7"), "reference": reference}},
            "/**/dyn_simulator": {"ros__parameters": {"urdf_path": dc.bundled_urdf("arm7"), "initial_positions": q0.tolist()}}}
    config = tmp_path / "fourier.yaml"
    config.write_text(yaml.safe_dump(tree))
    monitor = DemoMonitor()
    assert bringup(str(config), 5.0, monitor) == 0
    recorder = monitor.recorder
    stamps, desired = recorder.stamps("desired"), recorder.values("desired", 0)
    t = (stamps - stamps[0]) * 1e-9
    late = t > 3.0                    # after the blend (at least 1 s, longer for large offsets)
    l = np.arange(1, 3)
    w = l * omega
    expected = series_q0 + (np.sin(np.outer(t[late], w)) / w) @ a.T - (np.cos(np.outer(t[late], w)) / w) @ b.T
    np.testing.assert_allclose(desired[late], expected, atol=1e-9)
    times, error = recorder.tracking_error()
    assert np.abs(error[(times - stamps[0]) * 1e-9 > 3.0]).max() < 1e-3
