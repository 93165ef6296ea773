"""Simulators against independent oracles: Pinocchio (masses, M(q), frame Jacobians, ABA, energy),
scipy's DOP853 on Pinocchio's forward dynamics (trajectories), and dc.aba for MuJoCo's first step."""
import mujoco
import numpy as np
import pinocchio as pin
import pytest
from scipy.integrate import solve_ivp

import dyn_control as dc
from dyn_control.simulation import BuiltinSimulator, MujocoSimulator
from oracles import pin_q, random_state, robot_urdf, swap_halves

DT = 1e-3
Q_ARM7 = np.array([0.0, -0.6, 0.0, -2.2, 0.0, 1.8, 0.8])
WRENCH = np.array([0.3, -0.2, 0.1, 5.0, -3.0, 2.0])   # [n; f] at the tool frame origin, root axes


def urdf_path(name):
    return dc.bundled_urdf(name) if name == "arm7" else robot_urdf(name)


@pytest.fixture(scope="module", params=["arm7", "ur5_robot"])
def robot(request):
    path = urdf_path(request.param)
    return path, dc.load_urdf(path), pin.buildModelFromUrdf(path)


@pytest.fixture(scope="module")
def arm7():
    path = dc.bundled_urdf("arm7")
    return path, dc.load_urdf(path), pin.buildModelFromUrdf(path)


def make_simulator(backend, model, path, q0, v0, damping=None):
    if backend == "builtin":
        return BuiltinSimulator(model, DT, q0, v0, damping=damping)
    return MujocoSimulator(model, path, DT, q0, v0, damping=damping)


def pin_frame_jacobian(pin_model, q, frame):
    """LOCAL_WORLD_ALIGNED frame Jacobian, angular rows first."""
    J = pin.computeFrameJacobian(pin_model, pin_model.createData(), pin_q(pin_model, q),
                                 pin_model.getFrameId(frame), pin.LOCAL_WORLD_ALIGNED)
    return swap_halves(J, axis=0)


def test_mujoco_keeps_the_urdf_masses_and_inertias(robot):
    path, model, pin_model = robot
    sim = MujocoSimulator(model, path, DT)
    m = sim.mj_model
    # each of our bodies is a MuJoCo body plus the fixed links welded to it
    for i, body in enumerate(model.body_names):
        welded = m.body_weldid == m.body(body).id
        assert m.body_mass[welded].sum() == pytest.approx(pin_model.inertias[i + 1].mass, rel=1e-12)
    q, _, _ = random_state(model, np.random.default_rng(0))
    sim.reset(q)
    mujoco.mj_forward(m, sim.mj_data)
    M_mj = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, sim.mj_data, M_mj)
    dofs = [m.joint(name).dofadr[0] for name in model.joint_names]
    M_pin = pin.crba(pin_model, pin_model.createData(), pin_q(pin_model, q))
    M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
    np.testing.assert_allclose(M_mj[np.ix_(dofs, dofs)], M_pin, rtol=1e-10, atol=1e-12)


def test_mujoco_first_step_from_rest_is_dc_aba(robot):
    """One implicitfast step from rest: (v1 - 0) / dt is the forward dynamics at the start, with the
    wrench entering as J^T w (Pinocchio's Jacobian)."""
    path, model, pin_model = robot
    frame = model.frame_names[-1]
    rng = np.random.default_rng(1)
    q0, _, _ = random_state(model, rng)
    tau = rng.normal(scale=2.0, size=model.nv)
    for wrench in (None, WRENCH):
        sim = MujocoSimulator(model, path, DT, q0)
        sim.step(tau, wrench, frame)
        total = tau if wrench is None else tau + pin_frame_jacobian(pin_model, q0, frame).T @ wrench
        expected = dc.aba(model, model.create_data(), q0, np.zeros(model.nv), total)
        np.testing.assert_allclose(sim.v / DT, expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max())
        np.testing.assert_allclose(sim.q, q0 + DT * sim.v, atol=1e-15)
        assert sim.time == pytest.approx(DT)
        np.testing.assert_array_equal(sim.effort, tau)


@pytest.mark.parametrize("backend", ["builtin", "mujoco"])
def test_applied_joint_torque_is_pinocchio_J_transpose_w(robot, backend):
    path, model, pin_model = robot
    frame = model.frame_names[-1]
    q0, _, _ = random_state(model, np.random.default_rng(2))
    sim = make_simulator(backend, model, path, q0, None)
    expected = pin_frame_jacobian(pin_model, q0, frame).T @ WRENCH
    np.testing.assert_allclose(sim.applied_joint_torque(WRENCH, frame), expected, rtol=1e-10, atol=1e-12)


def reference_trajectory(pin_model, q0, v0, tau, wrench, frame, damping, seconds):
    """The exact motion (DOP853, tolerance 1e-11) of Pinocchio's forward dynamics with constant
    torques, the wrench at `frame` and viscous damping."""
    data = pin_model.createData()
    frame_id = pin_model.getFrameId(frame)
    nv = pin_model.nv

    def rhs(_, x):
        q, v = x[:nv], x[nv:]
        J = pin.computeFrameJacobian(pin_model, data, q, frame_id, pin.LOCAL_WORLD_ALIGNED)
        J = swap_halves(J, axis=0)
        return np.concatenate([v, pin.aba(pin_model, data, q, v, tau + J.T @ wrench - damping * v)])

    solution = solve_ivp(rhs, (0.0, seconds), np.concatenate([q0, v0]), method="DOP853", rtol=1e-11,
                         atol=1e-11)
    return solution.y[:nv, -1], solution.y[nv:, -1]


@pytest.mark.parametrize("backend, dt, damping, q_tol, v_tol", [
    ("builtin", DT, 0.0, 1e-8, 1e-7),      # RK4: fourth order
    ("builtin", DT, 0.5, 2e-4, 1e-3),      # damping split off: second order
    ("mujoco", DT / 10, 0.0, 5e-3, 5e-2),  # implicitfast: first order, so a finer step
    ("mujoco", DT / 10, 0.5, 5e-3, 5e-2),
])
def test_trajectory_follows_the_exact_motion(arm7, backend, dt, damping, q_tol, v_tol):
    """0.3 s from a moving state with torques and a tool wrench, against the exact motion."""
    path, model, pin_model = arm7
    rng = np.random.default_rng(3)
    v0 = rng.normal(size=model.nv)
    tau = rng.normal(scale=0.3, size=model.nv)
    q_ref, v_ref = reference_trajectory(pin_model, Q_ARM7, v0, tau, WRENCH, "arm7_tool", damping, 0.3)
    if backend == "builtin":
        sim = BuiltinSimulator(model, dt, Q_ARM7, v0, damping=damping)
    else:
        sim = MujocoSimulator(model, path, dt, Q_ARM7, v0, damping=damping)
    for _ in range(int(round(0.3 / dt))):
        sim.step(tau, WRENCH, "arm7_tool")
    q_error, v_error = np.abs(sim.q - q_ref).max(), np.abs(sim.v - v_ref).max()
    print(f"{backend}, dt {dt}, damping {damping}: max |q - q_exact| {q_error:.1e} rad, "
          f"|v - v_exact| {v_error:.1e} rad/s")
    assert q_error < q_tol and v_error < v_tol


def test_builtin_free_motion_keeps_pinocchio_energy(arm7):
    """Free fall from a moving state for 1 s (the wrist reaches tens of rad/s): total energy
    (Pinocchio) constant to 1e-4 J (semi-implicit Euler: about 10 J)."""
    _, model, pin_model = arm7
    data = pin_model.createData()
    rng = np.random.default_rng(4)
    sim = BuiltinSimulator(model, DT, rng.uniform(-1.0, 1.0, model.nv), rng.normal(size=model.nv))

    def energy():
        return (pin.computeKineticEnergy(pin_model, data, sim.q, sim.v)
                + pin.computePotentialEnergy(pin_model, data, sim.q))

    start = energy()
    drift = 0.0
    for _ in range(1000):
        sim.step(np.zeros(model.nv))
        drift = max(drift, abs(energy() - start))
    print(f"energy {start:.2f} J, drift {drift:.1e} J")
    assert drift < 1e-4


@pytest.mark.parametrize("backend", ["builtin", "mujoco"])
def test_stiff_damping_is_stable_and_dissipative(arm7, backend):
    """Damping 20 N m s/rad on every joint (dt D / M >> 2 at the wrist, where an explicit step
    diverges), no gravity: the kinetic energy (Pinocchio) never grows and decays to nothing."""
    path, _, pin_model = arm7
    model = dc.load_urdf(path).with_gravity([0.0, 0.0, 0.0])
    data = pin_model.createData()
    sim = make_simulator(backend, model, path, Q_ARM7, np.ones(model.nv), damping=20.0)
    kinetic = [pin.computeKineticEnergy(pin_model, data, sim.q, sim.v)]
    for _ in range(300):
        sim.step(np.zeros(model.nv))
        kinetic.append(pin.computeKineticEnergy(pin_model, data, sim.q, sim.v))
    assert np.all(np.diff(kinetic) <= 1e-12 * kinetic[0])
    assert kinetic[-1] < 1e-3 * kinetic[0]


@pytest.mark.parametrize("backend", ["builtin", "mujoco"])
def test_reset_restarts_time_and_state(arm7, backend):
    path, model, _ = arm7
    sim = make_simulator(backend, model, path, Q_ARM7, None)
    for _ in range(5):
        sim.step(np.ones(model.nv))
    sim.reset(Q_ARM7, np.zeros(model.nv))
    assert sim.time == 0.0
    np.testing.assert_array_equal(sim.q, Q_ARM7)
    np.testing.assert_array_equal(sim.v, np.zeros(model.nv))


@pytest.mark.parametrize("backend", ["builtin", "mujoco"])
def test_bad_inputs_name_the_argument(arm7, backend):
    path, model, _ = arm7
    sim = make_simulator(backend, model, path, Q_ARM7, None)
    bad = np.zeros(model.nv)
    bad[1] = np.nan
    with pytest.raises(ValueError, match="tau"):
        sim.step(bad)
    with pytest.raises(ValueError, match="tau"):
        sim.step(np.zeros(3))
    with pytest.raises(ValueError, match="frame"):
        sim.step(np.zeros(model.nv), WRENCH)
    with pytest.raises(ValueError, match="frame"):
        sim.step(np.zeros(model.nv), WRENCH, "no_such_link")
    with pytest.raises(ValueError, match="wrench"):
        sim.applied_joint_torque(np.zeros(3), "arm7_tool")
    with pytest.raises(ValueError, match="q0"):
        make_simulator(backend, model, path, np.zeros(3), None)
    with pytest.raises(ValueError, match="damping"):
        make_simulator(backend, model, path, None, None, damping=-1.0)
    with pytest.raises(ValueError, match="dt"):
        BuiltinSimulator(model, 0.0) if backend == "builtin" else MujocoSimulator(model, path, 0.0)


def test_mujoco_refuses_a_urdf_that_is_not_the_model(arm7):
    _, model, _ = arm7
    with pytest.raises(ValueError, match="urdf_path"):
        MujocoSimulator(model, robot_urdf("ur5_robot"), DT)
    with pytest.raises(ValueError, match="urdf_path"):
        MujocoSimulator(model, "/nonexistent/robot.urdf", DT)
