"""Trajectories as MoveIt sends them, through the closed loop over DDS (controller and simulator in
their own processes, an rclpy ActionClient and publisher here), one bringup for a sequence:
MoveIt's time parametrization puts the state it planned from (the robot's current state, from
/joint_states) first, at time_from_start 0, then tens of points with positions, velocities and
accelerations. Here the points sample a minimum-jerk motion (its closed form is the plan the
oracles compare with), 30 points after the start state, 0.08 s apart.
1. such a goal on ~/follow_joint_trajectory succeeds: the simulated arm stays within the goal's
   path tolerance (the default, 0.1 rad) of the plan and ends within its goal tolerance (0.01 rad,
   0.01 rad/s) of the last point; from the second point on the controller's reference is the plan;
2. a goal whose start state is 0.3 rad from where arm7_joint2 is (beyond its path tolerance, 0.1
   rad) is aborted at once with INVALID_GOAL, the reason naming the joint and the distance, and the
   arm does not move;
3. a goal whose start state is 0.03 rad from where arm7_joint4 is (within the path tolerance)
   succeeds, and the reference does not jump there: it runs from where it was into the plan by the
   second point;
4. the same shape on ~/joint_trajectory is followed to its last point (the arm within 0.01 rad of
   it) and not refused;
5. on ~/joint_trajectory a start state 0.3 rad from where arm7_joint2 is is refused as well
   (beyond trajectory.START_TOLERANCE).
The simulator's joint states are the oracle for where the arm is. A goal whose outcome is not the
expected one is excused (skipped, with the reason) only where the recorded DDS source timestamps of
the joint states or the commands show a stall of the loop during it (a loaded machine)."""
import re
import threading
import time

import numpy as np
import pytest
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import dyn_control as dc
from dyn_control.control.trajectory import START_TOLERANCE
from dyn_control.nodes.bringup import bringup
from ros_harness import RecordingMonitor, write_parameter_file
from trajectory_goals import duration, stalls, wait

pytestmark = pytest.mark.ros

FollowJointTrajectory = pytest.importorskip(
    "control_msgs.action", reason="control_msgs not installed (make control-msgs builds it)").FollowJointTrajectory
from action_msgs.msg import GoalStatus  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402

ARM7 = dc.bundled_urdf("arm7")
JOINTS = list(dc.load_urdf(ARM7).joint_names)
Q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
MOVE = np.array([0.3, 0.25, -0.2, 0.3, 0.2, -0.25, 0.3])    # [rad] of each motion from where the arm is
DURATION = 2.4                  # [s] of each motion
STEPS = 30                      # points after the start state
FAR, NEAR = 0.3, 0.03           # [rad] start states off the arm, beyond and within the path tolerance
PATH_TOLERANCE, GOAL_TOLERANCE, GOAL_VELOCITY_TOLERANCE = 0.1, 0.01, 0.01     # the controller's defaults
Result = FollowJointTrajectory.Result


def plan(q0, q1, t):
    """Positions, velocities, accelerations (len(t), 7) at times t [s] of the minimum-jerk motion from
    rest at q0 to rest at q1 in DURATION: MoveIt's plan here."""
    s = np.clip(np.asarray(t, dtype=float) / DURATION, 0.0, 1.0)[:, None]
    d = (q1 - q0)[None, :]
    return (q0 + d * (10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5),
            d * (30 * s ** 2 - 60 * s ** 3 + 30 * s ** 4) / DURATION,
            d * (60 * s - 180 * s ** 2 + 120 * s ** 3) / DURATION ** 2)


def moveit_trajectory(start, q0, q1):
    """A JointTrajectory as MoveIt sends it: the start state `start` at rest at time 0, then STEPS
    points of the plan from q0 (MoveIt's: the start state) to q1."""
    msg = JointTrajectory(joint_names=JOINTS)
    msg.points.append(JointTrajectoryPoint(positions=start.tolist(), velocities=[0.0] * 7,
                                           accelerations=[0.0] * 7, time_from_start=duration(0.0)))
    times = np.linspace(0.0, DURATION, STEPS + 1)[1:]
    for t, q, v, a in zip(times, *plan(q0, q1, times)):
        msg.points.append(JointTrajectoryPoint(positions=q.tolist(), velocities=v.tolist(), accelerations=a.tolist(),
                                               time_from_start=duration(t)))
    return msg


def offset(joint, distance):
    out = np.zeros(7)
    out[JOINTS.index(joint)] = distance
    return out


class Scenario(RecordingMonitor):
    """Records the loop, and once it runs sends the trajectories of the module docstring from a
    thread of its own. `sent` holds each one's start state, plan end points, and for goals the
    result (status, code, reason, feedback); `at` the arm's position before each."""

    def start(self, node):
        super().start(node)
        self.client = ActionClient(node, FollowJointTrajectory, "/dyn_controller/follow_joint_trajectory")
        self.topic = node.create_publisher(JointTrajectory, "/dyn_controller/joint_trajectory", 10)
        self.sent, self.error, self.thread, self.done = {}, None, None, False

    def status(self, phase, elapsed):
        super().status(phase, elapsed)
        if phase == "run" and self.thread is None and self.recorder.count("desired"):
            self.thread = threading.Thread(target=self._run, daemon=True)
            self.thread.start()

    def _run(self):
        try:
            self.scenario()
        except Exception as error:  # noqa: BLE001 - reported by the test
            self.error = error
        self.done = True

    def current(self):
        """Where the arm is: the newest joint state recorded (what MoveIt plans from), in JOINTS' order."""
        q = self.recorder.values("joint_states", 0)[-1]
        return q[[self.recorder.names["joint_states"].index(name) for name in JOINTS]]

    def trajectory(self, key, start_offset=0.0, only_the_start=False):
        """MoveIt's trajectory from where the arm is (`q0`) moved by `start_offset` (`start`) to
        `q1`, MOVE away; only_the_start: the plan runs from q0, only the start state is elsewhere
        (harmless if the start state were not judged). `plan_from` is where the plan starts."""
        q0 = self.current()
        start = q0 + start_offset
        self.sent[key] = entry = {"q0": q0, "start": start, "plan_from": q0 if only_the_start else start,
                                  "q1": q0 + MOVE * (1 if q0[0] < Q0[0] + 0.1 else -1), "sent": time.time_ns()}
        return entry, moveit_trajectory(start, entry["plan_from"], entry["q1"])

    def goal(self, key, start_offset=0.0, timeout=DURATION + 5.0):
        entry, trajectory = self.trajectory(key, start_offset)
        feedback = []
        goal = FollowJointTrajectory.Goal(trajectory=trajectory)
        handle = wait(self.client.send_goal_async(goal, feedback_callback=lambda m: feedback.append(m.feedback)))
        assert handle.accepted, f"goal {key} not accepted"
        response = wait(handle.get_result_async(), timeout)
        entry.update(status=response.status, code=response.result.error_code, reason=response.result.error_string,
                     feedback=feedback, ended=time.time_ns())
        time.sleep(0.6)          # the feedback of the last check arrives; the arm settles for the next plan

    def publish(self, key, start_offset=0.0, only_the_start=False, wait_for=DURATION + 1.5):
        entry, trajectory = self.trajectory(key, start_offset, only_the_start)
        self.topic.publish(trajectory)
        time.sleep(wait_for)
        entry["ended"] = time.time_ns()

    def scenario(self):
        assert self.client.wait_for_server(timeout_sec=10.0), "no ~/follow_joint_trajectory server"
        time.sleep(0.5)
        self.goal("moveit")
        self.goal("far start", offset("arm7_joint2", FAR), timeout=5.0)
        self.goal("near start", offset("arm7_joint4", NEAR))
        self.publish("topic")
        self.publish("topic far start", offset("arm7_joint2", FAR), only_the_start=True, wait_for=1.5)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    controller = {"urdf_path": ARM7, "gains.kp": 400.0, "gains.kd": 40.0, "reference.type": "hold",
                  "state_publish_period": 5, "watchdog_timeout": 0.2}
    simulator = {"urdf_path": ARM7, "initial_positions": Q0.tolist()}
    monitor = Scenario()
    params = write_parameter_file(tmp_path_factory.mktemp("moveit") / "params.yaml",
                                  {"dyn_controller": controller, "dyn_simulator": simulator})
    assert bringup(params, 22.0, monitor) == 0
    assert monitor.error is None, f"scenario failed: {monitor.error!r}"
    assert monitor.done, "the scenario did not finish within the run"
    return monitor


def columns(recorder, key):
    """Columns of a JointState topic's values in JOINTS' order."""
    return [recorder.names[key].index(name) for name in JOINTS]


def states_at(recorder, stamps):
    """The simulator's joint positions and velocities (rows, JOINTS' order) at the joint-state stamps
    `stamps` [ns]."""
    t = recorder.stamps("joint_states")
    order = np.argsort(t)
    found = np.searchsorted(t[order], stamps)
    assert np.all(t[order][found] == stamps), "a feedback stamp is not a joint state's"
    c = columns(recorder, "joint_states")
    return (recorder.values("joint_states", k)[order][found][:, c] for k in (0, 1))


def window(recorder, key, start, end):
    """A JointState topic's positions (JOINTS' order) and stamps published from start to end [ns,
    DDS source time]."""
    sent = recorder.source_times(key)
    inside = (sent >= start) & (sent <= end)
    return recorder.values(key, 0)[inside][:, columns(recorder, key)], recorder.stamps(key)[inside]


def ns(time):
    return time.sec * 1_000_000_000 + time.nanosec


def expect(run, key, status, code):
    """Goal `key`'s entry, asserted to have ended with status and code (skipped, saying why, where
    the loop stalled during it)."""
    r = run.sent[key]
    if (r["status"], r["code"]) != (status, code) and stalls(run, r["sent"], r["ended"]):
        pytest.skip(f"goal {key!r} ended with status {r['status']}, code {r['code']} ({r['reason']}) after "
                    f"stalls of the loop of up to {max(stalls(run, r['sent'], r['ended'])):.3f} s: not judged")
    assert (r["status"], r["code"]) == (status, code), r["reason"]
    return r


def followed(run, key):
    """For goal `key`: the largest distance of the simulated arm from the plan over the feedback, the
    largest distance of the controller's reference from the plan from the second point on, and the
    arm's position and velocity at the last feedback."""
    r = run.sent[key]
    feedback = r["feedback"]
    assert len(feedback) > 50, f"{len(feedback)} feedback messages over {DURATION} s"
    assert list(feedback[0].joint_names) == JOINTS
    elapsed = np.array([ns(f.desired.time_from_start) * 1e-9 for f in feedback])
    q, v = states_at(run.recorder, [ns(f.header.stamp) for f in feedback])
    planned = plan(r["plan_from"], r["q1"], elapsed)[0]
    later = elapsed >= DURATION / STEPS
    desired = np.array([f.desired.positions for f in feedback])
    print(f"{key}: arm from the plan up to {np.abs(q - planned).max():.2e} rad, the reference from it up to "
          f"{np.abs(desired - planned)[~later].max():.2e} rad in the first segment, "
          f"{np.abs(desired - planned)[later].max():.2e} rad after it")
    return np.abs(q - planned).max(), np.abs(desired - planned)[later].max(), q[-1], v[-1]


def test_a_moveit_goal_succeeds_within_its_tolerances(run):
    expect(run, "moveit", GoalStatus.STATUS_SUCCEEDED, Result.SUCCESSFUL)
    arm_off_plan, reference_off_plan, q, v = followed(run, "moveit")
    assert arm_off_plan < PATH_TOLERANCE
    np.testing.assert_array_less(np.abs(q - run.sent["moveit"]["q1"]), GOAL_TOLERANCE)
    np.testing.assert_array_less(np.abs(v), GOAL_VELOCITY_TOLERANCE)
    assert reference_off_plan < 1e-6, "the reference is not MoveIt's plan after the start state"


def named_distance(reason, source):
    """(distance, measured position, tolerance) a refusal of a start state reports for arm7_joint2,
    the only joint it names."""
    match = re.fullmatch(re.escape(source) + r"the start state \(point 0, time_from_start 0\) is not where the "
                         r"robot is: arm7_joint2 (\S+) from its measured position (\S+) \(start tolerance (\S+)\)",
                         reason)
    assert match, reason
    return tuple(float(x) for x in match.groups())


def test_a_start_state_away_from_the_arm_is_refused_naming_the_joint_and_the_distance(run):
    r = expect(run, "far start", GoalStatus.STATUS_ABORTED, Result.INVALID_GOAL)
    distance, measured, tolerance = named_distance(r["reason"], "")
    j = JOINTS.index("arm7_joint2")
    print(f"far start: refused with {r['reason']!r}")
    assert abs(distance - FAR) < 1e-3 and abs(measured - r["q0"][j]) < 1e-3 and tolerance == PATH_TOLERANCE
    # the arm did not move: where it was when the goal was sent, until the next one
    q, _ = window(run.recorder, "joint_states", r["sent"], run.sent["near start"]["sent"])
    assert len(q) > 100, f"{len(q)} joint states in the window"
    print(f"far start: the arm moved up to {np.abs(q - r['q0']).max():.2e} rad meanwhile")
    np.testing.assert_array_less(np.abs(q - r["q0"]), 1e-3)


def test_a_start_state_near_the_arm_is_blended_into_the_plan_not_jumped_to(run):
    expect(run, "near start", GoalStatus.STATUS_SUCCEEDED, Result.SUCCESSFUL)
    r = run.sent["near start"]
    arm_off_plan, reference_off_plan, q, v = followed(run, "near start")
    assert arm_off_plan < PATH_TOLERANCE
    np.testing.assert_array_less(np.abs(q - r["q1"]), GOAL_TOLERANCE)
    assert reference_off_plan < 1e-6, "the reference has not joined the plan at its second point"
    # no jump toward the start state: ~/desired steps (5 ms apart) far below the 0.03 rad it is off
    desired, stamps = window(run.recorder, "desired", r["sent"], r["ended"])
    close = np.diff(stamps) <= 10_000_000
    assert close.sum() > 200, f"{close.sum()} consecutive ~/desired messages"
    step = np.abs(np.diff(desired, axis=0))[close].max()
    print(f"near start: largest step of the reference {step:.2e} rad")
    assert step < NEAR / 3


def test_a_moveit_trajectory_on_the_topic_is_followed(run):
    r = run.sent["topic"]
    desired, _ = window(run.recorder, "desired", r["sent"], r["ended"])
    q, _ = window(run.recorder, "joint_states", r["sent"], r["ended"])
    np.testing.assert_allclose(desired[-1], r["q1"], atol=1e-12)
    print(f"topic: the arm {np.abs(q[-1] - r['q1']).max():.2e} rad from the last point at the end")
    np.testing.assert_array_less(np.abs(q[-1] - r["q1"]), GOAL_TOLERANCE)
    moved = np.abs(q - r["q0"]).max(axis=0)
    np.testing.assert_array_less(0.9 * np.abs(MOVE), moved)     # accepted: it moved all the way, each joint


def test_a_start_state_away_from_the_arm_on_the_topic_is_refused(run):
    loop = run.recorder.diagnostics["dyn_controller: control loop"]
    assert int(loop["rejected trajectories"]) == 2, loop       # the far-start goal's and this one
    distance, measured, tolerance = named_distance(loop["last rejected reference or trajectory"],
                                                   "~/joint_trajectory: ")
    r = run.sent["topic far start"]
    assert abs(distance - FAR) < 1e-3 and abs(measured - r["q0"][JOINTS.index("arm7_joint2")]) < 1e-3
    assert tolerance == START_TOLERANCE
