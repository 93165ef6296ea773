"""~/follow_joint_trajectory: control_msgs/action/FollowJointTrajectory on the controller, served
as ros2_controllers' joint_trajectory_controller serves it (MoveIt's way to drive an arm).

- A goal's trajectory goes the way of ~/joint_trajectory (ControllerNode.set_trajectory: the same
  checks, limits and interpolation, from the reference it has now). A first point at
  time_from_start 0 is the start state (MoveIt's: the state it planned from), which must be where
  the arm is: within each joint's path position tolerance of the newest measured position
  (control.trajectory.START_TOLERANCE where the path position is unchecked).
  joint_trajectory_controller would make it the reference at once and abort at its first check
  (PATH_TOLERANCE_VIOLATED); here such a goal is refused before anything moves.
  A goal that cannot run is accepted and aborted at once with INVALID_JOINTS (joint names: unknown
  or not controlled, named twice, none; a tolerance for a joint not controlled; a multi-DOF
  trajectory, as this controller has no multi-DOF joints) or INVALID_GOAL (anything else: lengths,
  times, non-finite values, more than trajectory.max_points points, a bad tolerance, a start state
  away from the arm, the controller not active), with the reason in error_string; it is counted
  with the refused trajectories, and the motion going on goes on. (joint_trajectory_controller
  rejects such goals, which carries no error code: MoveIt logs the code and the reason of an abort.)
- Tolerances (control/tolerances.py): the goal's path, goal and component tolerances and
  goal_time_tolerance over the defaults action.*; judged at action.monitor_rate on the newest
  joint state against the trajectory at that state's stamp. Outcomes: SUCCESSFUL once within the
  goal tolerance from the last point's time on; PATH_TOLERANCE_VIOLATED, GOAL_TOLERANCE_VIOLATED.
  On a violation the controller holds the measured position of every joint (at rest).
- Feedback (desired, actual, error of the controlled joints, index of the point ahead) at
  action.monitor_rate. A cancel holds the measured position at once; the goal is canceled at the
  next check. A new valid goal aborts the active one (INVALID_GOAL, "preempted by a new goal", as
  joint_trajectory_controller does); a trajectory on ~/joint_trajectory or a ~/reference point
  replacing the goal's, the controller leaving the active state or entering safe mode, aborts it
  too (INVALID_GOAL, with the reason).
- The measured acceleration is the controller's acceleration estimate (low-pass
  gradient.cutoff_hz) on a tree; a closed chain has none per tree joint, and acceleration
  tolerances are not checked there.

Every callback here runs in the node's default (mutually exclusive) callback group; only the
coroutine that returns a goal's result runs outside it, and it only waits for that result.
Without control_msgs (a plain-Python install without `make control-msgs`) there is no action:
`create` logs one line and returns None.
"""
import functools
import math
import traceback

import numpy as np
from rclpy.action import ActionServer, CancelResponse
from rclpy.task import Future

from ..control import tolerances as tol
from ..control.trajectory import InvalidJoints, check_names, points_from_message
from . import params
from .params import Param

try:
    from control_msgs.action import FollowJointTrajectory
except ImportError:         # control_msgs not installed: no action (see create)
    FollowJointTrajectory = None

PARAMETERS = (
    Param("action.monitor_rate", 50.0, "number", "configure",
          "rate of the follow_joint_trajectory action's tolerance checks and feedback [Hz]", 1.0, 1000.0),
    Param("action.path_position_tolerance", 0.1, "number", "live",
          "default path position tolerance of the action's goals [rad or m] (0: not checked)", 0.0, 1e3),
    Param("action.goal_position_tolerance", 0.01, "number", "live",
          "default goal position tolerance of the action's goals [rad or m] (0: not checked)", 0.0, 1e3),
    Param("action.goal_velocity_tolerance", 0.01, "number", "live",
          "default goal velocity tolerance of the action's goals [rad/s or m/s] (0: not checked)", 0.0, 1e3),
    Param("action.goal_time_tolerance", 1.0, "number", "live",
          "default time after the last point within which a goal must be within its goal tolerance [s] "
          "(0: no limit)", 0.0, 1e6),
)


def create(node, names, controlled, motions, nv, max_points, acceleration_measured):
    """The action server of `node` (a ControllerNode being configured), or None without
    control_msgs; see FollowJointTrajectoryServer for the arguments."""
    if FollowJointTrajectory is None:
        node.get_logger().info("control_msgs is not installed: no ~/follow_joint_trajectory action "
                               "(on a plain-Python install: make control-msgs)")
        return None
    return FollowJointTrajectoryServer(node, names, controlled, motions, nv, max_points, acceleration_measured)


class _Goal:
    """An accepted goal: its handle, the future its result goes into, and once it runs the
    trajectory installed for it, its end [s] on the controller's reference clock, its points'
    times from the start and its tolerances."""

    def __init__(self, handle):
        self.handle = handle
        self.result = Future()
        self.trajectory = self.end = self.times = self.tolerances = None


class FollowJointTrajectoryServer:
    """The action server (see the module docstring) of the controlled joints `names`, coordinates
    `controlled` of the model's nv (their `motions`: "rotation" or "translation" each); goals of up to
    max_points points; acceleration_measured: the node's measured state has an acceleration
    estimate. The node provides set_trajectory(points), hold_position(), current_trajectory(),
    measured_state(), in_safe_mode(), refused(source, error) and `state`."""

    def __init__(self, node, names, controlled, motions, nv, max_points, acceleration_measured):
        self.node, self.names, self.controlled, self.motions = node, list(names), controlled, list(motions)
        self.max_points, self.acceleration_measured = max_points, acceleration_measured
        self.active = None
        self._desired = np.zeros((3, nv))       # the trajectory sampled at a state's stamp
        self._feedback = FollowJointTrajectory.Feedback(joint_names=self.names)
        self._server = ActionServer(node, FollowJointTrajectory, "~/follow_joint_trajectory",
                                    execute_callback=_never_called, handle_accepted_callback=self._accepted,
                                    cancel_callback=self._cancel, callback_group=node.default_callback_group)
        rate = params.read(node, PARAMETERS, ("configure",))["action.monitor_rate"]
        self._timer = node.create_timer(1.0 / rate, self._monitor, callback_group=node.default_callback_group)
        self._timer.cancel()

    def destroy(self):
        if self.active is not None:
            self._finish(self.active, "abort", FollowJointTrajectory.Result.INVALID_GOAL,
                         "the controller was cleaned up or shut down")
        self.node.destroy_timer(self._timer)
        self._server.destroy()

    # ---------------------------------------------------------------- goals
    def _accepted(self, handle):
        """A new goal: judge it, install its trajectory, preempt the active one."""
        goal = _Goal(handle)
        handle.execute(functools.partial(_wait_for, goal.result))
        Result = FollowJointTrajectory.Result
        try:
            goal.tolerances = self._tolerances(handle.request)
            points = points_from_message(handle.request.trajectory, self.max_points)
            previous = self.active
            goal.trajectory = self.node.set_trajectory(
                points, start_tolerance=goal.tolerances.path[0, check_names(points.names, self.names)])
        except ValueError as error:
            code = (Result.INVALID_JOINTS if isinstance(error, (InvalidJoints, tol.UnknownJoint))
                    else Result.INVALID_GOAL)
            self.node.refused("~/follow_joint_trajectory", error)
            self._finish(goal, "abort", code, str(error))
            return
        except Exception as error:  # noqa: BLE001 - a bug here must not end the node's executor
            self.node.get_logger().error(f"~/follow_joint_trajectory: goal failed: {traceback.format_exc()}")
            self._finish(goal, "abort", Result.INVALID_GOAL, f"internal error: {error!r}")
            return
        goal.end = goal.trajectory.end
        goal.times = points.times
        if previous is not None:
            self._finish(previous, "abort", Result.INVALID_GOAL, "preempted by a new goal")
        self.active = goal
        self._timer.reset()

    def _tolerances(self, request):
        """The goal's Tolerances; ValueError (UnknownJoint, InvalidJoints) for what cannot run."""
        multi_dof = request.multi_dof_trajectory
        if multi_dof.joint_names or multi_dof.points:
            raise InvalidJoints(f"multi-DOF joints {list(multi_dof.joint_names)}: this controller has none "
                                f"(controlled: {self.names})")
        n, values = len(self.names), params.read(self.node, PARAMETERS, ("live",))
        defaults = tol.Tolerances(
            np.array([[values["action.path_position_tolerance"]] * n, [0.0] * n, [0.0] * n]),
            np.array([[values["action.goal_position_tolerance"]] * n, [values["action.goal_velocity_tolerance"]] * n,
                      [0.0] * n]),
            values["action.goal_time_tolerance"] or math.inf)
        entry = lambda t: (t.name, t.position, t.velocity, t.acceleration)     # noqa: E731
        component = lambda t: (t.joint_name, t.component, t.position, t.velocity, t.acceleration)   # noqa: E731
        duration = request.goal_time_tolerance
        return tol.goal_tolerances(self.names, defaults, path=map(entry, request.path_tolerance),
                                   goal=map(entry, request.goal_tolerance),
                                   goal_time=duration.sec + 1e-9 * duration.nanosec,
                                   component_path=map(component, request.component_path_tolerance),
                                   component_goal=map(component, request.component_goal_tolerance),
                                   motions=self.motions)

    def _cancel(self, handle):
        """Cancel the active goal: hold where the joints are now (the goal ends at the next check)."""
        if self.active is None or self.active.handle != handle:
            return CancelResponse.REJECT
        self.node.hold_position()
        return CancelResponse.ACCEPT

    # ---------------------------------------------------------------- monitoring
    def _monitor(self):
        """At action.monitor_rate while a goal is active: its end (a cancel, a replaced trajectory,
        the controller inactive or in safe mode), its tolerances, its feedback."""
        goal = self.active
        if goal is None:        # a check queued before the goal ended
            return
        try:
            self._check(goal)
        except Exception as error:  # noqa: BLE001 - a bug here must not end the node's executor
            self.node.get_logger().error(f"~/follow_joint_trajectory: monitoring failed: {traceback.format_exc()}")
            self._finish(goal, "abort", FollowJointTrajectory.Result.INVALID_GOAL, f"internal error: {error!r}")

    def _check(self, goal):
        Result = FollowJointTrajectory.Result
        if goal.handle.is_cancel_requested:
            self._finish(goal, "canceled", Result.SUCCESSFUL, "canceled")
            return
        if self.node.state != "active":
            self._finish(goal, "abort", Result.INVALID_GOAL, f"the controller is {self.node.state}")
            return
        if self.node.in_safe_mode():
            self._finish(goal, "abort", Result.INVALID_GOAL, "the controller is in safe mode (joint states stale)")
            return
        if self.node.current_trajectory() is not goal.trajectory:
            self._finish(goal, "abort", Result.INVALID_GOAL,
                         "replaced by a trajectory on ~/joint_trajectory or a ~/reference point")
            return
        state = self.node.measured_state()
        if state is None:
            return
        stamp_ns, t, actual = state
        desired = self._desired
        goal.trajectory.sample(t, desired[0], desired[1], desired[2])
        desired = desired[:, self.controlled]
        error = desired - actual
        if not self.acceleration_measured:
            error[2] = 0.0          # not measured: not checked
        self._publish_feedback(goal, stamp_ns, t, desired, actual, error)
        outcome, reason = tol.judge(t, goal.end, error, goal.tolerances, self.names)
        if outcome == tol.SUCCEEDED:
            self._finish(goal, "succeed", Result.SUCCESSFUL, "goal reached")
        elif outcome != tol.RUNNING:
            self.node.hold_position()
            code = Result.PATH_TOLERANCE_VIOLATED if outcome == tol.PATH_VIOLATED else Result.GOAL_TOLERANCE_VIOLATED
            self.node.get_logger().warning(f"~/follow_joint_trajectory aborted, holding: {reason}")
            self._finish(goal, "abort", code, reason)

    def _publish_feedback(self, goal, stamp_ns, t, desired, actual, error):
        f = self._feedback
        f.header.stamp.sec, f.header.stamp.nanosec = divmod(int(stamp_ns), 1_000_000_000)
        measured = 3 if self.acceleration_measured else 2
        # counted back from the last point, as judge() does: at t >= end the time is the last
        # point's or later (t - start in epoch seconds would carry their 0.2 us rounding)
        elapsed = max(goal.times[-1] + (t - goal.end), 0.0)
        since_start = divmod(round(elapsed * 1e9), 1_000_000_000)
        for point, values, rows in ((f.desired, desired, 3), (f.actual, actual, measured), (f.error, error, measured)):
            point.positions, point.velocities = values[0].tolist(), values[1].tolist()
            point.accelerations = values[2].tolist() if rows == 3 else []
            point.time_from_start.sec, point.time_from_start.nanosec = since_start
        f.index = int(min(np.searchsorted(goal.times, elapsed, side="right"), len(goal.times) - 1))
        goal.handle.publish_feedback(f)

    def _finish(self, goal, how, code, reason):
        """End `goal` (how: succeed | abort | canceled) with its result."""
        result = FollowJointTrajectory.Result(error_code=code, error_string=reason)
        if goal.handle.is_active:
            getattr(goal.handle, how)()
        goal.result.set_result(result)
        if goal is self.active:
            self.active = None
            self._timer.cancel()


async def _wait_for(result, handle):
    """A goal's execute coroutine: its result, once the server has set it."""
    return await result


def _never_called(handle):
    raise AssertionError("every goal is executed by its own coroutine (FollowJointTrajectoryServer._accepted)")
