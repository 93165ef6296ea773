"""The reality gap, closed loop over DDS: the bundled arm's controller on a simulated robot that is
not its URDF (config/demo_mismatch.yaml: joint friction, armature and a 1.5 kg payload at the tool),
with a 10 N push between 3 s and 6 s. The simulated robot's true values are the oracle: the
controller either knows nothing of them (the nominal URDF) or is given them (`--matched`).

- Matched: the wrench estimate meets the demo's bounds: the false force (no force applied) at most
  0.3 N in the mean and the 95th percentile, the force error at most 10 % of 10 N (95th percentile);
  the tracking error below the nominal run's. The largest values come at the velocity reversals,
  where the simulated dry friction sticks while the model's smoothed sign passes through zero; they
  are printed.
- Nominal: the mismatch shows as a false force of newtons, which is what identification removes.
"""
import pytest
import ros_harness  # noqa: F401  (this process's own ROS domain)

from dyn_control.nodes.demo import run_demo

pytestmark = pytest.mark.ros


STALL_MS = 50.0     # a gap between the controller's commands over its watchdog: the machine stalled


def demo_run(folder, matched):
    """The demo's figures; a run in which the machine stalled the loop (the commands' DDS source
    timestamps show a gap over STALL_MS: the robot brakes, the observer restarts) is run once more,
    and skipped, with the evidence, when it stalls again."""
    for attempt in range(2):
        code, figures = run_demo(7.0, str(folder), "arm", mismatch=True, matched=matched)
        assert code == 0
        print(("matched" if matched else "nominal"), figures)
        if figures["longest command gap [ms]"] <= STALL_MS:
            return figures
    pytest.skip(f"the machine stalled the loop twice (commands {figures['longest command gap [ms]']:.0f} ms apart, "
                f"over the {STALL_MS:g} ms watchdog): the estimate's figures are the machine's")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mismatch")
    return {matched: demo_run(folder, matched) for matched in (False, True)}


def test_the_matched_model_estimates_the_push_and_no_false_force(runs):
    matched = runs[True]
    assert matched["false force mean"] <= 0.3
    assert matched["false force p95"] <= 0.3
    assert matched["force error p95"] <= 1.0
    assert matched["tracking before"] < runs[False]["tracking before"]


def test_the_nominal_model_reports_the_gap_as_a_false_force(runs):
    nominal = runs[False]
    assert nominal["false force mean"] > 3.0
    assert nominal["force error mean"] > 3.0
