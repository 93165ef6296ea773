"""The `float` reaction (control/collision.py) on arms it was not tuned for: the compiled tick at
1 kHz with the controller's defaults (controller.PARAMETERS, collision.float_damping included) on
MuJoCo as the robot, the demo's sine, and a collision latched at the sine's speed peak (0.94 rad/s
on every joint), as detection latches it. From then on the arm has gravity and damping only: every
joint's speed must decay, never rise above 1.2 times its speed at the collision, and be below
0.02 rad/s a second later. A damping torque of one gain for every joint (N m s/rad) made the light
wrists of xArm7 and Unitree Z1 chatter (700 and 2400 velocity reversals per second, joint 7 at
100 rad/s); the damping rate [1/s] through the mass matrix does not.
"""
import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from dyn_control.control import tick as T
from dyn_control.control.collision import REACTIONS
from dyn_control.simulation import MujocoSimulator
from oracles import robot_urdf
from test_collision_held_robot import DT, ROBOTS, controller_tick, default

COLLIDE_AT, AFTER = 3.0, 1.5      # [s]: a speed peak of the sine; judged this long after it


def initial_positions(name):
    """The held-robot test's postures; for the others the middle of each joint's range."""
    if name in ROBOTS:
        return ROBOTS[name][0], np.array(ROBOTS[name][3])
    path = robot_urdf(name)
    model = pin.buildModelFromUrdf(path)
    return path, 0.5 * (model.lowerPositionLimit + model.upperPositionLimit)


@pytest.mark.parametrize("name", ["arm7", "panda", "ur5", "xarm7", "z1"])
def test_float_yields_and_settles_without_chatter(name):
    path, q0 = initial_positions(name)
    model = dc.load_urdf(path)
    sim = MujocoSimulator(model, path, DT, q0)
    tick = controller_tick(model, q0)
    f, s = tick.f, tick.s
    s[T.S_REACTION] = REACTIONS.index("float")
    s[T.S_COLLISION_ON] = 0.0       # latched below, at a set time
    f.float_damping[:] = default("collision.float_damping")[0]
    speeds, reversals, previous = [], 0, np.zeros(model.nv)
    for k in range(round((COLLIDE_AT + AFTER) / DT)):
        t = k * DT
        f.q[:], f.v[:] = sim.q, sim.v
        s[T.S_HAS_EFFORT], f.effort[:] = 1.0, sim.effort
        s[T.S_T], s[T.S_DT], s[T.S_NEW_SAMPLE], s[T.S_RESET] = t, DT, 1.0, float(k == 0)
        s[T.S_ANCHOR] = float(k == 0)
        if k == round(COLLIDE_AT / DT):
            s[T.S_COLLIDED] = 1.0
            at_collision = np.abs(sim.v)
        tick.tick()
        sim.step(f.tau, None, None)
        if s[T.S_COLLIDED]:
            speeds.append(np.abs(sim.v))
            # a reversal between speeds above noise (a finger held at rest flips sign at 1e-6 rad/s)
            reversals += int(np.sum((sim.v * previous < 0) & (np.abs(sim.v) > 1e-3) & (np.abs(previous) > 1e-3)))
            previous = sim.v.copy()
    speeds = np.array(speeds)
    print(f"{name}: speed at the collision {at_collision.max():.3f} rad/s, largest after {speeds.max():.3f}, "
          f"{AFTER - 0.5:g} s later {speeds[-1].max():.4f}; velocity reversals {reversals}")
    moving = f.amplitude > 0.0              # a gripper's fingers are held, the arm's joints follow the sine
    assert at_collision[moving].min() > 0.5      # the sine's speed peak
    assert (speeds.max(axis=0) <= 1.2 * at_collision + 1e-3).all()
    assert speeds[round(1.0 / DT):].max() < 0.02
    assert reversals <= model.nv
