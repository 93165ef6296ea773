"""The collision reactions (control/collision.py) on arms they were not tuned for: the compiled tick
at 1 kHz with the controller's defaults (controller_parameters.PARAMETERS: gains, torque-rate limit, stop time,
reflex, float damping) on MuJoCo as the robot, the demo's sine, and a collision latched at the sine's
speed peak (0.94 rad/s on every joint) by the detection (made to take any residual for a collision
there), with no force: what follows is the reaction's alone.

- stop and reflex: no joint faster than 1.2 times its speed at the collision, none more than 20 mrad
  past the position where the reaction comes to rest, at rest there 1 s after (reflex: after its
  retreat). A reference at rest at the collision's position at once, rate-limited joint by joint,
  swung arm7, UR5, xArm7 and Unitree Z1 to 1.4-5.9 times their speed, 43-93 mrad past the hold (a
  reflex on UR5 to 33 rad/s);
- float: every joint's speed decays, never above 1.2 times its speed at the collision, below
  0.02 rad/s a second later, without chatter. A damping torque of one gain for every joint
  (N m s/rad) made the light wrists of xArm7 and Z1 chatter (700 and 2400 velocity reversals per
  second, joint 7 at 100 rad/s).

And a real impulse: 30 N for 50 ms at the middle of a mid-arm link (arm7's and Panda's link 4, UR5's
forearm), across the link and the axis of its joint, either way, during the sine (at its speed peak
and 0.2 s later), detected by the controller itself, reaction stop: no joint faster than 1.2 times its
speed at the detection (at least SPEED_FLOOR), none more than 20 mrad past the position where the
stop comes to rest, one collision, at rest there 1 s after.
"""
import mujoco
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
PUSH, PUSH_FOR = 30.0, 0.05     # [N], [s]
SPEED_FLOOR = 0.1               # [rad/s]: a joint's speed at the detection is judged no smaller
# The detection of the impulse: the thresholds' defaults (10 and 20 N m) are for a real robot's model
# errors, above the 3-12 N m that 30 N on a mid-arm link puts on its joints; here the robot is the
# controller's model (the sine's residual stays below 0.03 N m). The observer at 300/s (a residual time
# constant of 3.3 ms) detects the impulse within 1-3 ms, before it has changed the joints' speeds.
LOWER, UPPER, OBSERVER_GAIN = 1.0, 3.0, 300.0
IMPACT_ARMS = {
    # the link pushed at its middle, the next link (its far end), the joint whose axis the push crosses
    "arm7": ("arm7_link4", "arm7_link5", "arm7_joint4"),
    "panda": ("panda_link4", "panda_link5", "panda_joint4"),
    "ur5": ("forearm_link", "wrist_1_link", "elbow_joint"),
}


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
    lower, upper = f.lower_threshold.copy(), f.upper_threshold.copy()
    q, v = [], []
    for k in range(round((COLLIDE_AT + after) / DT)):
        t = k * DT
        f.q[:], f.v[:] = sim.q, sim.v
        s[T.S_HAS_EFFORT], f.effort[:] = 1.0, sim.effort
        s[T.S_T], s[T.S_DT], s[T.S_NEW_SAMPLE], s[T.S_RESET] = t, DT, 1.0, float(k == 0)
        s[T.S_ANCHOR] = float(k == 0)
        latch = k == round(COLLIDE_AT / DT)
        if latch:       # any residual is a collision: the detection latches here (as ControllerTick.warm_up)
            s[T.S_COLLISION_ON] = 1.0
            f.lower_threshold[:] = f.upper_threshold[:] = -1.0
            at_collision = np.abs(sim.v)
        tick.tick()
        if latch:
            assert s[T.S_COLLIDED] == 1.0 and s[T.S_COLLISION_TIME] == t
            s[T.S_COLLISION_ON] = 0.0
            f.lower_threshold[:], f.upper_threshold[:] = lower, upper     # no push from here on
            # the retreat against the motion, not along the residual (noise); at its start, at rest with
            # no acceleration, it has no part in this tick's reference
            f.retreat[:] = -sim.v / np.linalg.norm(sim.v)
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


def push_across(sim, name, sign):
    """The wrench [n; f] at the origin of the arm's pushed link (IMPACT_ARMS): PUSH newtons at the
    middle of the link, across it and its joint's axis (sign: which way), from the simulated robot's
    own kinematics."""
    link, end, joint = IMPACT_ARMS[name]
    m, d = sim.mj_model, sim.mj_data
    mujoco.mj_kinematics(m, d)
    origin = d.xpos[sim.frame_body(link)]
    segment = d.xpos[sim.frame_body(end)] - origin
    force = sign * np.cross(d.xaxis[m.joint(joint).id], segment)
    force *= PUSH / np.linalg.norm(force)
    return np.concatenate([np.cross(0.5 * segment, force), force])


def impact(name, sign, hit_at, after=1.0):
    """The sine with detection on (reaction stop, the controller's defaults but the detection's:
    LOWER, UPPER, OBSERVER_GAIN) and an impulse from hit_at for PUSH_FOR seconds, `after` seconds
    more; returns (tick, the arm's joints that follow the sine, the time of the detection, the
    speeds the tick read at it, positions and velocities from then on)."""
    path, q0 = initial_positions(name)
    model = dc.load_urdf(path)
    sim = MujocoSimulator(model, path, DT, q0)
    tick = controller_tick(model, q0)
    f, s = tick.f, tick.s
    s[T.S_REACTION] = REACTIONS.index("stop")
    f.observer_gain[:] = OBSERVER_GAIN
    f.lower_threshold[:], f.upper_threshold[:] = LOWER, UPPER
    detected, at_detection, q, v = None, None, [], []
    for k in range(round((hit_at + PUSH_FOR + after) / DT)):
        t = k * DT
        f.q[:], f.v[:] = sim.q, sim.v
        s[T.S_HAS_EFFORT], f.effort[:] = 1.0, sim.effort
        s[T.S_T], s[T.S_DT], s[T.S_NEW_SAMPLE], s[T.S_RESET] = t, DT, 1.0, float(k == 0)
        s[T.S_ANCHOR] = float(k == 0)
        tick.tick()
        if detected is None and s[T.S_COLLIDED]:
            detected, at_detection = t, np.abs(f.v)
        pushing = hit_at <= t < hit_at + PUSH_FOR
        sim.step(f.tau, push_across(sim, name, sign) if pushing else None, IMPACT_ARMS[name][0] if pushing else None)
        if detected is not None:
            q.append(sim.q.copy())
            v.append(sim.v.copy())
    return tick, f.amplitude > 0.0, detected, at_detection, np.array(q), np.array(v)


@pytest.mark.parametrize("hit_at", [2.0, 2.2], ids=["at the speed peak", "0.2 s later"])
@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["across", "back across"])
@pytest.mark.parametrize("name", list(IMPACT_ARMS))
def test_a_stop_after_a_real_impulse_neither_speeds_up_nor_swings_past_its_rest(name, sign, hit_at):
    tick, moving, detected, at_detection, q, v = impact(name, sign, hit_at)
    s = tick.s
    assert detected is not None, "the impulse was not detected"
    rest = tick.f.q_r.copy()                       # where the stop's reference came to rest
    toward = np.sign(rest - q[0])
    past = (toward * (q - rest)).max(axis=0)
    judged = np.maximum(at_detection, SPEED_FLOOR)
    ratio = np.abs(v).max(axis=0) / judged
    worst = int(np.argmax(np.where(moving, ratio, 0.0)))
    print(f"{name} push {'across' if sign > 0 else 'back across'} at {hit_at} s: detected after "
          f"{1e3 * (detected - hit_at):.0f} ms, {s[T.S_COLLISIONS]:.0f} collision; speed at the detection "
          f"{at_detection[moving].min():.3f}-{at_detection[moving].max():.3f} rad/s (judged no smaller than "
          f"{SPEED_FLOOR}); largest after {ratio[moving].max():.2f} times it (joint {worst}: "
          f"{np.abs(v[:, worst]).max():.3f} rad/s from {at_detection[worst]:.3f}); past the rest position "
          f"{1e3 * past[moving].max():.1f} mrad; 1 s after the impulse {np.abs(v[-1]).max():.4f} rad/s, "
          f"{1e3 * np.abs(q[-1] - rest).max():.2f} mrad from it")
    assert detected - hit_at <= 0.005
    assert s[T.S_COLLISIONS] == 1
    assert (ratio[moving] <= 1.2).all()
    assert past[moving].max() <= 0.020
    assert np.abs(v[-1]).max() < 0.01 and np.abs(q[-1] - rest).max() < 0.005
