"""Path and goal tolerances (dyn_control.control.tolerances) against hand-computed cases of
joint_trajectory_controller's rules: how a goal's values resolve against the defaults (> 0
replaces, 0 keeps, -1 removes), component tolerances on single-DOF joints, and the outcome at a
time before and after the last point."""
import math

import numpy as np
import pytest

from dyn_control.control.tolerances import (GOAL_VIOLATED, PATH_VIOLATED, ROTATION, RUNNING, SUCCEEDED,
                                            TRANSLATION, Tolerances, UnknownJoint, goal_tolerances, judge,
                                            resolve, violations)

NAMES = ["a", "b", "c"]
MOTIONS = ["rotation", "translation", "rotation"]


def defaults(goal_time=1.0):
    path = np.array([[0.1, 0.1, 0.1], [0.0, 0.0, 0.0], [5.0, 5.0, 5.0]])
    goal = np.array([[0.01, 0.01, 0.01], [0.02, 0.02, 0.02], [0.0, 0.0, 0.0]])
    return Tolerances(path, goal, goal_time)


@pytest.mark.parametrize("default, value, expected", [(0.1, 0.2, 0.2), (0.1, 0.0, 0.1), (0.1, -1.0, 0.0),
                                                      (0.0, 0.0, 0.0), (0.0, 3.0, 3.0)])
def test_resolve(default, value, expected):
    assert resolve(default, value, "x") == expected


@pytest.mark.parametrize("value", [-0.5, -2.0, math.nan, math.inf])
def test_resolve_refuses_what_is_not_a_tolerance(value):
    with pytest.raises(ValueError, match="x position"):
        resolve(0.1, value, "x position")


def test_a_goal_without_tolerances_keeps_the_defaults():
    t = goal_tolerances(NAMES, defaults())
    np.testing.assert_array_equal(t.path, defaults().path)
    np.testing.assert_array_equal(t.goal, defaults().goal)
    assert t.goal_time == 1.0


def test_goal_entries_replace_keep_or_remove_per_joint_and_quantity():
    t = goal_tolerances(NAMES, defaults(), path=[("b", 0.3, 0.0, -1.0)],
                        goal=[("c", 0.0, 0.5, 0.7), ("a", -1.0, 0.0, 0.0)])
    np.testing.assert_array_equal(t.path, [[0.1, 0.3, 0.1], [0.0, 0.0, 0.0], [5.0, 0.0, 5.0]])
    np.testing.assert_array_equal(t.goal, [[0.0, 0.01, 0.01], [0.02, 0.02, 0.5], [0.0, 0.0, 0.7]])


@pytest.mark.parametrize("default, value, expected", [(1.0, 0.0, 1.0), (1.0, 2.5, 2.5), (1.0, -1.0, math.inf),
                                                      (math.inf, 0.0, math.inf), (math.inf, 0.2, 0.2)])
def test_goal_time(default, value, expected):
    assert goal_tolerances(NAMES, defaults(default), goal_time=value).goal_time == expected


def test_a_tolerance_for_a_joint_not_controlled_is_refused_by_name():
    with pytest.raises(UnknownJoint, match="'z'"):
        goal_tolerances(NAMES, defaults(), goal=[("z", 0.1, 0.0, 0.0)])
    with pytest.raises(ValueError, match="path tolerance of a velocity"):
        goal_tolerances(NAMES, defaults(), path=[("a", 0.1, -3.0, 0.0)])


def test_component_tolerances_of_single_dof_joints():
    t = goal_tolerances(NAMES, defaults(), path=[("a", 0.2, 0.0, 0.0)],
                        component_path=[("a", ROTATION, 0.05, 0.0, 0.0), ("b", TRANSLATION, 0.0, 0.4, 0.0)],
                        motions=MOTIONS)
    np.testing.assert_array_equal(t.path[:, 0], [0.05, 0.0, 5.0])      # after the plain entry
    np.testing.assert_array_equal(t.path[:, 1], [0.1, 0.4, 5.0])
    with pytest.raises(ValueError, match="TRANSLATION of a: a rotation joint has only the component ROTATION"):
        goal_tolerances(NAMES, defaults(), component_goal=[("a", TRANSLATION, 0.1, 0.0, 0.0)], motions=MOTIONS)
    with pytest.raises(UnknownJoint):
        goal_tolerances(NAMES, defaults(), component_goal=[("z", ROTATION, 0.1, 0.0, 0.0)], motions=MOTIONS)


def test_violations_only_where_checked_and_strictly_beyond():
    tolerance = np.array([[0.1, 0.0, 0.1], [0.0, 0.0, 0.2], [0.0, 0.0, 0.0]])
    error = np.array([[0.1, 9.0, -0.11], [3.0, 0.0, -0.2], [7.0, 0.0, 0.0]])
    np.testing.assert_array_equal(violations(error, tolerance),
                                  [[False, False, True], [False, False, False], [False, False, False]])


def test_judge_before_and_after_the_last_point():
    t = goal_tolerances(NAMES, defaults(goal_time=0.5))
    small = np.array([[0.005, -0.005, 0.0], [0.01, 0.0, -0.01], [1.0, 0.0, 0.0]])
    assert judge(1.0, 2.0, small, t, NAMES) == (RUNNING, "")
    assert judge(2.0, 2.0, small, t, NAMES) == (SUCCEEDED, "")
    off_path = small.copy()
    off_path[0, 1] = -0.25
    outcome, reason = judge(1.0, 2.0, off_path, t, NAMES)
    assert outcome == PATH_VIOLATED
    assert reason == "b position error -0.25 beyond the path tolerance 0.1"
    # after the last point only the goal tolerance counts: 0.25 rad off, within goal_time still running
    assert judge(2.4, 2.0, off_path, t, NAMES) == (RUNNING, "")
    outcome, reason = judge(2.6, 2.0, off_path, t, NAMES)
    assert outcome == GOAL_VIOLATED
    assert reason == ("not within the goal tolerance 0.600 s after the last point (goal_time_tolerance 0.5 s): "
                      "b position error -0.25 beyond the goal tolerance 0.01")
    moving = small.copy()
    moving[1, 2] = 0.03       # still moving at 0.03 rad/s: the goal velocity tolerance 0.02
    assert judge(2.1, 2.0, moving, t, NAMES) == (RUNNING, "")
    assert judge(3.0, 2.0, moving, t, NAMES)[0] == GOAL_VIOLATED
    assert judge(100.0, 2.0, moving, goal_tolerances(NAMES, defaults(), goal_time=-1.0), NAMES) == (RUNNING, "")
