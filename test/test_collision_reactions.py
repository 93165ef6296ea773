"""The collision reactions (control/collision.py) on arms they were not tuned for: the compiled tick
at 1 kHz with the controller's defaults (controller_parameters.PARAMETERS: gains, torque-rate limit, stop time,
reflex, float damping) on MuJoCo as the robot, the demo's sine, and a collision latched at the sine's
speed peak (0.94 rad/s on every joint), as detection latches it, with no force: what follows is the
reaction's alone.

- stop and reflex: no joint faster than 1.2 times its speed at the collision, none more than 20 mrad
  past the position where the reaction comes to rest, at rest there 1 s after (reflex: after its
  retreat). A reference at rest at the collision's position at once, rate-limited joint by joint,
  swung arm7, UR5, xArm7 and Unitree Z1 to 1.4-5.9 times their speed, 43-93 mrad past the hold (a
  reflex on UR5 to 33 rad/s);
- float: every joint's speed decays, never above 1.2 times its speed at the collision, below
  0.02 rad/s a second later, without chatter. A damping torque of one gain for every joint
  (N m s/rad) made the light wrists of xArm7 and Z1 chatter (700 and 2400 velocity reversals per
  second, joint 7 at 100 rad/s).
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

COLLIDE_AT = 3.0      # [s]: a speed peak of the sine
ARMS = ["arm7", "panda", "ur5", "xarm7", "z1"]


def initial_positions(name):
    """The held-robot test's postures; for the others the middle of each joint's range."""
    if name in ROBOTS:
        return ROBOTS[name][0], np.array(ROBOTS[name][3])
    path = robot_urdf(name)
    model = pin.buildModelFromUrdf(path)
    return path, 0.5 * (model.lowerPositionLimit + model.upperPositionLimit)


def collide(name, reaction, after):
    """Run the sine, latch a collision at COLLIDE_AT (the retreat, for reflex, against the motion),
    go on `after` seconds; returns (tick, the arm's joints that follow the sine (a gripper's fingers
    are held), speeds at the collision, positions and velocities from then on)."""
    path, q0 = initial_positions(name)
    model = dc.load_urdf(path)
    sim = MujocoSimulator(model, path, DT, q0)
    tick = controller_tick(model, q0)
    f, s = tick.f, tick.s
    s[T.S_REACTION] = REACTIONS.index(reaction)
    s[T.S_COLLISION_ON] = 0.0       # latched below, at a set time
    q, v = [], []
    for k in range(round((COLLIDE_AT + after) / DT)):
        t = k * DT
        f.q[:], f.v[:] = sim.q, sim.v
        s[T.S_HAS_EFFORT], f.effort[:] = 1.0, sim.effort
        s[T.S_T], s[T.S_DT], s[T.S_NEW_SAMPLE], s[T.S_RESET] = t, DT, 1.0, float(k == 0)
        s[T.S_ANCHOR] = float(k == 0)
        if k == round(COLLIDE_AT / DT):
            s[T.S_COLLIDED], s[T.S_COLLISION_TIME] = 1.0, t
            f.q_c[:], f.v_c[:] = sim.q, sim.v
            f.retreat[:] = -sim.v / np.linalg.norm(sim.v)
            at_collision = np.abs(sim.v)
        tick.tick()
        sim.step(f.tau, None, None)
        if s[T.S_COLLIDED]:
            q.append(sim.q.copy())
            v.append(sim.v.copy())
    return tick, f.amplitude > 0.0, at_collision, np.array(q), np.array(v)


@pytest.mark.parametrize("reaction", ["stop", "reflex"])
@pytest.mark.parametrize("name", ARMS)
def test_stop_and_reflex_come_to_rest_without_swinging(name, reaction):
    settle = default("collision.stop_time") + (default("collision.reflex.duration") if reaction == "reflex" else 0.0)
    tick, moving, at_collision, q, v = collide(name, reaction, settle + 1.0)
    rest = tick.f.q_r.copy()                       # where the reaction's reference came to rest
    toward = np.sign(rest - q[0])                  # each joint's way there
    past = (toward * (q - rest)).max(axis=0)
    speeds = np.abs(v).max(axis=0)
    print(f"{name} {reaction}: speed at the collision {at_collision[moving].max():.3f} rad/s, largest after "
          f"{speeds[moving].max():.3f}; past the rest position {1e3 * past[moving].max():.1f} mrad; at the end "
          f"{np.abs(v[-1]).max():.4f} rad/s, {1e3 * np.abs(q[-1] - rest).max():.2f} mrad from it")
    assert at_collision[moving].min() > 0.5        # the sine's speed peak
    assert (speeds[moving] <= 1.2 * at_collision[moving]).all()
    assert past[moving].max() <= 0.020
    assert np.abs(v[-1]).max() < 0.01 and np.abs(q[-1] - rest).max() < 0.005


@pytest.mark.parametrize("name", ARMS)
def test_float_yields_and_settles_without_chatter(name):
    tick, moving, at_collision, _, v = collide(name, "float", 1.5)
    speeds = np.abs(v)
    # a reversal between speeds above noise (a finger held at rest flips sign at 1e-6 rad/s)
    reversals = int(np.sum((v[1:] * v[:-1] < 0) & (speeds[1:] > 1e-3) & (speeds[:-1] > 1e-3)))
    print(f"{name} float: speed at the collision {at_collision.max():.3f} rad/s, largest after "
          f"{speeds.max():.3f}, 1 s later {speeds[round(1.0 / DT):].max():.4f}; velocity reversals {reversals}")
    assert at_collision[moving].min() > 0.5        # the sine's speed peak
    assert (speeds.max(axis=0) <= 1.2 * at_collision + 1e-3).all()
    assert speeds[round(1.0 / DT):].max() < 0.02
    assert reversals <= v.shape[1]
