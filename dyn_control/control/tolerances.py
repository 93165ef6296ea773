"""Path and goal tolerances of a trajectory, judged as ros2_controllers' joint_trajectory_controller
judges them (tolerances.hpp) for control_msgs/FollowJointTrajectory. No ROS here: names, numbers
and arrays.

A tolerance is per controlled joint and quantity (position, velocity, acceleration): a tolerance
t > 0 requires |error| <= t, 0 leaves the quantity unchecked. Errors are desired - actual.
- Defaults come from the controller; a goal's entries resolve against them one by one: a value
  > 0 replaces the default, 0 keeps it, -1 removes the check, anything else (another negative
  value, NaN, inf) is refused.
- While the trajectory runs (before its last point's time) every joint must stay within its path
  tolerance, else PATH_VIOLATED. From the last point's time on, the goal succeeds as soon as every
  joint is within its goal tolerance; if that has not happened `goal_time` seconds after the last
  point (inf: no limit), GOAL_VIOLATED.
- Component tolerances (control_msgs/JointComponentTolerance) describe multi-DOF joints by
  component; on a single-DOF joint the component of its motion (ROTATION for a revolute or
  continuous joint, TRANSLATION for a prismatic one) is that joint's tolerance, applied after the
  plain entries. Any other component on it is refused.
"""
import math
from dataclasses import dataclass

import numpy as np

QUANTITIES = ("position", "velocity", "acceleration")
ERASE = -1.0                          # a goal's value that removes a check
TRANSLATION, ROTATION = 4, 5          # control_msgs/JointComponentTolerance components
COMPONENT_NAMES = {1: "X_AXIS", 2: "Y_AXIS", 3: "Z_AXIS", TRANSLATION: "TRANSLATION", ROTATION: "ROTATION"}

# outcomes of judge()
RUNNING, SUCCEEDED, PATH_VIOLATED, GOAL_VIOLATED = "running", "succeeded", "path violated", "goal violated"


class UnknownJoint(ValueError):
    """A tolerance names a joint that is not controlled."""


@dataclass
class Tolerances:
    """path, goal: (3, n) tolerances of the n controlled joints (rows: QUANTITIES; 0: unchecked);
    goal_time: how long after the last point the goal tolerance may still be reached [s] (inf: any)."""
    path: np.ndarray
    goal: np.ndarray
    goal_time: float


def resolve(default, value, what):
    """The tolerance a goal's `value` gives over `default` (what: its name, for the refusal)."""
    if not math.isfinite(value) or (value < 0.0 and value != ERASE):
        raise ValueError(f"{what}: {value!r} is not a tolerance (> 0, 0 for the default, -1 for none)")
    if value > 0.0:
        return value
    return 0.0 if value == ERASE else default


def goal_tolerances(joint_names, defaults, path=(), goal=(), goal_time=0.0, component_path=(),
                    component_goal=(), motions=None):
    """The Tolerances of a goal for the controlled `joint_names` (n).

    defaults: Tolerances of the controller. path, goal: (joint name, position, velocity,
    acceleration) entries; component_path, component_goal: (joint name, component, position,
    velocity, acceleration); goal_time [s] (0: the default, -1: no limit). motions: per joint
    "rotation" or "translation" (for the component tolerances). An entry for a joint that is not
    controlled raises UnknownJoint, a bad value or component a ValueError."""
    names = list(joint_names)
    resolved = Tolerances(defaults.path.copy(), defaults.goal.copy(), defaults.goal_time)

    def apply(table, kind, name, values):
        if name not in names:
            raise UnknownJoint(f"{kind} tolerance for {name!r}, which is not a controlled joint "
                               f"(controlled: {names})")
        j = names.index(name)
        for row, value in enumerate(values):
            table[row, j] = resolve(table[row, j], float(value), f"{kind} tolerance of {name} {QUANTITIES[row]}")

    def component(name, component):
        if name in names and motions is not None:
            wanted = ROTATION if motions[names.index(name)] == "rotation" else TRANSLATION
            if component != wanted:
                raise ValueError(f"component tolerance {COMPONENT_NAMES.get(component, component)} of {name}: "
                                 f"a {motions[names.index(name)]} joint has only the component "
                                 f"{COMPONENT_NAMES[wanted]}")

    for table, kind, entries, components in ((resolved.path, "path", path, component_path),
                                            (resolved.goal, "goal", goal, component_goal)):
        for name, *values in entries:
            apply(table, kind, name, values)
        for name, which, *values in components:
            component(name, which)
            apply(table, kind, name, values)
    limit = resolve(defaults.goal_time, float(goal_time), "goal_time_tolerance")
    resolved.goal_time = limit if limit > 0.0 else math.inf
    return resolved


def violations(error, tolerance):
    """(3, n) mask of the errors (3, n) beyond their tolerance (3, n)."""
    return (tolerance > 0.0) & (np.abs(error) > tolerance)


def judge(t, end, error, tolerances, names):
    """(outcome, reason) at time t [s] of a trajectory whose last point is at `end` [s], with the
    errors (3, n) desired - actual of the controlled joints `names` at t; see the module docstring."""
    if t < end:
        bad = violations(error, tolerances.path)
        if bad.any():
            return PATH_VIOLATED, _describe("path", bad, error, tolerances.path, names)
        return RUNNING, ""
    bad = violations(error, tolerances.goal)
    if not bad.any():
        return SUCCEEDED, ""
    if t - end > tolerances.goal_time:
        return GOAL_VIOLATED, (f"not within the goal tolerance {t - end:.3f} s after the last point "
                               f"(goal_time_tolerance {tolerances.goal_time:g} s): "
                               + _describe("goal", bad, error, tolerances.goal, names))
    return RUNNING, ""


def _describe(kind, bad, error, tolerance, names):
    """'arm7_joint2 position error 0.12 beyond the path tolerance 0.1, ...'"""
    return ", ".join(f"{names[j]} {QUANTITIES[row]} error {error[row, j]:.4g} beyond the {kind} tolerance "
                     f"{tolerance[row, j]:.4g}" for row, j in zip(*np.nonzero(bad)))
