"""Nothing compiles after activate (DESIGN.md, the real-time loop): the controller and the simulator
run on the bundled arm in processes of their own, and this process drives, once they are active,
every input and mode the controller offers (~/reference, ~/joint_trajectory and the
follow_joint_trajectory action with a cancel, ~/target_pose in the root frame and in a link's, in
joint and in Cartesian mode, ~/target_wrench, the sine, fourier and hold references, collision
detection with each reaction and ~/reset_collision, live parameters, safe mode on stale joint states,
the braking of a deactivate, parameters read on activate and on configure, the adaptation, gravity
compensated by the robot) and the simulator's (a payload, an external wrench, both command-timeout
actions, noise). The oracle is Numba's own compile events, counted by each node from activate to
deactivate ("compiles after activate" in /diagnostics, lifecycle.CompileWatch).

A compile shows only where the kernel cache lacks the function: a cache that earlier runs filled
would load a function compiled late by them, silently. So each node runs on a kernel cache of the
test's own, holding what its loader in preload.py (`dyn-control compile controller`, `... simulator`)
compiled and nothing else: what its loop calls beyond that compiles in the node, and is counted.
"""
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import rclpy
from numba import njit
import ros_harness  # noqa: F401  (own DDS domain)
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, WrenchStamped
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState
from rcl_interfaces.srv import SetParameters
from rclpy.action import ActionClient
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import dyn_control as dc
from dyn_control.nodes import bringup, discovery, qos
from dyn_control.nodes.lifecycle import CompileWatch
from dyn_control.nodes.spinner import Spinner
from dyn_control.task_space import rotation_to_quaternion
from ros_harness import write_parameter_file

FollowJointTrajectory = pytest.importorskip(
    "control_msgs.action", reason="the follow_joint_trajectory action needs control_msgs (make control-msgs)"
).FollowJointTrajectory

pytestmark = pytest.mark.ros

URDF = dc.bundled_urdf("arm7")
JOINTS = [f"arm7_joint{k}" for k in range(1, 8)]
Q0 = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
TOOL = "arm7_tool"
COMPILE_TIMEOUT = 1800.0     # [s] for a loader into an empty cache (a minute or two of CPU each)
TIMEOUT = 15.0               # [s] for anything the nodes do
WATCH = "compiles after activate"
CONTROL_LOOP, SIMULATION = "dyn_controller: control loop", "dyn_simulator: simulation"
# each node's status on /diagnostics, its process name and preload.py loader
NODES = {"dyn_controller": (CONTROL_LOOP, "controller"), "dyn_simulator": (SIMULATION, "simulator")}

CONTROLLER = {"urdf_path": URDF, "reference.type": "sine", "reference.amplitude": [0.1], "reference.frequency": 0.5,
              "estimator.frame": TOOL, "state_publish_period": 5, "gradient.period": 10, "gradient.window": 20,
              "adaptation.enabled": True}
SIMULATOR = {"urdf_path": URDF, "initial_positions": Q0, "payload.link": "arm7_link7", "payload.mass": 0.5,
             "payload.center_of_mass": [0.0, 0.0, 0.05], "payload.inertia": [1e-3, 1e-3, 1e-3, 0.0, 0.0, 0.0]}


def wait_for(condition, what, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {timeout:g} s"
        time.sleep(0.02)


def kernel_caches(tmp_path):
    """{node name: a kernel cache of its own, filled by its loader alone}, compiled side by side."""
    caches = {name: tmp_path / f"{loader}_kernels" for name, (_, loader) in NODES.items()}
    compiles = [subprocess.Popen([sys.executable, "-m", "dyn_control.nodes.cli", "compile", "--jobs", "1", loader],
                                 env=dict(os.environ, NUMBA_CACHE_DIR=str(caches[name])), stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True) for name, (_, loader) in NODES.items()]
    for process in compiles:
        output = process.communicate(timeout=COMPILE_TIMEOUT)[0]
        assert process.returncode == 0, output
    return caches


def point(t, positions, velocities=None, accelerations=None):
    p = JointTrajectoryPoint(positions=list(positions), velocities=list(velocities or []),
                             accelerations=list(accelerations or []))
    p.time_from_start.sec, p.time_from_start.nanosec = divmod(round(t * 1e9), 1_000_000_000)
    return p


def trajectory(offset, accelerations=False):
    """To Q0 + offset in 0.5 s, back to Q0 at 1 s (with velocities; and accelerations)."""
    zero = [0.0] * len(JOINTS)
    return JointTrajectory(joint_names=JOINTS, points=[
        point(0.5, np.add(Q0, offset), zero, zero if accelerations else None),
        point(1.0, Q0, zero, zero if accelerations else None)])


class Driver:
    """This process's node, spun on a thread of its own: the node processes' lifecycles (cli's own
    requests), their parameters, the controller's inputs, the simulator's external wrench, and the
    latest /diagnostics of each node."""

    def __init__(self, children):
        self.children = children
        with discovery.announcing_often():       # the nodes find this participant at once, as the bringup's
            self.context = rclpy.Context()
            rclpy.init(args=[], context=self.context)
            self.node = rclpy.create_node("no_compile_driver", context=self.context)
        node = self.node
        self.status, self.messages, self.received = {}, {}, {}
        node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 100)
        self.collisions = []
        node.create_subscription(DiagnosticArray, "/dyn_controller/collision", self._on_collision, 100)
        self.publishers = {topic: node.create_publisher(kind, topic, qos.STATE) for topic, kind in (
            ("/dyn_controller/reference", JointTrajectoryPoint), ("/dyn_controller/joint_trajectory", JointTrajectory),
            ("/dyn_controller/target_pose", PoseStamped), ("/dyn_controller/target_wrench", WrenchStamped),
            ("/dyn_simulator/external_wrench", WrenchStamped))}
        self.parameters = {name: node.create_client(SetParameters, f"/{name}/set_parameters") for name in NODES}
        self.reset_collision = node.create_client(Trigger, "/dyn_controller/reset_collision")
        self.action = ActionClient(node, FollowJointTrajectory, "/dyn_controller/follow_joint_trajectory")
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(node)
        self.spinner = Spinner(self.executor, "driver executor")
        for child in children.values():
            child.connect(node)

    def close(self):
        self.spinner.stop()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)

    def _on_diagnostics(self, array):
        for status in array.status:
            self.status[status.name] = {kv.key: kv.value for kv in status.values}
            self.messages[status.name] = status.message
            self.received[status.name] = time.monotonic()

    def _on_collision(self, array):
        self.collisions += [{kv.key: kv.value for kv in status.values} for status in array.status]

    def fresh(self, name):
        """The next /diagnostics status `name` after now (the nodes publish at 1 Hz)."""
        since = time.monotonic()
        wait_for(lambda: self.received.get(name, since) > since, f"/diagnostics from {name}")
        return self.status[name]

    def answer(self, future, what):
        wait_for(future.done, f"answer to {what}")
        return future.result()

    def transition(self, names, step):
        children = [self.children[name] for name in names]
        if step in bringup.TRANSITION_STATES:
            assert bringup.transition(children, step, list(self.children.values())), f"{step} of {names} failed"
            return
        request = ChangeState.Request()
        request.transition.id = getattr(Transition, f"TRANSITION_{step.upper()}")
        for child in children:
            assert self.answer(child.client.call_async(request), f"{step} of {child.name}").success

    def set(self, name, values):
        """Set the parameters `values` ({name: value}) of node `name`, every one accepted."""
        parameters = [Parameter(key, value=value).to_parameter_msg() for key, value in values.items()]
        results = self.answer(self.parameters[name].call_async(SetParameters.Request(parameters=parameters)),
                              f"setting {list(values)} on {name}").results
        refused = [(key, r.reason) for key, r in zip(values, results) if not r.successful]
        assert not refused, refused

    def publish(self, topic, message):
        self.publishers[topic].publish(message)

    def running(self, what):
        """Wait until the controller's status says it runs on fresh joint states (`what`: the phase)."""
        def runs():
            self.fresh(CONTROL_LOOP)
            return self.messages[CONTROL_LOOP] == "running"
        wait_for(runs, f"running controller ({what})")

    def collided(self, count, reaction):
        """Wait for the collision event number `count`, then for its reaction to be under way."""
        wait_for(lambda: sum(e.get("level") == "collision" for e in self.collisions) >= count,
                 f"collision {count} ({reaction})")
        time.sleep(0.4)         # reflex: 0.3 s

    def reset(self):
        return self.answer(self.reset_collision.call_async(Trigger.Request()), "~/reset_collision")

    def follow(self, cancel=False, start=None):
        """A follow_joint_trajectory goal (from the start state `start`: a first point at time 0),
        canceled at once or followed to its end; its result."""
        assert self.action.wait_for_server(timeout_sec=TIMEOUT), "no follow_joint_trajectory server"
        goal = FollowJointTrajectory.Goal(trajectory=trajectory([0.05] * len(JOINTS)))
        if start is not None:
            goal.trajectory.points.insert(0, point(0.0, start, [0.0] * len(JOINTS)))
        handle = self.answer(self.action.send_goal_async(goal), "a goal")
        assert handle.accepted
        if cancel:
            self.answer(handle.cancel_goal_async(), "a cancel")
        return self.answer(handle.get_result_async(), "a goal's result").result

    def no_compiles(self, after):
        """Each node's count of compiles after activate is still zero, `after` the step named."""
        for name, (status, _) in NODES.items():
            values = self.fresh(status)
            assert values.get(WATCH) == "0", (f"{name} compiled {values.get(WATCH)} functions after activate "
                                              f"({after}), the last {values.get('last compile after activate')}")


def tool_pose():
    """(position, quaternion x y z w) of the tool at Q0, in the root frame."""
    model = dc.load_urdf(URDF)
    pose = dc.frame_pose(model, model.create_data(), np.array(Q0), TOOL)
    return pose[:3, 3], rotation_to_quaternion(pose[:3, :3])


def pose(frame, position, quaternion):
    message = PoseStamped()
    message.header.frame_id = frame
    message.pose.position.x, message.pose.position.y, message.pose.position.z = (float(x) for x in position)
    o = message.pose.orientation
    o.x, o.y, o.z, o.w = (float(x) for x in quaternion)
    return message


def wrench(frame, force, torque=(0.0, 0.0, 0.0)):
    message = WrenchStamped()
    message.header.frame_id = frame
    w = message.wrench
    w.force.x, w.force.y, w.force.z = force
    w.torque.x, w.torque.y, w.torque.z = torque
    return message


def test_nothing_compiles_in_the_running_nodes(tmp_path, monkeypatch):
    caches = kernel_caches(tmp_path)
    config = write_parameter_file(tmp_path / "params.yaml", {"dyn_controller": CONTROLLER, "dyn_simulator": SIMULATOR})
    children = {}
    for name in NODES:
        monkeypatch.setenv("NUMBA_CACHE_DIR", str(caches[name]))
        children[name] = bringup._NodeProcess("/", name, config)
    driver = Driver(children)
    root = dc.load_urdf(URDF).root_name
    position, quaternion = tool_pose()
    every_residual_collides = {"collision.enabled": True, "collision.lower_threshold": [0.0],
                               "collision.upper_threshold": [1e-9]}     # one at a time: the lower one first
    no_detection = {"collision.enabled": False, "collision.upper_threshold": [20.0],
                    "collision.lower_threshold": [10.0]}       # one at a time: the upper one first
    try:
        both = list(NODES)
        driver.transition(both, "configure")
        time.sleep(bringup._discovery_settle(list(children.values())))
        driver.transition(["dyn_controller"], "activate")
        driver.transition(["dyn_simulator"], "activate")

        # 1. joint mode, the sine: every input, the action, the collision reactions, safe mode, braking
        driver.running("the sine")
        driver.publish("/dyn_controller/reference", point(0.0, Q0))
        time.sleep(0.3)
        driver.publish("/dyn_controller/joint_trajectory", trajectory([0.05] * 7))
        time.sleep(0.2)
        driver.publish("/dyn_controller/joint_trajectory", trajectory([-0.05] * 7, accelerations=True))  # then()
        time.sleep(1.2)
        followed = driver.follow()
        assert followed.error_code in (FollowJointTrajectory.Result.SUCCESSFUL,
                                       FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED,
                                       FollowJointTrajectory.Result.GOAL_TOLERANCE_VIOLATED), followed.error_string
        assert driver.follow(cancel=True).error_string == "canceled"
        driver.publish("/dyn_controller/target_pose", pose(root, position, quaternion))
        driver.publish("/dyn_controller/target_pose", pose(TOOL, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
        driver.publish("/dyn_controller/target_wrench", wrench(root, (0.0, 0.0, 1.0)))
        driver.publish("/dyn_simulator/external_wrench", wrench("arm7_link5", (0.0, 5.0, 0.0)))
        time.sleep(0.5)
        driver.publish("/dyn_simulator/external_wrench", wrench("arm7_link5", (0.0, 0.0, 0.0)))
        driver.set("dyn_controller", {"gains.kp": [300.0], "estimator.compensation": True,
                                      "torque_rate_limit": [800.0]})
        time.sleep(0.5)
        status = driver.fresh(CONTROL_LOOP)
        for counter in ("rejected targets", "rejected references", "rejected trajectories"):
            assert status[counter] == "0", status
        assert int(status["adaptation steps"]) > 0, status
        driver.follow(start=np.add(Q0, 1.0))                         # a start state away from the arm
        driver.set("dyn_controller", {"estimator.compensation": False, "collision.reaction": "stop",
                                      **every_residual_collides})
        driver.collided(1, "stop")
        for count, reaction in enumerate(("float", "reflex", "report"), start=2):
            driver.set("dyn_controller", {"collision.reaction": reaction})
            assert driver.reset().success            # the next residual collides at once
            driver.collided(count, reaction)
        driver.set("dyn_controller", no_detection)
        for safe_mode, final in (("gravity", "silent"), ("zero", "zero")):
            driver.set("dyn_controller", {"safe_mode": safe_mode, "safe_mode_final": final})
            driver.transition(["dyn_simulator"], "deactivate")         # the joint states stop
            time.sleep(0.5)
            driver.transition(["dyn_simulator"], "activate")
            driver.running(f"after safe mode {safe_mode}, {final}")
        driver.transition(["dyn_controller"], "deactivate")           # braking, then the hold torque
        driver.no_compiles("joint mode, the sine: every input, the action, collisions, safe mode, braking")

        # 2. parameters read on activate: Cartesian impedance, the fourier reference
        driver.set("dyn_controller", {
            "control.mode": "cartesian_impedance", "reference.type": "fourier",
            "reference.fourier.joints": ["arm7_joint1", "arm7_joint2"], "reference.fourier.q0": [0.0, -0.785],
            "reference.fourier.a": [0.05, 0.01, 0.02, 0.0], "reference.fourier.b": [0.0, 0.01, 0.0, 0.02],
            "reference.fourier.harmonics": 2, "reference.fourier.frequency": 0.2,
            "cartesian.nullspace.posture": Q0, "state_publish_period": 7, "gradient.period": 15})
        driver.transition(["dyn_controller"], "activate")
        driver.running("Cartesian impedance")
        driver.publish("/dyn_controller/target_pose", pose(root, position, quaternion))
        time.sleep(0.3)
        driver.publish("/dyn_controller/target_pose", pose(TOOL, (0.0, 0.0, 0.01), (0.0, 0.0, 0.0, 1.0)))
        driver.publish("/dyn_controller/target_wrench", wrench(root, (0.0, 0.0, -1.0)))
        driver.publish("/dyn_controller/joint_trajectory", trajectory([0.02] * 7))
        time.sleep(0.5)
        assert driver.fresh(CONTROL_LOOP)["rejected targets"] == "0"
        driver.set("dyn_controller", {"collision.reaction": "stop", **every_residual_collides})
        driver.collided(5, "stop, Cartesian")
        driver.set("dyn_controller", no_detection)
        assert driver.reset().success
        driver.transition(["dyn_controller"], "deactivate")
        driver.no_compiles("Cartesian impedance, the fourier reference")

        # 3. the hold reference at a given position; the simulator's commands time out (brake, zero)
        driver.set("dyn_controller", {"control.mode": "joint", "reference.type": "hold", "reference.position": Q0})
        driver.transition(["dyn_controller"], "activate")
        driver.running("hold")
        driver.publish("/dyn_controller/joint_trajectory", trajectory([0.03] * 7))
        time.sleep(1.2)
        driver.transition(["dyn_controller"], "deactivate")
        time.sleep(0.3)                                               # brakes engaged
        driver.set("dyn_simulator", {"command_timeout_action": "zero"})
        time.sleep(0.3)                                               # zero effort
        driver.no_compiles("hold, the simulator's command timeouts")

        # 4. parameters read on configure: gravity compensated by the robot, no adaptation, noise
        driver.transition(["dyn_simulator"], "deactivate")
        driver.transition(both, "cleanup")
        driver.set("dyn_controller", {"gravity_compensation": "robot", "adaptation.enabled": False,
                                      "gradient.twist": False})
        driver.set("dyn_simulator", {"gravity_compensation": "robot", "noise.position": 1e-5,
                                     "noise.velocity": 1e-4, "noise.effort": 1e-3})
        driver.transition(both, "configure")
        driver.transition(["dyn_controller"], "activate")
        driver.transition(["dyn_simulator"], "activate")
        driver.running("gravity compensated by the robot")
        driver.publish("/dyn_controller/reference", point(0.0, np.add(Q0, 0.05)))
        time.sleep(1.0)
        driver.transition(both, "deactivate")
        driver.no_compiles("gravity compensated by the robot, noise")
    finally:
        driver.close()
        for child in children.values():
            child.end()


def test_the_watch_counts_and_names_each_compile_while_started():
    warnings = []
    watch = CompileWatch(warnings.append)

    @njit
    def late(x):
        return x * 2

    late(1.0)                       # before start: not counted
    watch.start()
    late(1)                         # a new signature: a compile
    late(2)                         # the same signature: none
    watch.stop()
    late(True)                      # after stop: not counted
    assert len(late.signatures) == 3
    assert watch.count == 1 and watch.latest.endswith("late")
    assert len(warnings) == 1 and "late(int64,)" in warnings[0] and "after activate" in warnings[0]
