"""The simulated robot's drives and safety without ROS (simulation/simulated_robot.py), rule by rule
as the simulator node's docstring gives them, on the bundled arm with the builtin backend: waiting
for the first command, stamps, the command timeout's brake and zero effort, the drives' clamp,
gravity added by the robot, external wrenches, divergence. Pinocchio (the tests' oracle) gives
g(q) and the free fall's acceleration. The ROS tests (test_ros_simulator*.py) check the same rules
end to end on a running node."""
import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from dyn_control.simulation.builtin import BuiltinSimulator
from dyn_control.simulation.simulated_robot import SimulatedRobot
from recording_log import RecordingLog

DT = 1e-3
Q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
ARM7 = dc.bundled_urdf("arm7")
LIMITS = np.array([87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0])      # the URDF's effort limits


@pytest.fixture(scope="module")
def oracle():
    model = pin.buildModelFromUrdf(ARM7)
    return model, model.createData()


def _robot(gravity_by_robot=False, schedule=(), max_velocity=1000.0, commanded=None):
    model = dc.load_urdf(ARM7)
    sim = BuiltinSimulator(model, DT, q0=Q0)
    diverged = []
    robot = SimulatedRobot(sim, model, np.arange(model.nv) if commanded is None else commanded, LIMITS.copy(),
                           max_velocity, gravity_by_robot, schedule, RecordingLog(), on_diverge=lambda: diverged.append(1))
    return robot, sim, diverged


def _clock(ns):
    return lambda: ns


def test_waiting_holds_the_robot_and_its_time_until_the_first_command():
    robot, sim, _ = _robot()
    robot.activate(0.1, "brake", True)
    for k in range(5):
        stamp, applied = robot.tick(k * DT, _clock(10**9 + k))
        assert stamp == 10**9 + k and applied is None      # the clock's time: simulated time frozen
    np.testing.assert_array_equal(sim.q, Q0)
    assert robot.step == 0 and robot.waiting
    robot.take_command(np.zeros(7), 0.005)
    stamps = [robot.tick(0.005 + k * DT, _clock(7 * 10**9))[0] for k in range(3)]
    # simulated time starts at the first command: stamps start + k dt for step k
    assert stamps == [7 * 10**9 + round(k * DT * 1e9) for k in (1, 2, 3)]
    assert not robot.waiting and not np.allclose(sim.q, Q0)       # zero torque under gravity: it moves


def test_zero_effort_lets_the_arm_fall_as_pinocchio_says(oracle):
    robot, sim, _ = _robot()
    robot.activate(0.05, "zero", False, clock_ns=0)
    robot.take_command(np.full(7, 5.0), 0.0)
    robot.tick(0.0, _clock(0))
    np.testing.assert_allclose(sim.effort, 5.0)       # held command applied
    for k in range(1, 60):
        robot.tick(k * DT, _clock(0))
    assert robot.timed_out and not robot.braked
    assert ("warning", "no command for 0.05 s: zero effort") in robot.log.lines
    np.testing.assert_array_equal(sim.effort, 0.0)
    # one step from rest at zero effort: v = dt a, a = Pinocchio's ABA at (q, 0, 0)
    sim.reset(Q0, np.zeros(7))
    robot.tick(1.0, _clock(0))
    model, data = oracle
    a = pin.aba(model, data, Q0, np.zeros(7), np.zeros(7))
    np.testing.assert_allclose(sim.v / DT, a, rtol=1e-3, atol=1e-6)


def test_brake_locks_the_joints_until_a_command_comes_again():
    robot, sim, _ = _robot()
    robot.activate(0.02, "brake", False, clock_ns=0)
    robot.take_command(np.zeros(7), 0.0)
    for k in range(40):
        robot.tick(k * DT, _clock(0))
    assert robot.braked and robot.brake_engagements == 1
    q_brake = np.array(sim.q)
    assert not np.allclose(q_brake, Q0)               # it fell for 20 ms before the brake
    stamps = [robot.tick((40 + k) * DT, _clock(0))[0] for k in range(50)]
    np.testing.assert_array_equal(sim.q, q_brake)     # held where it was, not integrated
    np.testing.assert_array_equal(sim.v, 0.0)
    assert np.all(np.diff(stamps) == round(DT * 1e9))      # time goes on
    robot.take_command(np.zeros(7), 0.09)
    robot.tick(0.09, _clock(0))
    assert not robot.braked and ("info", "commands again: brakes released") in robot.log.lines
    assert not np.allclose(sim.q, q_brake)


def test_commands_are_clamped_to_the_drives_limits_and_counted():
    robot, sim, _ = _robot(commanded=np.array([1, 4]))        # a command for joints 2 and 5 only
    robot.activate(0.1, "brake", False, clock_ns=0)
    assert not robot.take_command(np.array([50.0, -5.0]), 0.0)
    assert robot.take_command(np.array([500.0, -50.0]), 0.001)
    robot.tick(0.001, _clock(0))
    expected = np.zeros(7)
    expected[1], expected[4] = 87.0, -12.0
    np.testing.assert_array_equal(sim.effort, expected)
    assert robot.clamped_commands == 1


def test_gravity_by_the_robot_holds_the_arm_at_zero_command(oracle):
    robot, sim, _ = _robot(gravity_by_robot=True)
    robot.activate(0.1, "brake", False, clock_ns=0)
    model, data = oracle
    g = pin.computeGeneralizedGravity(model, data, Q0)
    for k in range(100):
        robot.take_command(np.zeros(7), k * DT)
        robot.tick(k * DT, _clock(0))
        if k == 0:
            np.testing.assert_allclose(sim.effort, np.clip(g, -LIMITS, LIMITS), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(sim.q, Q0, atol=1e-9)


def test_a_wrench_applies_in_its_window_and_a_topic_wrench_wins():
    pushed = np.array([0.0, 0.0, 0.0, 10.0, 0.0, 0.0])
    robot, sim, _ = _robot(schedule=[(0.010, 0.020, "arm7_tool", pushed)])
    robot.activate(0.1, "brake", False, clock_ns=0)
    applied = []
    for k in range(30):
        robot.take_command(np.zeros(7), k * DT)
        applied.append(robot.tick(k * DT, _clock(0))[1])
    # step k integrates simulated time [k dt, (k + 1) dt): the wrench in steps 10 to 19
    assert [k for k, a in enumerate(applied) if a is not None] == list(range(10, 20))
    assert applied[10][0] == "arm7_tool" and np.array_equal(applied[10][1], pushed)
    other = np.array([0.0, 1.0, 0.0, 0.0, 0.0, -3.0])
    robot.set_wrench("arm7_link3", other)
    assert robot.tick(0.03, _clock(0))[1][0] == "arm7_link3"
    robot.set_wrench("arm7_link3", np.zeros(6))       # a zero wrench removes it
    assert robot.tick(0.031, _clock(0))[1] is None


def test_divergence_stops_the_integration_and_holds_the_last_finite_state():
    robot, sim, diverged = _robot(max_velocity=0.5)
    robot.activate(0.1, "brake", False, clock_ns=0)
    for k in range(200):
        robot.take_command(np.full(7, 80.0), k * DT)
        robot.tick(k * DT, _clock(0))
        if robot.diverged:
            break
    assert diverged == [1] and robot.diverged.startswith("diverged: joint arm7_joint")
    assert "divergence_velocity 0.5" in robot.diverged
    q_held = np.array(sim.q)
    np.testing.assert_array_equal(q_held, robot.q_before)
    np.testing.assert_array_equal(sim.v, 0.0)
    for j in range(20):
        robot.take_command(np.full(7, 80.0), (k + 1 + j) * DT)
        robot.tick((k + 1 + j) * DT, _clock(0))
    np.testing.assert_array_equal(sim.q, q_held)       # until the next activate
    assert diverged == [1]
    robot.activate(0.1, "brake", False, clock_ns=0)
    assert robot.diverged is None


def test_an_unknown_timeout_action_is_refused_by_name():
    robot, _, _ = _robot()
    with pytest.raises(ValueError, match="command_timeout_action: must be one of brake, zero, got 'coast'"):
        robot.set_timeout(0.1, "coast")
