"""Collision detection at start-up on a robot held by its brakes (control/collision.py, tick.py),
the compiled tick at 1 kHz with the controller's defaults (controller_parameters.PARAMETERS: gains, observer
gain, thresholds, re-engagement) on MuJoCo as the robot, for the bundled arm and two arms of
example-robot-data it was not tuned for. As the simulator node does until its first command
arrives (and a robot before its brakes release), the robot is held still for HOLD seconds: joint
states stamped with the running time, efforts all zero. Then it applies the commands and reports
them as its efforts, tracking the demo's sine.

Neither a contact nor a collision may be raised in the hold or the motion after it; and detection
is not lost to the hold: a push at the tool during the motion is detected as a collision, within
20 ms. Joint states without efforts show no hold (the observer takes the commands): on a robot that
applies them from the start, the same holds.
"""
import numpy as np
import pytest

import dyn_control as dc
from dyn_control.control import tick as T
from dyn_control.control.collision import REACTIONS
from dyn_control.nodes.controller_parameters import PARAMETERS
from dyn_control.simulation import MujocoSimulator
from oracles import robot_urdf

DT = 1e-3
HOLD, MOTION = 1.0, 3.0           # [s]
PUSH_AT, PUSH_FOR = 3.0, 0.05     # [s] after the start, and its duration
AMPLITUDE, FREQUENCY = 0.3, 0.5   # the demo's sine
ROBOTS = {
    # urdf, tool frame, push at the tool [N], initial positions (away from singularities and limits)
    "arm7": (dc.bundled_urdf("arm7"), "arm7_tool", 80.0, [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]),
    "panda": (robot_urdf("panda"), "panda_hand", 80.0, [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.0, 0.0]),
    "ur5": (robot_urdf("ur5_robot"), "tool0", 60.0, [0.0, -1.2, 1.5, -1.9, -1.57, 0.3]),
}


def default(name):
    return next(p.default for p in PARAMETERS if p.name == name)


def controller_tick(model, q0):
    """The tick as the controller configures it by default, collision detection on (reaction stop;
    every reaction's parameters at their defaults),
    the demo's sine about q0 on the arm's joints (a gripper's fingers, if any, held)."""
    tick = T.ControllerTick(model, np.arange(model.nv), model.frame_names[-1], 2)
    tick.warm_up()
    f, s = tick.f, tick.s
    f.kp[:], f.kd[:] = default("gains.kp"), default("gains.kd")
    f.observer_gain[:] = default("estimator.gain")
    f.lower_threshold[:] = default("collision.lower_threshold")[0]
    f.upper_threshold[:] = default("collision.upper_threshold")[0]
    f.max_step[:] = default("torque_rate_limit") * DT
    f.centre[:] = q0
    f.amplitude[:] = [AMPLITUDE if "finger" not in name else 0.0 for name in model.joint_names]
    s[T.S_MODE] = T.JOINT_MODE
    s[T.S_OMEGA] = 2 * np.pi * FREQUENCY
    s[T.S_ESTIMATE] = 1.0
    s[T.S_COLLISION_ON] = 1.0
    s[T.S_REACTION] = REACTIONS.index(default("collision.reaction"))
    s[T.S_COLLISION_ACCEL_GAIN] = default("collision.acceleration_gain")
    s[T.S_STOP_TIME] = default("collision.stop_time")
    s[T.S_REFLEX_DISTANCE] = default("collision.reflex.distance")
    s[T.S_REFLEX_DURATION] = default("collision.reflex.duration")
    f.float_damping[:] = default("collision.float_damping")[0]
    s[T.S_BLEND_TIME], s[T.S_BLEND_SPEED] = default("reengage.duration"), default("reengage.max_velocity")
    s[T.S_ERROR_LIMIT], s[T.S_BRAKE_SPEED] = default("reengage.error_limit"), default("reengage.brake_speed")
    f.tau_prev[:] = dc.gravity(model, model.create_data(), np.asarray(q0, float))   # the node's seed at the first state
    return tick


def run(name, efforts):
    """Hold (with efforts: without, the robot moves from the start), then motion with a push at the
    tool; returns (tick, the time of each contact and collision raised [(t, contacts, collisions)])."""
    path, frame, push, q0 = ROBOTS[name]
    model = dc.load_urdf(path)
    sim = MujocoSimulator(model, path, DT, q0)
    tick = controller_tick(model, q0)
    f, s = tick.f, tick.s
    raised, seen = [], (0.0, 0.0)
    for k in range(round((HOLD + MOTION) / DT)):
        t = k * DT
        held = efforts and t < HOLD
        f.q[:], f.v[:] = sim.q, sim.v
        s[T.S_HAS_EFFORT] = efforts
        f.effort[:] = 0.0 if held else sim.effort
        s[T.S_T], s[T.S_DT], s[T.S_NEW_SAMPLE], s[T.S_RESET] = t, DT, 1.0, float(k == 0)
        s[T.S_ANCHOR] = float(k == 0)
        tick.tick()
        if (s[T.S_CONTACTS], s[T.S_COLLISIONS]) != seen:
            seen = (s[T.S_CONTACTS], s[T.S_COLLISIONS])
            raised.append((t, *seen))
        if not held:
            pushing = PUSH_AT <= t < PUSH_AT + PUSH_FOR
            wrench = np.array([0.0, 0.0, 0.0, 0.0, 0.0, -push]) if pushing else None
            sim.step(f.tau, wrench, frame if pushing else None)
    return tick, raised


@pytest.mark.parametrize("efforts", [True, False], ids=["efforts", "no efforts"])
@pytest.mark.parametrize("name", list(ROBOTS))
def test_a_held_robot_raises_no_collision_and_a_push_after_it_is_detected(name, efforts):
    tick, raised = run(name, efforts)
    print(name, "efforts" if efforts else "no efforts", "raised (t, contacts, collisions):", raised)
    before_push = [event for event in raised if event[0] < PUSH_AT]
    assert before_push == [], f"raised before the push: {before_push}"
    collisions = [t for t, _, count in raised if count > 0]
    assert collisions and collisions[0] - PUSH_AT <= 0.020, raised
    assert tick.s[T.S_COLLISIONS] == 1 and tick.s[T.S_COLLIDED] == 1
