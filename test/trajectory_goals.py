"""Helpers of the FollowJointTrajectory tests over DDS (test_ros_follow_joint_trajectory.py,
test_ros_moveit_goal.py): message durations, waiting on an rclpy future, and the stalls of the loop
that excuse a goal's outcome (the recorded DDS source timestamps)."""
import time

import numpy as np
from builtin_interfaces.msg import Duration

STALL = 0.05        # [s] a gap in the joint states or the commands this long is a stall


def duration(t):
    return Duration(sec=int(t), nanosec=int(round(t % 1 * 1e9)))


def wait(future, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not future.done():
        assert time.monotonic() < deadline, "no answer in time"
        time.sleep(0.005)
    return future.result()


def stalls(run, start, end):
    """The gaps over STALL [s] in the joint states or the commands (DDS source times) from start to
    end [ns] of `run` (a monitor with a dyn_control.nodes.recorder.Recorder as .recorder)."""
    found = []
    for times in (run.recorder.source_times("joint_states"), run.recorder.command_times()):
        times = np.sort(times[(times >= start) & (times <= end)])
        found += [float(g) * 1e-9 for g in np.diff(times) if g > STALL * 1e9]
    return found
