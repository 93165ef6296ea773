"""Cartesian impedance and collision handling in the compiled tick (control/cartesian_impedance.py,
control/collision.py, composed by control/tick.py), against independent oracles: the law's torque
against the formula evaluated with Pinocchio's M, J, C v + g; closed loops against MuJoCo (an
independent engine, the robot's true state the tick never reads but through its joint states)."""
import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from dyn_control.control import tick as T
from dyn_control.control.collision import FLOAT, REFLEX, REPORT, STOP
from dyn_control.control.trajectory import Trajectory
from dyn_control.simulation import MujocoSimulator
from oracles import pin_q, swap_halves

URDF = dc.bundled_urdf("arm7")
FRAME = "arm7_tool"
Q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
DT = 1e-3
STIFFNESS = np.array([30.0, 30.0, 30.0, 500.0, 500.0, 500.0])     # [N m/rad] x 3, [N/m] x 3


@pytest.fixture(scope="module")
def model():
    return dc.load_urdf(URDF)


@pytest.fixture(scope="module")
def pin_model():
    return pin.buildModelFromUrdf(URDF)


def make_tick(model, frame=FRAME, window=20):
    tick = T.ControllerTick(model, np.arange(model.nv), frame, window)
    tick.warm_up()
    f, s = tick.f, tick.s
    f.kp[:], f.kd[:], f.observer_gain[:] = 400.0, 40.0, 100.0
    f.stiffness[:] = STIFFNESS
    f.nullspace_stiffness[:] = 10.0
    f.nullspace_damping[:] = 2.0 * np.sqrt(10.0)
    f.posture[:] = Q0                    # the node's default: the posture at activation
    f.max_step[:] = 1000.0 * DT          # 1 N m per ms
    s[T.S_MODE] = T.CARTESIAN_MODE
    s[T.S_DAMPING_RATIO] = 1.0
    s[T.S_TARGET_ALPHA] = 1.0 - np.exp(-DT / 0.1)   # the equilibrium follows the target in 0.1 s
    s[T.S_ESTIMATE] = 1.0
    return tick


def feed(tick, t, q, v, reset=False, dt=DT):
    f, s = tick.f, tick.s
    f.q[:], f.v[:] = q, v
    s[T.S_T], s[T.S_DT], s[T.S_NEW_SAMPLE], s[T.S_RESET] = t, dt, 1.0, float(reset)
    if reset:
        s[T.S_ANCHOR] = 1.0
    tick.tick()


# ---------------------------------------------------------------------------------------------
# the law against its formula, evaluated with Pinocchio


def pin_task_quantities(pin_model, q, v, frame):
    data = pin_model.createData()
    pq = pin_q(pin_model, q)
    frame_id = pin_model.getFrameId(frame)
    pin.computeJointJacobians(pin_model, data, pq)
    pin.updateFramePlacements(pin_model, data)
    J = swap_halves(pin.getFrameJacobian(pin_model, data, frame_id, pin.LOCAL_WORLD_ALIGNED))
    M = pin.crba(pin_model, data, pq)
    M = np.triu(M) + np.triu(M, 1).T
    bias = pin.rnea(pin_model, data, pq, v, np.zeros(pin_model.nv))
    pose = data.oMf[frame_id]
    return J, M, bias, pose.rotation.copy(), pose.translation.copy()


@pytest.mark.kernels
@pytest.mark.parametrize("damping", [0.0, 0.05])
def test_the_cartesian_torque_is_the_impedance_law_with_pinocchio_quantities(model, pin_model, damping):
    rng = np.random.default_rng(4)
    tick = make_tick(model)
    f, s = tick.f, tick.s
    s[T.S_SINGULAR_DAMPING] = damping
    s[T.S_TARGET_ALPHA] = 0.0                    # the equilibrium stays where it is put
    s[T.S_DAMPING_RATIO] = 0.7
    f.max_step[:] = np.inf
    f.effort_limit[:] = np.inf
    for trial in range(3):
        q = Q0 + rng.uniform(-0.3, 0.3, model.nv)
        v = rng.uniform(-1.0, 1.0, model.nv)
        feed(tick, 0.0, q, v, reset=True)        # anchors: the equilibrium at the pose
        J, M, bias, R, p = pin_task_quantities(pin_model, q, v, FRAME)
        np.testing.assert_allclose(f.pose_R, R, atol=1e-12)
        np.testing.assert_allclose(f.pose_p, p, atol=1e-12)
        # move the equilibrium away: a rotation about a random axis and a translation
        axis = rng.normal(size=3)
        rotation = pin.exp3(0.2 * axis / np.linalg.norm(axis))
        f.equilibrium_R[:] = rotation @ R
        f.equilibrium_p[:] = p + rng.uniform(-0.05, 0.05, 3)
        f.target_wrench[:] = rng.normal(size=6)
        f.posture[:] = Q0
        feed(tick, 0.001, q, v)
        e = np.concatenate([pin.log3(R @ f.equilibrium_R.T), p - f.equilibrium_p])
        Lambda = np.linalg.inv(J @ np.linalg.solve(M, J.T) + damping ** 2 * np.eye(6))
        D = 2.0 * 0.7 * np.sqrt(np.diag(Lambda) * STIFFNESS)
        force = -STIFFNESS * e - D * (J @ v) + f.target_wrench
        J_bar = np.linalg.solve(M, J.T) @ Lambda
        tau0 = 10.0 * (Q0 - q) - 2.0 * np.sqrt(10.0) * v
        expected = J.T @ force + (np.eye(model.nv) - J.T @ J_bar.T) @ tau0 + bias
        np.testing.assert_allclose(f.pose_error, e, atol=1e-10)
        np.testing.assert_allclose(f.tau, expected, rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# closed loops against MuJoCo


def run(tick, sim, seconds, t0=0.0, wrench=None, frame=None, every=None):
    """Tick at 1 kHz against the simulator for `seconds`; wrench(t) -> (6,) or None; returns
    (t, q, tau, pose_p) per tick."""
    records = []
    for k in range(round(seconds / DT)):
        t = t0 + k * DT
        feed(tick, t, sim.q, sim.v, reset=(t == 0.0))
        w = wrench(t) if wrench is not None else None
        sim.step(tick.f.tau, w, frame if w is not None else None)
        records.append((t, sim.q.copy(), tick.f.tau.copy(), tick.f.pose_p.copy()))
        if every is not None:
            every(t)
    return records


def frame_position(pin_model, q, frame=FRAME):
    data = pin_model.createData()
    pin.framesForwardKinematics(pin_model, data, pin_q(pin_model, q))
    return data.oMf[pin_model.getFrameId(frame)].translation.copy()


def test_a_10_N_push_displaces_the_frame_by_F_over_K(model, pin_model):
    tick = make_tick(model)
    sim = MujocoSimulator(model, URDF, DT, Q0)
    run(tick, sim, 1.0)
    rest = frame_position(pin_model, sim.q)
    force = np.array([0.0, 6.0, -8.0])            # 10 N
    run(tick, sim, 3.0, t0=1.0, wrench=lambda t: np.concatenate([np.zeros(3), force]), frame=FRAME)
    displacement = frame_position(pin_model, sim.q) - rest
    expected = force / STIFFNESS[3:]               # 2 cm
    print("displacement [mm]", displacement * 1e3, "expected", expected * 1e3)
    assert np.linalg.norm(displacement - expected) < 0.05 * np.linalg.norm(expected)


def test_a_5_cm_step_converges_without_overshoot_the_posture_held_and_no_torque_step(model, pin_model):
    tick = make_tick(model)
    f, s = tick.f, tick.s
    sim = MujocoSimulator(model, URDF, DT, Q0)
    run(tick, sim, 0.5)
    start = frame_position(pin_model, sim.q)
    posture = f.posture.copy()
    step = np.array([0.05, 0.0, 0.0])
    f.target_R[:] = f.equilibrium_R
    f.target_p[:] = start + step
    s[T.S_TARGET_SET] = 1.0
    limited = s[T.S_RATE_LIMITED]
    nullspace_errors = []
    pin_data = pin_model.createData()

    def nullspace_error(t):
        # the posture error the nullspace term acts on, (I - J^T J_bar^T) (q - q_n) with J_bar =
        # M^-1 J^T Lambda from Pinocchio's M and J (zero where the posture is held: the rest of
        # q - q_n is what the end effector's motion needs)
        pq = pin_q(pin_model, sim.q)
        J = pin.computeFrameJacobian(pin_model, pin_data, pq, pin_model.getFrameId(FRAME), pin.LOCAL_WORLD_ALIGNED)
        M = pin.crba(pin_model, pin_data, pq)
        M = np.triu(M) + np.triu(M, 1).T
        Minv_JT = np.linalg.solve(M, J.T)
        J_bar = Minv_JT @ np.linalg.inv(J @ Minv_JT)
        nullspace_errors.append(np.abs((np.eye(model.nv) - J.T @ J_bar.T) @ (sim.q - posture)).max())

    records = run(tick, sim, 2.0, t0=0.5, every=nullspace_error)
    progress = np.array([(frame_position(pin_model, q) - start) @ step / (step @ step) for _, q, _, _ in records])
    torques = np.array([tau for _, _, tau, _ in records])
    print("progress max", progress.max(), "final", progress[-1], "nullspace error max", max(nullspace_errors),
          "largest torque step", np.abs(np.diff(torques, axis=0)).max())
    assert abs(progress[-1] - 1.0) < 0.02                     # converged to the target within 1 mm
    assert progress.max() < 1.02                              # critically damped: no overshoot (2 % slack)
    assert max(nullspace_errors) < 0.02                       # [rad], all along the motion
    assert s[T.S_RATE_LIMITED] == limited                     # the law's own torque never needed the limit
    assert np.abs(np.diff(torques, axis=0)).max() <= 1.0 + 1e-9


# ---------------------------------------------------------------------------------------------
# collision detection, isolation and reaction (joint mode, the demo's fast sine)

AMPLITUDE, FREQUENCY = 0.3, 0.5      # the demo's sine
LOWER, UPPER = 1.0, 3.0              # [N m]: 8 and 25 times the largest residual of the free motion


def collision_tick(model, reaction):
    tick = make_tick(model, window=2)
    f, s = tick.f, tick.s
    f.observer_gain[:] = 300.0          # a residual time constant of 3.3 ms
    s[T.S_MODE] = T.JOINT_MODE
    s[T.S_OMEGA] = 2 * np.pi * FREQUENCY
    f.centre[:] = Q0
    f.amplitude[:] = AMPLITUDE
    f.lower_threshold[:] = LOWER
    f.upper_threshold[:] = UPPER
    f.float_damping[:] = 5.0
    s[T.S_COLLISION_ON] = 1.0
    s[T.S_REACTION] = reaction
    s[T.S_COLLISION_ACCEL_GAIN] = 0.0
    s[T.S_REFLEX_DISTANCE] = 0.1
    s[T.S_REFLEX_DURATION] = 0.3
    s[T.S_STOP_TIME] = 0.2
    s[T.S_BLEND_TIME], s[T.S_BLEND_SPEED], s[T.S_ERROR_LIMIT] = 0.1, 1.0, np.inf
    return tick


@pytest.mark.parametrize("motion", ["sine", "trajectory"])
def test_the_demo_motions_at_full_speed_give_no_false_detection_over_60_s(model, motion):
    """The demo's sine (0.3 rad at 0.5 Hz on every joint, up to 0.94 rad/s), and a trajectory of
    rest-to-rest quintics between postures 0.6 rad apart every second (up to 1.1 rad/s), as the
    trajectory input samples it."""
    tick = collision_tick(model, STOP)
    f, s = tick.f, tick.s
    sim = MujocoSimulator(model, URDF, DT, Q0)
    largest = []
    if motion == "trajectory":
        times = np.arange(1.0, 61.0)
        positions = Q0 + AMPLITUDE * np.where(np.arange(60) % 2 == 0, 1.0, -1.0)[:, None] * np.ones(model.nv)
        zero = np.zeros_like(positions)
        trajectory = Trajectory.through(0.0, (Q0, np.zeros(model.nv), np.zeros(model.nv)), np.arange(model.nv),
                                        times, positions, zero, zero)
        s[T.S_POINT] = 1.0

    def watch(t):
        largest.append(np.abs(f.tau_ext).max())
        if motion == "trajectory":
            trajectory.sample(t + DT, f.q_d, f.v_d, f.a_d)     # the next tick's reference

    if motion == "trajectory":
        trajectory.sample(0.0, f.q_d, f.v_d, f.a_d)
    run(tick, sim, 60.0, every=watch)
    print(motion, "largest residual [N m]", max(largest[100:]))
    assert s[T.S_CONTACTS] == 0 and s[T.S_COLLISIONS] == 0 and s[T.S_COLLIDED] == 0


@pytest.mark.parametrize("reaction", [REPORT, STOP, FLOAT, REFLEX], ids=["report", "stop", "float", "reflex"])
def test_a_30_N_impulse_on_link_4_is_detected_within_10_ms_isolated_and_reacted_to(model, pin_model, reaction):
    tick = collision_tick(model, reaction)
    f, s = tick.f, tick.s
    sim = MujocoSimulator(model, URDF, DT, Q0)
    hit = (2.0, 2.05)                      # a fast part of the sine
    detected = []

    def push(t):
        # 30 N at the middle of link 4 (between the origins of links 4 and 5), across the link and
        # joint 4's axis: as the wrench [n; f] at link 4's origin
        if not hit[0] <= t < hit[1]:
            return None
        data = pin_model.createData()
        pin.framesForwardKinematics(pin_model, data, pin_q(pin_model, sim.q))
        link4, link5 = (data.oMf[pin_model.getFrameId(name)] for name in ("arm7_link4", "arm7_link5"))
        segment = link5.translation - link4.translation
        axis = link4.rotation @ model.screw_axes[3, :3]
        force = np.cross(axis, segment)
        force *= 30.0 / np.linalg.norm(force)
        return np.concatenate([np.cross(0.5 * segment, force), force])

    run(tick, sim, 3.5, wrench=push, frame="arm7_link4",
        every=lambda t: detected.append(t) if s[T.S_COLLISIONS] and not detected else None)
    print("detected after", (detected[0] - hit[0]) * 1e3, "ms; joint", s[T.S_COLLISION_JOINT])
    assert detected and detected[0] - hit[0] <= 0.010
    assert model.joint_names[int(s[T.S_COLLISION_JOINT])] == "arm7_joint4"      # link 4's joint
    assert s[T.S_COLLISIONS] == 1
    if reaction == REPORT:
        assert s[T.S_COLLIDED] == 0
        return
    assert s[T.S_COLLIDED] == 1
    # each joint stopped from its speed at the collision in its stop time T_k, v_c T_k / 2 beyond q_c
    # (q_c moved by the push the stop gave way to; the sine goes on elsewhere: 0.3 rad away by now)
    stopped = f.q_c + 0.5 * f.stop_times * f.v_c
    if reaction == STOP:
        assert np.abs(sim.q - stopped).max() < 0.01
        assert np.abs(sim.v).max() < 0.01
    elif reaction == REFLEX:
        assert np.abs(sim.q - (stopped + 0.1 * f.retreat)).max() < 0.01
        assert np.abs(sim.v).max() < 0.01
    else:
        # floating: gravity and damping only, the computed torque of a = -5 v (Pinocchio's RNEA), the
        # rate limit long done
        data = pin_model.createData()
        expected = pin.rnea(pin_model, data, pin_q(pin_model, sim.q), sim.v, -5.0 * sim.v)
        feed(tick, 3.5, sim.q, sim.v)
        np.testing.assert_allclose(f.tau, expected, atol=1e-6)


@pytest.mark.kernels
def test_the_thresholds_grow_with_the_acceleration_and_isolation_takes_the_last_joint_above_the_lower():
    from dyn_control.control.collision import COLLISION, CONTACT, NONE, detect
    s = np.zeros(T.NS)
    s[T.S_COLLISION_ACCEL_GAIN] = 0.5           # [N m s^2/rad]
    lower, upper = np.full(4, 1.0), np.full(4, 3.0)
    mask, snapshot = np.ones(4), np.zeros(4)
    residual = np.array([2.5, 0.0, 1.5, 0.2])
    # at rest: joint 0 and 2 above the lower threshold, none above the upper: a contact
    assert not detect(s, residual, lower, upper, np.zeros(4), mask, snapshot)
    assert s[T.S_COLLISION_LEVEL] == CONTACT and s[T.S_CONTACTS] == 1
    # accelerating joint 2 at 2 rad/s^2 lifts its lower threshold to 2 N m; joint 0 at 4 rad/s^2 to 3
    s[T.S_COLLISION_LEVEL] = NONE
    assert not detect(s, residual, lower, upper, np.array([4.0, 0.0, 2.0, 0.0]), mask, snapshot)
    assert s[T.S_COLLISION_LEVEL] == NONE
    # a residual of 4 N m on joint 1 at rest: a collision, isolated to joint 2 (the last one above its
    # lower threshold), the residual kept
    residual[1] = 4.0
    s[T.S_T] = 1.25
    assert detect(s, residual, lower, upper, np.zeros(4), mask, snapshot)
    assert s[T.S_COLLISION_LEVEL] == COLLISION and s[T.S_COLLISIONS] == 1
    assert s[T.S_COLLISION_JOINT] == 2 and s[T.S_COLLISION_TIME] == 1.25
    np.testing.assert_array_equal(snapshot, residual)
    # the same level again is no new collision; a joint not controlled is not judged
    assert not detect(s, residual, lower, upper, np.zeros(4), mask, snapshot)
    mask[1] = 0.0
    s[T.S_COLLISION_LEVEL] = NONE
    assert not detect(s, residual, lower, upper, np.zeros(4), mask, snapshot)


@pytest.mark.kernels
def test_a_collision_lasts_until_every_residual_is_below_its_lower_threshold():
    """A residual that rings about the upper threshold after an impact is one collision: the level
    stays COLLISION while any joint is above its lower threshold; a new one counts after NONE."""
    from dyn_control.control.collision import COLLISION, NONE, detect
    s = np.zeros(T.NS)
    lower, upper = np.full(3, 1.0), np.full(3, 3.0)
    mask, snapshot, zero = np.ones(3), np.zeros(3), np.zeros(3)
    levels = []
    for size in (4.0, 2.0, 3.5, 1.5, 4.0, 0.5, 4.0):
        detect(s, np.array([0.0, size, 0.0]), lower, upper, zero, mask, snapshot)
        levels.append(s[T.S_COLLISION_LEVEL])
    assert levels == [COLLISION] * 5 + [NONE, COLLISION]
    assert s[T.S_COLLISIONS] == 2 and s[T.S_CONTACTS] == 2
