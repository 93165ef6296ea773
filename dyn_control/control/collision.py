"""Collision detection, isolation and reaction from the momentum observer's residual (De Luca and
Haddadin's residual-based scheme; Franka's lower and upper collision thresholds).

Detection. The residual r (momentum_observer.py: the estimated external joint torque) against two
per-joint thresholds that grow with the reference acceleration, where the model's errors grow
(an inertia error of dM gives a residual of dM a):
    threshold_i = base_i + acceleration_gain * |a_i|    [N m; a in rad/s^2]
(a: the joint reference's acceleration a_r in joint mode; the estimated acceleration in Cartesian
mode, which has no joint reference).
A joint above its lower threshold is in **contact**; above its upper threshold, a **collision**. A
collision lasts until every residual is back below its lower threshold (a residual that rings about
the upper threshold after an impact is one collision), and none is detected while a reaction holds
(the collision is latched until the caller resets it).
Detection starts SETTLING observer time constants (1 / K_O of its slowest joint) after each
restart of the observer (arm_after_restart): its residual starts from zero and needs them to reflect
the torques of the moment. It waits while the joint states carry efforts that are all zero: a robot
held by its brakes (a simulator until its first command, a robot before its brakes release) applies
none of the commands, and its brakes' torque would look external; once measured efforts come, the
observer restarts on them (tick.py: a change of the applied torque's source) and detection starts
SETTLING time constants later. Joint states without efforts leave the observer the commands.
Isolation: the collided link is the child link of the last joint along the chain (the highest
joint index, bodies being in depth-first order) whose residual is above its lower threshold: an
impact on link k loads joints 1..k, and the joints beyond it see only noise.

Reaction (on a collision, latched until the caller resets it):
- STOP: bring the joints from their position q_c and speed v_c at the collision to rest within
  `stop_time` on a smooth deceleration (no step of the acceleration at either end: v_c stop_time / 2
  further on), and hold there: the computed torque on that reference. A reference at rest at q_c at
  once asks for a step of kd v_c; the torque-rate limit (and the drives' effort limits) spread it
  joint by joint, which breaks the computed torque's decoupling: stopped at the demo sine's speed
  peak in MuJoCo, arm7, UR5, xArm7 and Unitree Z1 reached 1.4, 1.7, 2.9 and 5.9 times their speed
  at the collision and went 43-93 mrad past the hold (a reflex on UR5 spun up to 33 rad/s); with a
  stop time of 0.2 s none is faster than at the collision, none passes the hold;
- FLOAT: gravity and damping only, the computed torque of a = -float_damping v (rnea(q, v, a):
  g(q), C(q, v) v and M(q) a): the arm yields to the push, each joint damped at the rate
  float_damping [1/s] whatever its inertia. A damping torque -d v of one gain d for every joint
  is unstable on a light wrist sampled at 1 kHz (d dt / I over 1: xArm7's joint 7 chattered at 700
  reversals per second with d = 2 N m s/rad);
- REFLEX: the stop, and with it a retreat along the residual's direction, distance r / |r| reached
  over `duration` on a quintic (zero velocity and acceleration at both ends), then hold there;
- REPORT: detect and report only, the control law goes on.
Every reaction's command passes the torque-rate limit like any other (safety.finish_command).
"""
import math

from ..jit import njit
from .flags import (S_COLLIDED, S_COLLISION_ACCEL_GAIN, S_COLLISION_JOINT, S_COLLISION_LEVEL, S_COLLISION_TIME,
                    S_COLLISIONS, S_CONTACTS, S_DETECT_FROM, S_T)

REPORT, STOP, FLOAT, REFLEX = range(4)
REACTIONS = ("report", "stop", "float", "reflex")
NONE, CONTACT, COLLISION = range(3)
SETTLING = 5.0      # observer time constants after a restart before detection (the residual within e^-5)


@njit(cache=True, nogil=True)
def arm_after_restart(s, observer_gain):
    """The observer restarted now: detection starts SETTLING time constants of its slowest joint later
    (never with a gain of zero: the residual stays zero)."""
    slowest = observer_gain[0]
    for k in range(observer_gain.shape[0]):
        slowest = min(slowest, observer_gain[k])
    s[S_DETECT_FROM] = s[S_T] + SETTLING / slowest if slowest > 0.0 else math.inf   # no observer: no residual
    s[S_COLLISION_LEVEL] = NONE


@njit(cache=True, nogil=True)
def detect(s, residual, lower, upper, acceleration, mask, snapshot):
    """The level (NONE, CONTACT, COLLISION) of the residual against the thresholds (module
    docstring) on the controlled joints (mask 1), into s[S_COLLISION_LEVEL]. A rise to CONTACT
    counts in s[S_CONTACTS]; a rise to COLLISION counts in s[S_COLLISIONS], isolates the joint into
    s[S_COLLISION_JOINT], its time into s[S_COLLISION_TIME] and the residual into snapshot, and
    returns True. Nothing before s[S_DETECT_FROM]."""
    if s[S_T] < s[S_DETECT_FROM]:
        return False
    gain = s[S_COLLISION_ACCEL_GAIN]
    level = NONE
    joint = -1
    for k in range(residual.shape[0]):
        if mask[k] == 0.0:
            continue
        margin = gain * abs(acceleration[k])
        size = abs(residual[k])
        if size > lower[k] + margin:
            joint = k
            if level == NONE:
                level = CONTACT
            if size > upper[k] + margin:
                level = COLLISION
    previous = s[S_COLLISION_LEVEL]
    if level == CONTACT and previous == COLLISION:
        level = COLLISION       # until every residual is below its lower threshold (module docstring)
    s[S_COLLISION_LEVEL] = level
    if level != NONE and previous == NONE:
        s[S_CONTACTS] += 1.0
    if level != COLLISION or previous == COLLISION:
        return False
    s[S_COLLISIONS] += 1.0
    s[S_COLLISION_JOINT] = joint
    s[S_COLLISION_TIME] = s[S_T]
    snapshot[:] = residual
    return True


@njit(cache=True, nogil=True)
def start_reaction(s, q, v, residual, mask, q_c, v_c, direction):
    """Latch the collision (s[S_COLLIDED]): q_c = q, v_c = v on the controlled joints, the retreat
    direction r / |r| over them."""
    s[S_COLLIDED] = 1.0
    norm = 0.0
    for k in range(q.shape[0]):
        norm += (residual[k] * mask[k]) ** 2
    norm = math.sqrt(norm)
    for k in range(q.shape[0]):
        q_c[k] = q[k]
        v_c[k] = v[k] * mask[k]
        direction[k] = residual[k] * mask[k] / norm if norm > 0.0 else 0.0


@njit(cache=True, nogil=True)
def reaction_reference(elapsed, stop_time, duration, distance, q_c, v_c, direction, q_r, v_r, a_r):
    """The joint reference of STOP (distance 0) and REFLEX `elapsed` seconds after the collision, the
    sum of two motions (module docstring):
    - the stop: from q_c at v_c to rest in stop_time T, at the speed v_c (1 - s(y)), y = elapsed / T,
      s the cubic 3 y^2 - 2 y^3 (no acceleration at either end): q_c + v_c T (y - y^3 + y^4 / 2),
      at rest v_c T / 2 beyond q_c;
    - the retreat: distance h(x) direction, x = elapsed / duration, h the quintic
      10 x^3 - 15 x^4 + 6 x^5 (at rest at both ends), then distance direction at rest."""
    y = min(max(elapsed / stop_time, 0.0), 1.0) if stop_time > 0.0 else 1.0
    y2 = y * y
    travel = stop_time * (y - y2 * y + 0.5 * y2 * y2)
    slowing = 1.0 - y2 * (3.0 - 2.0 * y)
    braking = -6.0 * y * (1.0 - y) / stop_time if stop_time > 0.0 else 0.0
    x = min(max(elapsed / duration, 0.0), 1.0) if duration > 0.0 else 1.0
    x2 = x * x
    h = x2 * x * (10.0 - 15.0 * x + 6.0 * x2)
    dh = 30.0 * x2 * (1.0 - x) * (1.0 - x)
    ddh = 60.0 * x * (1.0 - x) * (1.0 - 2.0 * x)
    speed = distance / duration if duration > 0.0 else 0.0
    rate = speed / duration if duration > 0.0 else 0.0
    for k in range(q_c.shape[0]):
        q_r[k] = q_c[k] + v_c[k] * travel + distance * direction[k] * h
        v_r[k] = v_c[k] * slowing + speed * direction[k] * dh
        a_r[k] = v_c[k] * braking + rate * direction[k] * ddh
