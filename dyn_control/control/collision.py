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
- STOP: bring each joint k from its position q_c and speed v_c at the collision to rest on a smooth
  deceleration (a cubic: no step of the acceleration at either end) in its own stop time T_k,
  v_c T_k / 2 further on, and hold there: the computed torque on that reference. T_k is the shortest
  in which the torque M_ik a_k that joint k's deceleration asks of each drive i (M: the inertia at
  the collision, the rotors' with it) stays within RATE_SHARE (half) of drive i's effort limit (the
  cubic's largest deceleration is 1.5 |v_k| / T_k) and changes within half of its torque-rate limit
  (the cubic's jerk, 6 |v_k| / T_k^2 at either end), and no longer than `stop_time`. From 0.94 rad/s
  arm7's joints stop in 74, 129, 101, 97, 19, 34 and 9 ms; over arm7, Panda, UR5, xArm7 and Unitree
  Z1 the shoulders and elbows (joints 1-3) take 53-176 ms, the wrists' last joints 2-14 ms.
  One stop time in seconds for every joint is wrong both ways. Short, it asks the heavy joints for
  more torque rate than the drives have: a reference at rest at q_c at once asks for a step of
  kd v_c; the torque-rate limit (and the drives' effort limits) spread it joint by joint, which breaks
  the computed torque's decoupling: stopped at the demo sine's speed peak in MuJoCo, arm7, UR5, xArm7
  and Unitree Z1 reached 1.4, 1.7, 2.9 and 5.9 times their speed at the collision and went 43-93 mrad
  past the hold (a reflex on UR5 spun up to 33 rad/s). Long (0.2 s), it keeps the light joints going
  while a real impact goes on pushing them: 30 N for 50 ms across arm7's link 4 drives its joint 6,
  through the inertia's coupling, from 1.04 to 1.53 rad/s while its reference is still at 0.9 of its
  speed: 1.48 times its speed at the detection (1.64 for the same impulse 0.2 s later in the sine;
  Panda 1.38 and 1.53).
  While the arm is pushed (in_contact: a residual above its lower threshold) the stop gives way: the
  reference's position is the arm's (q_c moves with it), so that the position gain stores no
  deflection to swing the arm back with when the push ends, while the damping still brakes each
  joint toward the stop's speed; the stop and its hold go on from where the push has left the arm.
  Held against the push, the short stops let it carry arm7's and Panda's wrists 22-29 mrad past
  their hold.
  Measured in MuJoCo with the controller's defaults (test_collision_reactions.py): latched at the
  sine's speed peak with no force, on all five arms no joint faster than 1.03 times its speed at the
  collision, a stop at most 2 mrad past its hold, a reflex 17-19.5 mrad (its retreat takes the arm
  back behind where its short stop came to rest); after the impulse above, either way, across arm7's
  and Panda's link 4 and UR5's forearm, at the speed peak and 0.2 s later (detected within 3 ms by
  the test's observer and thresholds), at most 1.15 times the speed at the detection, 11 mrad past
  the hold, at rest 1 s after. On the light wrists of xArm7 and Z1 the same impulse (on Z1's link 3)
  alone drives a joint to 1.9-3.1 and 2.3-12.6 times its speed at the detection through the
  inertia's coupling (xArm7's joint 6 from 0.74 to 2.16 rad/s, its reference at rest after 26 ms):
  beyond what a reference can hold at these gains;
- FLOAT: gravity and damping only, the computed torque of a = -float_damping v (rnea(q, v, a):
  g(q), C(q, v) v and M(q) a): the arm yields to the push, each joint damped at the rate
  float_damping [1/s] whatever its inertia. A damping torque -d v of one gain d for every joint
  is unstable on a light wrist sampled at 1 kHz (d dt / I over 1: xArm7's joint 7 chattered at 700
  reversals per second with d = 2 N m s/rad);
- REFLEX: the stop (giving way to a push as it does), and with it a retreat along the residual's
  direction, distance r / |r| reached over `duration` on a quintic (zero velocity and acceleration at
  both ends), then hold there;
- REPORT: detect and report only, the control law goes on.
Every reaction's command passes the torque-rate limit like any other (safety.finish_command).
"""
import math

from ..jit import njit
from .flags import (S_COLLIDED, S_COLLISION_ACCEL_GAIN, S_COLLISION_JOINT, S_COLLISION_LEVEL, S_COLLISION_TIME,
                    S_COLLISIONS, S_CONTACTS, S_DETECT_FROM, S_DT, S_STOP_TIME, S_T)

REPORT, STOP, FLOAT, REFLEX = range(4)
REACTIONS = ("report", "stop", "float", "reflex")
NONE, CONTACT, COLLISION = range(3)
SETTLING = 5.0      # observer time constants after a restart before detection (the residual within e^-5)
RATE_SHARE = 0.5    # of a drive's torque-rate and effort limits, the most one joint's stop may ask (the
                    # rest for the other joints' stops and the feedback's corrections)


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
def start_reaction(s, q, v, residual, mask, M, max_step, effort_limit, q_c, v_c, direction, stop_times):
    """Latch the collision (s[S_COLLIDED]): q_c = q, v_c = v on the controlled joints, the retreat
    direction r / |r| over them, and each joint's stop time (stop_times) from the inertia M at the
    collision (with the rotors'), the drives' torque steps max_step per sample of s[S_DT] and their
    effort limits."""
    s[S_COLLIDED] = 1.0
    norm = 0.0
    for k in range(q.shape[0]):
        norm += (residual[k] * mask[k]) ** 2
    norm = math.sqrt(norm)
    for k in range(q.shape[0]):
        q_c[k] = q[k]
        v_c[k] = v[k] * mask[k]
        direction[k] = residual[k] * mask[k] / norm if norm > 0.0 else 0.0
    joint_stop_times(s[S_STOP_TIME], s[S_DT], M, v_c, max_step, effort_limit, mask, stop_times)


@njit(cache=True, nogil=True)
def joint_stop_times(longest, dt, M, v_c, max_step, effort_limit, mask, stop_times):
    """Each joint's stop time T_k (module docstring): the cubic from v_k to rest asks of every drive i
    the torque M_ik a_k, its deceleration a_k at most 1.5 |v_k| / T_k and changing at most at
    6 |v_k| / T_k^2 per second; T_k is the shortest that keeps that torque and its rate within the
    share RATE_SHARE of drive i's effort limit and torque-rate limit (max_step / dt) on every
    controlled joint i, and no longer than `longest`."""
    n = v_c.shape[0]
    for k in range(n):
        rate_load = 0.0         # max_i |M_ik| / (the torque-rate limit of drive i) [s^3 / rad]
        effort_load = 0.0       # max_i |M_ik| / (the effort limit of drive i) [s^2 / rad]
        for i in range(n):
            if mask[i] == 0.0:
                continue
            if max_step[i] > 0.0 and dt > 0.0:
                rate_load = max(rate_load, abs(M[i, k]) * dt / max_step[i])
            if effort_limit[i] > 0.0:
                effort_load = max(effort_load, abs(M[i, k]) / effort_limit[i])
        speed = abs(v_c[k])
        shortest = max(math.sqrt(6.0 * speed * rate_load / RATE_SHARE), 1.5 * speed * effort_load / RATE_SHARE)
        stop_times[k] = shortest if shortest < longest else longest     # (a NaN inertia: the longest)


@njit(cache=True, nogil=True)
def in_contact(s, residual, lower, acceleration, mask):
    """Whether a controlled joint's residual is above its lower threshold (grown by the acceleration,
    as in detect): the arm is being pushed."""
    gain = s[S_COLLISION_ACCEL_GAIN]
    for k in range(residual.shape[0]):
        if mask[k] != 0.0 and abs(residual[k]) > lower[k] + gain * abs(acceleration[k]):
            return True
    return False


@njit(cache=True, nogil=True)
def reaction_reference(elapsed, stop_times, duration, distance, q, giving_way, q_c, v_c, direction, q_r, v_r, a_r):
    """The joint reference of STOP (distance 0) and REFLEX `elapsed` seconds after the collision, the
    sum of two motions (module docstring):
    - the stop: joint k from q_c at v_c to rest in its stop time T (stop_times), at the speed
      v_c (1 - s(y)), y = elapsed / T, s the cubic 3 y^2 - 2 y^3 (no acceleration at either end):
      q_c + v_c T (y - y^3 + y^4 / 2), at rest v_c T / 2 beyond q_c;
    - the retreat: distance h(x) direction, x = elapsed / duration, h the quintic
      10 x^3 - 15 x^4 + 6 x^5 (at rest at both ends), then distance direction at rest.
    While `giving_way` (the arm is being pushed) the reference's position is the arm's, q: q_c moves
    by the difference, so that the stop and the retreat go on from where the push has taken the arm."""
    x = min(max(elapsed / duration, 0.0), 1.0) if duration > 0.0 else 1.0
    x2 = x * x
    h = x2 * x * (10.0 - 15.0 * x + 6.0 * x2)
    dh = 30.0 * x2 * (1.0 - x) * (1.0 - x)
    ddh = 60.0 * x * (1.0 - x) * (1.0 - 2.0 * x)
    speed = distance / duration if duration > 0.0 else 0.0
    rate = speed / duration if duration > 0.0 else 0.0
    for k in range(q_c.shape[0]):
        stop_time = stop_times[k]
        y = min(max(elapsed / stop_time, 0.0), 1.0) if stop_time > 0.0 else 1.0
        y2 = y * y
        travel = stop_time * (y - y2 * y + 0.5 * y2 * y2)
        slowing = 1.0 - y2 * (3.0 - 2.0 * y)
        braking = -6.0 * y * (1.0 - y) / stop_time if stop_time > 0.0 else 0.0
        q_r[k] = q_c[k] + v_c[k] * travel + distance * direction[k] * h
        if giving_way:
            q_c[k] += q[k] - q_r[k]
            q_r[k] = q[k]
        v_r[k] = v_c[k] * slowing + speed * direction[k] * dh
        a_r[k] = v_c[k] * braking + rate * direction[k] * ddh
