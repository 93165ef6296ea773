"""Issue 15, class 6: no unbounded work from a parameter.

The five-bar mapping's numeric parameters are checked against their ranges at load (a ValueError
naming the parameter, never an UnboundLocalError, OverflowError or TypeError), an unknown parameter is
a ValueError naming it (for any plugin: load_mapping checks the names against the plugin's
__init__), and complete() does a bounded amount of work: at most MAX_CONTINUATION_STEPS steps of
at most max_iterations Newton iterations each, counted here as evaluations of the loop kinematics;
farther than the steps reach it refuses with a ValueError before iterating. Hypothesis draws the
parameters (in range or not) and the active joint angles (near or far). Oracle of a configuration
complete() returns: Pinocchio's placements of link3 and its cut copy, whose rotations coincide.
"""
import functools
import math

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dyn_control as dc
from dyn_control.mappings import five_bar, simulate_closed_chain

EXAMPLES = settings(max_examples=60, deadline=None)
VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**6), st.booleans(),
                   st.none(), st.text(max_size=3), st.sampled_from([0, 1e-300, 1e-12, 1e-3, 0.25, 3.0, 1e300]))


@functools.lru_cache(maxsize=None)
def five_bar_model():
    path = dc.bundled_urdf("five_bar")
    pm = pin.buildModelFromUrdf(path)
    return dc.load_urdf(path), pm, pm.createData()


def closure_error(q):
    """Angle between the rotations of link3 and its cut copy link3_cut, from Pinocchio."""
    _, pm, pd = five_bar_model()
    pin.framesForwardKinematics(pm, pd, q)
    R_a = pd.oMf[pm.getFrameId("link3")].rotation
    R_b = pd.oMf[pm.getFrameId("link3_cut")].rotation
    return np.linalg.norm(pin.log3(R_a.T @ R_b))


def in_range(name, value):
    low, high, integer = five_bar.PARAMETER_RANGES[name]
    kind = int if integer else (int, float)
    return isinstance(value, kind) and not isinstance(value, bool) and low <= value <= high


class Counting:
    """Counts the mapping's evaluations of the loop kinematics (one per Newton iteration)."""

    def __init__(self, mapping):
        self.count = 0
        self.kinematics = mapping._kinematics
        mapping._kinematics = self

    def __call__(self, q):
        self.count += 1
        return self.kinematics(q)


@EXAMPLES
@given(name=st.sampled_from(sorted(five_bar.PARAMETER_RANGES)), value=VALUES,
       theta=st.tuples(st.floats(-2.0, 2.0), st.floats(-2.0, 2.0)), far=st.sampled_from([1.0, 10.0, 1e3, 1e300]))
def test_parameters_are_checked_and_the_work_is_bounded(name, value, theta, far):
    model = five_bar_model()[0]
    try:
        mapping = dc.load_mapping("five_bar", model, **{name: value})
    except ValueError as error:  # out of range, or in range but no use for the bundled five-bar
        assert name in str(error), str(error)
        return
    assert in_range(name, value), f"{name}={value!r} was taken"
    counting = Counting(mapping)
    theta_a = far * np.array(theta)
    try:
        q = mapping.complete(theta_a)
    except ValueError as error:
        assert "five_bar" in str(error), str(error)
    else:
        assert closure_error(q) < 1e-6
        np.testing.assert_allclose(q[mapping.active_indices], theta_a, rtol=1e-12, atol=1e-12)
    bound = five_bar.MAX_CONTINUATION_STEPS * mapping.max_iterations + 1
    assert counting.count <= bound, f"{counting.count} kinematics evaluations for theta_a = {theta_a}"


def test_far_active_angles_are_refused_before_iterating():
    model = five_bar_model()[0]
    mapping = dc.load_mapping("five_bar", model, continuation_step=1e-3, max_iterations=200)
    counting = Counting(mapping)
    with pytest.raises(ValueError, match="continuation steps"):
        mapping.complete([1e6, 0.0])
    assert counting.count == 0


@settings(max_examples=30, deadline=None)
@given(name=st.text(min_size=1, max_size=12).filter(lambda n: n not in five_bar.PARAMETER_RANGES))
def test_unknown_parameters_are_named(name):
    model = five_bar_model()[0]
    known = ("active_joints", "cut_joint", "cut_link", "closure_components", "reference_configuration")
    if name in known:
        return
    with pytest.raises(ValueError, match="unexpected keyword argument") as error:
        dc.load_mapping("five_bar", model, config={name: 1})
    assert repr(name) in str(error.value)


def test_the_issue_cases():
    model = five_bar_model()[0]
    for params, name in [(dict(max_iterations=0), "max_iterations"), (dict(continuation_step=1e-12), "continuation_step"),
                         (dict(continuation_step=0), "continuation_step"), (dict(colour="red"), "colour")]:
        with pytest.raises(ValueError, match=name):
            dc.load_mapping("five_bar", model, **params)


@pytest.mark.parametrize("duration, dt, name", [(1.0, 0.0, "dt"), (1.0, -1e-3, "dt"), (math.inf, 1e-3, "duration"),
                                                 (1.0, math.nan, "dt"), ("1", 1e-3, "duration")])
def test_simulation_length_is_checked(duration, dt, name):
    model = five_bar_model()[0]
    mapping = dc.load_mapping("five_bar", model)

    def reference(t):
        return np.zeros(2), np.zeros(2), np.zeros(2)

    with pytest.raises(ValueError, match=name):
        simulate_closed_chain(mapping, model, reference, duration, dt, 100.0, 20.0)
