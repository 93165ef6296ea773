"""The simulated robot's joint terms (armature, viscous and dry friction) and payload, in both
simulators.

Oracles: scipy's DOP853 on Pinocchio's forward dynamics with the armature set, the payload added to
its inertia and viscous friction as a torque (trajectories); MuJoCo as an independent plant; the
closed-form motion of one joint with dry friction (stick, slip, stop).
"""
import numpy as np
import pinocchio as pin
import pytest
from scipy.integrate import solve_ivp

import dyn_control as dc
from dyn_control.simulation import BuiltinSimulator, MujocoSimulator
from oracles import pin_q

DT = 1e-3
Q_ARM7 = np.array([0.0, -0.6, 0.0, -2.2, 0.0, 1.8, 0.8])
PAYLOAD = dict(mass=1.5, center_of_mass=[0.0, 0.01, 0.05], inertia=np.diag([2e-3, 2e-3, 3e-3]))
ARMATURE = np.array([0.3, 0.3, 0.2, 0.2, 0.05, 0.05, 0.02])
VISCOUS = np.array([1.0, 1.0, 0.8, 0.8, 0.3, 0.3, 0.1])

# one revolute joint about the vertical z axis (gravity exerts no torque on it): I about the axis
# 0.01 + 1.0 * 0.2^2 = 0.05 kg m^2, plus the armature
ONE_JOINT = """<robot name="one"><link name="base"/>
<joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
<limit lower="-100" upper="100" effort="10" velocity="10"/></joint>
<link name="arm"><inertial><origin xyz="0.2 0 0"/><mass value="1.0"/>
<inertia ixx="0.001" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>"""
F_C, I_A = 2.0, 0.02
INERTIA = 0.05 + I_A


@pytest.fixture(scope="module")
def one_joint(tmp_path_factory):
    path = tmp_path_factory.mktemp("urdf") / "one.urdf"
    path.write_text(ONE_JOINT)
    return str(path), dc.load_urdf(str(path)).with_joint_dynamics(armature=I_A, coulomb=F_C)


def make(backend, model, path, q0=None, v0=None):
    return BuiltinSimulator(model, DT, q0, v0) if backend == "builtin" else MujocoSimulator(model, path, DT, q0, v0)


def run(sim, tau, seconds):
    for _ in range(int(round(seconds / DT))):
        sim.step(tau)
    return sim.q.copy(), sim.v.copy()


def exact_motion(pin_model, q0, v0, tau, viscous, seconds):
    """DOP853 (tolerance 1e-11) on Pinocchio's ABA, torques held, viscous friction as a torque."""
    data = pin_model.createData()
    nv = pin_model.nv

    def rhs(_, x):
        return np.concatenate([x[nv:], pin.aba(pin_model, data, x[:nv], x[nv:], tau - viscous * x[nv:])])

    y = solve_ivp(rhs, (0.0, seconds), np.concatenate([q0, v0]), method="DOP853", rtol=1e-11, atol=1e-11).y
    return y[:nv, -1], y[nv:, -1]


@pytest.fixture(scope="module")
def loaded_arm7():
    """arm7 with armature, viscous friction and a 1.5 kg payload at the tool, ours and Pinocchio's."""
    path = dc.bundled_urdf("arm7")
    model = dc.load_urdf(path).with_joint_dynamics(armature=ARMATURE, viscous=VISCOUS)
    model = model.with_payload("arm7_tool", **PAYLOAD)
    pin_model = pin.buildModelFromUrdf(path)
    pin_model.armature[:] = ARMATURE
    frame = pin_model.frames[pin_model.getFrameId("arm7_tool")]
    pin_model.inertias[frame.parentJoint] += frame.placement.act(
        pin.Inertia(PAYLOAD["mass"], np.array(PAYLOAD["center_of_mass"]), PAYLOAD["inertia"]))
    return path, model, pin_model


def test_mujoco_takes_the_model_inertia_armature_and_payload(loaded_arm7):
    import mujoco
    path, model, pin_model = loaded_arm7
    sim = MujocoSimulator(model, path, DT, Q_ARM7)
    m, d = sim.mj_model, sim.mj_data
    mujoco.mj_forward(m, d)
    M_mj = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M_mj)
    dofs = [m.joint(name).dofadr[0] for name in model.joint_names]
    M_pin = pin.crba(pin_model, pin_model.createData(), pin_q(pin_model, Q_ARM7))
    np.testing.assert_allclose(M_mj[np.ix_(dofs, dofs)], np.triu(M_pin) + np.triu(M_pin, 1).T, rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_array_equal(m.dof_damping[dofs], VISCOUS)
    np.testing.assert_array_equal(m.dof_frictionloss, 0.0)


def test_builtin_and_mujoco_follow_the_exact_motion_with_joint_terms(loaded_arm7):
    """1 s from a moving state under constant torques (the loaded arm's gravity torque at the start
    plus a small offset; the arm swings by 2.8 rad): the builtin simulator (RK4 with the viscous flow
    split off, second order) within 2e-5 rad and 1e-4 rad/s of the exact motion, MuJoCo (implicitfast,
    first order at dt = 1 ms) within 1e-2 rad and 0.1 rad/s (measured 5e-3 and 6e-2: dt times the
    swing's accelerations of tens of rad/s^2), and so the two within 1e-2 rad and 0.1 rad/s of each
    other. An armature, viscous friction or payload missing in one of them would be off by more
    (leaving out one changes this motion by 0.9 to 3.8 rad)."""
    path, model, pin_model = loaded_arm7
    rng = np.random.default_rng(6)
    v0 = 0.3 * rng.normal(size=model.nv)
    tau = dc.gravity(model, model.create_data(), Q_ARM7) + rng.normal(scale=0.2, size=model.nv)
    q_ref, v_ref = exact_motion(pin_model, Q_ARM7, v0, tau, VISCOUS, 1.0)
    q_b, v_b = run(BuiltinSimulator(model, DT, Q_ARM7, v0), tau, 1.0)
    q_m, v_m = run(MujocoSimulator(model, path, DT, Q_ARM7, v0), tau, 1.0)
    errors = {"builtin": (np.abs(q_b - q_ref).max(), np.abs(v_b - v_ref).max()),
              "mujoco": (np.abs(q_m - q_ref).max(), np.abs(v_m - v_ref).max()),
              "builtin - mujoco": (np.abs(q_b - q_m).max(), np.abs(v_b - v_m).max())}
    print(f"motion {np.abs(q_ref - Q_ARM7).max():.2f} rad; " + "; ".join(
        f"{k}: |dq| {e[0]:.1e} rad, |dv| {e[1]:.1e} rad/s" for k, e in errors.items()))
    assert errors["builtin"][0] < 2e-5 and errors["builtin"][1] < 1e-4
    assert errors["mujoco"][0] < 1e-2 and errors["mujoco"][1] < 0.1
    assert errors["builtin - mujoco"][0] < 1e-2 and errors["builtin - mujoco"][1] < 0.1


@pytest.mark.parametrize("backend, tol", [("builtin", 1e-12), ("mujoco", 1e-4)])
def test_dry_friction_sticks(one_joint, backend, tol):
    """A torque below F_c does not move a joint at rest; nor does gravity move arm7 whose joints' dry
    friction exceeds their gravity torques (a coupled stick). MuJoCo's friction rows are softer."""
    path, model = one_joint
    for tau in (0.8 * F_C, -0.99 * F_C):
        q, v = run(make(backend, model, path), [tau], 1.0)
        assert abs(q[0]) < tol and abs(v[0]) < tol, (tau, q, v)
    path = dc.bundled_urdf("arm7")
    arm = dc.load_urdf(path)
    g = dc.gravity(arm, arm.create_data(), Q_ARM7)
    arm = arm.with_joint_dynamics(armature=ARMATURE, coulomb=1.25 * np.abs(g) + 0.05)
    q, v = run(make(backend, arm, path, Q_ARM7), np.zeros(arm.nv), 1.0)
    print(f"{backend}: arm7 held by dry friction moved {np.abs(q - Q_ARM7).max():.1e} rad in 1 s")
    assert np.abs(q - Q_ARM7).max() < 100 * tol and np.abs(v).max() < 100 * tol


@pytest.mark.parametrize("backend, rtol", [("builtin", 1e-10), ("mujoco", 2e-3)])
def test_dry_friction_slips_at_the_closed_form_rate(one_joint, backend, rtol):
    """From rest under |tau| > F_c: q = (tau - F_c sgn tau) t^2 / (2 I), I with the armature."""
    path, model = one_joint
    for tau in (2.0 * F_C, -1.5 * F_C):
        q, v = run(make(backend, model, path), [tau], 0.5)
        accel = (tau - np.sign(tau) * F_C) / INERTIA
        np.testing.assert_allclose(v, accel * 0.5, rtol=rtol)
        np.testing.assert_allclose(q, accel * 0.125, rtol=rtol if backend == "builtin" else 1e-2)


def test_builtin_dry_and_viscous_friction_closed_form(one_joint):
    """tau > F_c with viscous friction F_v from rest: v = (tau - F_c) / F_v (1 - exp(-F_v t / I))."""
    path, model = one_joint
    F_v = 0.3
    sim = BuiltinSimulator(model.with_joint_dynamics(viscous=F_v), DT)
    tau = 3.0 * F_C
    for t in (0.1, 0.3):
        run(sim, [tau], 0.1 if t == 0.1 else 0.2)
        v = (tau - F_C) / F_v * (1.0 - np.exp(-F_v * t / INERTIA))
        q = (tau - F_C) / F_v * (t - INERTIA / F_v * (1.0 - np.exp(-F_v * t / INERTIA)))
        # the viscous flow split off (Strang): second order, (dt F_v / I)^2 ~ 2e-5
        np.testing.assert_allclose(sim.v, v, rtol=1e-6)
        np.testing.assert_allclose(sim.q, q, rtol=5e-5)
    np.testing.assert_array_equal(sim.effort, [tau])  # the command, friction not included


@pytest.mark.parametrize("backend, atol", [("builtin", 1e-9), ("mujoco", 1e-3)])
def test_dry_friction_stops_a_moving_joint_and_holds_it(one_joint, backend, atol):
    """Sliding at v0 with no torque: deceleration F_c / I until it stops at q0 + v0^2 I / (2 F_c)
    (t = 0.105 s), then it stays there (no reversal, no chatter)."""
    path, model = one_joint
    v0 = 3.0
    sim = make(backend, model, path, [0.0], [v0])
    q_stop = v0 ** 2 * INERTIA / (2.0 * F_C)
    run(sim, [0.0], 0.05)
    np.testing.assert_allclose(sim.v, v0 - F_C / INERTIA * 0.05, rtol=1e-9 if backend == "builtin" else 1e-2)
    run(sim, [0.0], 0.25)
    assert abs(sim.q[0] - q_stop) < atol and abs(sim.v[0]) < atol, (sim.q, sim.v, q_stop)
    q_held = sim.q.copy()
    run(sim, [0.5 * F_C], 0.5)
    assert abs(sim.q[0] - q_held[0]) < atol
