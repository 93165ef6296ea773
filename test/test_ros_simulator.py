"""The simulator node over DDS: it holds the robot until the first command, applies commands,
applies external wrenches from ~/external_wrench and reports them on ~/applied_wrench, rejects
malformed commands, and holds the last command for command_timeout, then zero effort (with
command_timeout_action zero; the brake and the other faults: test_ros_simulator_faults.py).

dyn_simulator (arm7, builtin, 1 kHz) runs in this process on its loop thread; a test node publishes
commands and wrenches and reads /joint_states and ~/applied_wrench. The motion under gravity alone is
checked against Pinocchio's forward dynamics, integrated with the simulator's own scheme.
"""
import threading
import time

import numpy as np
import pinocchio as pin
import pytest
import ros_harness  # noqa: F401  (this process's own ROS domain)
import rclpy
from geometry_msgs.msg import WrenchStamped
from rclpy.executors import MultiThreadedExecutor
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

import dyn_control as dc
from dyn_control.nodes import qos
from dyn_control.nodes.simulator import SimulatorNode

pytestmark = pytest.mark.ros

URDF = dc.bundled_urdf("arm7")
Q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
TIMEOUT = 0.2
DT = 1e-3       # the simulator's step (rate_hz 1000)
PIN_MODEL = pin.buildModelFromUrdf(URDF)
PIN_DATA = PIN_MODEL.createData()
GRAVITY = pin.computeGeneralizedGravity(PIN_MODEL, PIN_DATA, Q0)


def drain(subscription):
    messages = []
    while (msg := subscription.take()) is not None:
        messages.append(msg)
    return messages


@pytest.fixture(scope="module")
def sim():
    context = rclpy.Context()
    rclpy.init(context=context)
    node = SimulatorNode(context=context, parameter_overrides=[
        Parameter("urdf_path", value=URDF), Parameter("initial_positions", value=Q0.tolist()),
        Parameter("command_timeout", value=TIMEOUT)])
    test = rclpy.create_node("simulator_test", context=context)
    io = {
        "command": test.create_publisher(Float64MultiArray, "/effort_controller/commands", 10),
        "wrench": test.create_publisher(WrenchStamped, "/dyn_simulator/external_wrench", 10),
        "states": qos.PolledSubscription(test, JointState, "/joint_states", qos.recording(3000)),
        "applied": qos.PolledSubscription(test, WrenchStamped, "/dyn_simulator/applied_wrench", qos.recording(3000)),
    }
    executor = MultiThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(test)
    threading.Thread(target=executor.spin, daemon=True).start()
    node.trigger_configure()
    node.trigger_activate()
    assert node.state == "active"
    # DDS discovery takes a moment: start the tests once both directions are matched
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline and not (
            io["command"].get_subscription_count() > 0 and drain(io["states"])):
        time.sleep(0.05)
    assert io["command"].get_subscription_count() > 0, "the simulator never subscribed to the commands"
    yield node, io
    node.trigger_deactivate()
    executor.shutdown()
    node.destroy_node()
    test.destroy_node()
    rclpy.try_shutdown(context=context)


def stream(io, command, seconds, period=0.002):
    """Publish `command` every `period` for `seconds`; returns the joint states received meanwhile."""
    drain(io["states"])
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if command is not None:
            io["command"].publish(Float64MultiArray(data=list(command)))
        time.sleep(period)
    return drain(io["states"])


# The tests below run in file order on one simulator (module fixture): each starts where the
# previous one left the robot.

def test_held_still_until_the_first_command(sim):
    _, io = sim
    states = stream(io, None, 0.3)
    assert len(states) > 100
    assert all(np.array_equal(m.position, Q0) and not any(m.velocity) for m in states)


def test_gravity_compensation_holds_the_pose(sim):
    """Pinocchio's g(q0) as the command keeps the robot at q0 (builtin: our own ABA)."""
    _, io = sim
    states = stream(io, GRAVITY, 0.5)
    np.testing.assert_allclose(states[-1].position, Q0, atol=1e-9)
    np.testing.assert_allclose(states[-1].effort, GRAVITY)


def test_external_wrench_topic(sim):
    """A wrench on ~/external_wrench acts at the named link (components in root-frame axes) until a
    zero wrench removes it, and is reported on ~/applied_wrench; an unknown link is refused."""
    node, io = sim
    msg = WrenchStamped()
    msg.header.frame_id = "no_such_link"
    msg.wrench.force.z = -5.0
    io["wrench"].publish(msg)
    msg.header.frame_id = "arm7_tool"
    msg.wrench.force.x, msg.wrench.force.z, msg.wrench.torque.y = 2.0, -5.0, 0.5
    io["wrench"].publish(msg)
    time.sleep(0.1)
    drain(io["applied"])
    states = stream(io, GRAVITY, 0.3)
    applied = drain(io["applied"])
    assert node._configured.rejected_wrenches == 1
    assert len(applied) > 50 and applied[-1].header.frame_id == "arm7_link0"
    np.testing.assert_allclose(vars_of(applied[-1].wrench), [2.0, 0.0, -5.0, 0.0, 0.5, 0.0])
    # the robot moves under GRAVITY + J(q)^T w (Pinocchio's world-aligned tool Jacobian, linear first)
    frame = PIN_MODEL.getFrameId("arm7_tool")
    wrench = np.array([2.0, 0.0, -5.0, 0.0, 0.5, 0.0])
    assert np.linalg.norm(np.subtract(states[-1].position, Q0)) > 1e-3
    assert_motion_matches_pinocchio(states, lambda q: GRAVITY + pin.computeFrameJacobian(
        PIN_MODEL, PIN_DATA, q, frame, pin.LOCAL_WORLD_ALIGNED).T @ wrench)
    msg.wrench.force.x = msg.wrench.force.z = msg.wrench.torque.y = 0.0
    io["wrench"].publish(msg)
    time.sleep(0.1)
    drain(io["applied"])
    stream(io, GRAVITY, 0.05)
    assert not any(vars_of(drain(io["applied"])[-1].wrench))


def test_malformed_commands_are_rejected(sim):
    """Wrong length or NaN: dropped and counted; the last good command stays in force."""
    node, io = sim
    stream(io, GRAVITY, 0.05)
    rejected = node._configured.rejected_commands
    for bad in ([1.0] * 6, [float("nan")] * 7):
        io["command"].publish(Float64MultiArray(data=bad))
        time.sleep(0.02)        # the simulator keeps only the newest command: one per tick
    states = stream(io, None, 0.06)
    assert node._configured.rejected_commands == rejected + 2
    np.testing.assert_allclose(states[-1].effort, GRAVITY)


def test_command_timeout_then_zero_effort(sim):
    """With command_timeout_action zero (live), the last command holds for command_timeout (0.2 s),
    then the effort is zero and the robot falls as Pinocchio's forward dynamics says."""
    node, io = sim
    assert node.set_parameters([Parameter("command_timeout_action", value="zero")])[0].successful
    stream(io, GRAVITY, 0.05)
    states = stream(io, None, TIMEOUT - 0.05)
    np.testing.assert_allclose(states[-1].effort, GRAVITY)
    time.sleep(0.1)
    states = stream(io, None, 0.15)
    assert len(states) > 50 and all(not any(m.effort) for m in states)
    assert_motion_matches_pinocchio(states, lambda q: np.zeros(7))


def seconds_between(a, b):
    return (b.header.stamp.sec - a.header.stamp.sec) + (b.header.stamp.nanosec - a.header.stamp.nanosec) * 1e-9


def assert_motion_matches_pinocchio(states, torque):
    """The last state is where Pinocchio's forward dynamics under joint torque torque(q) leads from
    the first one, integrated like the builtin simulator (classical RK4, its 1 ms step, torque held
    over each step) for as many steps as the stamps are apart: exact up to round-off, so a lost or
    repeated step would show too."""
    def f(x):
        return np.concatenate([x[7:], pin.aba(PIN_MODEL, PIN_DATA, x[:7], x[7:], torque(x[:7]))])
    x = np.concatenate([states[0].position, states[0].velocity])
    steps = round(seconds_between(states[0], states[-1]) / DT)
    for _ in range(steps):
        k1 = f(x)
        k2 = f(x + DT / 2 * k1)
        k3 = f(x + DT / 2 * k2)
        k4 = f(x + DT * k3)
        x = x + DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    np.testing.assert_allclose(states[-1].position, x[:7], rtol=0, atol=1e-9)
    np.testing.assert_allclose(states[-1].velocity, x[7:], rtol=0, atol=1e-8)


def vars_of(wrench):
    return [wrench.force.x, wrench.force.y, wrench.force.z, wrench.torque.x, wrench.torque.y, wrench.torque.z]
