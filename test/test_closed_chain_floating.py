"""Closed chains whose tree has more than the loop: the five-bar mapping on a free flyer, a leg with a
four-bar knee below a spherical hip on a free flyer (ClosedChainMapping with nq != nv), and the
five-bar on a turntable (a fixed base, a joint outside the loop, through the nodes' compiled tick).

Oracles: the closed chain's forward and inverse dynamics as the KKT system of the tree with the loop's
constraint rows, built from Pinocchio's mass matrix, nonlinear effects, frame Jacobians and frame
accelerations (five-bar, Pinocchio's JointModelFreeFlyer; Pinocchio orders its velocity linear
first), or, for the leg (a URDF `ball` joint, which Pinocchio's parser does not read), from the
library's tree functions that test_multi_dof checks against Pinocchio; the centre of mass of a chain
under no actuator torque falling at g; central differences on the manifold (through
dc.integrate) for the derivatives.
"""
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from dyn_control.mappings import ClosedChainMapping, simulate_closed_chain
from dyn_control.mappings.five_bar import FiveBarMapping
from dyn_control.spatial import Ad
from oracles import central_difference, swap_halves

FIVE_BAR = dc.bundled_urdf("five_bar")
ROTATION = (0, 1, 2)            # the spherical five-bar closes in rotation
PLANAR_Y = (1, 3, 5)            # the knee's four-bar moves in the x-z plane: w_y, v_x, v_z
N_SAMPLES = 4


def _inertial(mass, com=(0.0, 0.0, 0.0)):
    return (f'<inertial><origin xyz="{com[0]} {com[1]} {com[2]}"/><mass value="{mass}"/>'
            f'<inertia ixx="{0.01 * mass}" iyy="{0.012 * mass}" izz="{0.008 * mass}" ixy="0.001" ixz="0" '
            f'iyz="0.0005"/></inertial>')


def _joint(name, kind, parent, child, xyz, axis="0 1 0"):
    axis = "" if kind in ("ball", "fixed") else f'<axis xyz="{axis}"/>'
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}"/>{axis}</joint>')


def leg_urdf(tmp_path, hip="ball"):
    """A trunk (a free flyer), a `hip` joint to the thigh, and a four-bar knee: the knee motor turns
    the shank (crank, 5 cm), the coupler (9 cm) joins the shank to the rocker (6 cm, pivoted 8 cm
    ahead of the knee), the cut joint ends the rocker in a massless copy of the coupler's end. An
    ankle on the shank carries a foot, outside the loop."""
    links = {"trunk": _inertial(3.0), "thigh": _inertial(1.2, (0.0, 0.0, -0.15)),
             "shank": _inertial(0.5, (0.0, 0.0, -0.1)), "coupler": _inertial(0.1, (0.045, 0.0, 0.0)),
             "rocker": _inertial(0.15, (0.0, 0.0, -0.03)), "foot": _inertial(0.2, (0.03, 0.0, -0.02)),
             "coupler_end": "", "coupler_copy": ""}
    joints = [_joint("hip", hip, "trunk", "thigh", "0.1 0.05 -0.05", "0 0 1"),
              _joint("knee", "revolute", "thigh", "shank", "0 0 -0.3"),
              _joint("coupler_joint", "revolute", "shank", "coupler", "0 0 -0.05"),
              _joint("coupler_end_joint", "fixed", "coupler", "coupler_end", "0.09 0 0"),
              _joint("rocker_joint", "revolute", "thigh", "rocker", "0.08 0 -0.3"),
              _joint("cut_joint", "revolute", "rocker", "coupler_copy", "0 0 -0.06"),
              _joint("ankle", "revolute", "shank", "foot", "0 0 -0.25")]
    limits = '<limit lower="-3" upper="3" effort="50" velocity="10"/></joint>'
    xml = ('<robot name="leg">' + "".join(f'<link name="{n}">{body}</link>' for n, body in links.items())
           + "".join(j.replace("</joint>", limits) if 'type="revolute"' in j else j for j in joints)
           + "</robot>")
    path = tmp_path / f"leg_{hip}.urdf"
    path.write_text(xml)
    return path


def leg_mapping(model):
    return FiveBarMapping(model, active_joints=("knee",), cut_joint="cut_joint", cut_link="coupler_end",
                          closure_components=PLANAR_Y)


@pytest.fixture(scope="module")
def five_bar():
    model = dc.load_urdf(FIVE_BAR, root_joint="free_flyer")
    return model, FiveBarMapping(model)


@pytest.fixture(scope="module")
def leg(tmp_path_factory):
    model = dc.load_urdf(leg_urdf(tmp_path_factory.mktemp("leg")), root_joint="free_flyer")
    return model, leg_mapping(model)


def _random_theta(model, mapping, rng, motors):
    """theta_a: a random configuration of everything outside the loop, and the motors at `motors`."""
    q = dc.random_configuration(model, rng)
    n_motors = len(motors)
    others = mapping.active_configuration(q)[:mapping.active_configuration_indices.size - n_motors]
    return np.concatenate([others, motors])


def _tangent_step(model, mapping, q, dtheta):
    """The tree configuration q moved by dtheta on the active coordinates (passive ones held)."""
    step = np.zeros(model.nv)
    step[mapping.active_indices] = dtheta
    return dc.integrate(model, q, step)


# ------------------------------------------------------------------------------------------------
# the KKT oracle


def kkt_closed_chain(M, nle, J_A, J_B, b_A, b_B, T_rel, components, active, passive, tau_a=None, ddtheta=None):
    """Forward (tau_a given) or inverse (ddtheta given) dynamics of the closed chain from the tree's
    M, nonlinear effects, the loop frames' body Jacobians and accelerations at zero joint acceleration
    (b = dJ/dt v), each in its own frame, and T_rel = T_A^-1 T_B. Rows P (V_A - Ad(T_rel) V_B) = 0.
    Returns (ddtheta or tau_a, tree acceleration)."""
    nv = M.shape[0]
    X = Ad(T_rel[:3, :3], T_rel[:3, 3])
    K = (J_A - X @ J_B)[list(components)]
    bias = (b_A - X @ b_B)[list(components)]
    if tau_a is not None:
        tau = np.zeros(nv)
        tau[active] = tau_a
        nc = K.shape[0]
        kkt = np.block([[M, K.T], [K, np.zeros((nc, nc))]])
        a = np.linalg.solve(kkt, np.concatenate([tau - nle, -bias]))[:nv]
        return a[active], a
    a = np.zeros(nv)
    a[active] = ddtheta
    a[passive] = -np.linalg.solve(K[:, passive], K[:, active] @ ddtheta + bias)
    G = np.zeros((nv, len(active)))
    G[active] = np.eye(len(active))
    G[passive] = -np.linalg.solve(K[:, passive], K[:, active])
    return G.T @ (M @ a + nle), a


class PinFiveBar:
    """A five-bar's tree in Pinocchio: the bundled one on a JointModelFreeFlyer, or `path` on a fixed
    base."""

    def __init__(self, model, path=None):
        self.floating = path is None
        self.pm = (pin.buildModelFromUrdf(str(FIVE_BAR), pin.JointModelFreeFlyer()) if self.floating
                   else pin.buildModelFromUrdf(str(path)))
        assert list(self.pm.names)[1 + self.floating:] == list(model.joint_names[6 * self.floating:])
        self.pd = self.pm.createData()

    def v(self, x):
        """Our tree vector (angular first root) as Pinocchio's, and back (the swap is its own inverse)."""
        x = np.array(x, dtype=float)
        if self.floating:
            x[:6] = swap_halves(x[:6])
        return x

    def terms(self, q, v, frames):
        pm, pd = self.pm, self.pd
        vp = self.v(v)
        M = pin.crba(pm, pd, q)
        M = np.triu(M) + np.triu(M, 1).T
        nle = pin.nonLinearEffects(pm, pd, q, vp)
        pin.forwardKinematics(pm, pd, q, vp, np.zeros(pm.nv))
        pin.updateFramePlacements(pm, pd)
        pin.computeJointJacobians(pm, pd, q)
        out = []
        for frame in frames:
            fid = pm.getFrameId(frame)
            J = pin.getFrameJacobian(pm, pd, fid, pin.LOCAL)
            acc = pin.getFrameAcceleration(pm, pd, fid, pin.LOCAL).vector
            out.append((self.v(swap_halves(J).T).T, swap_halves(acc), pd.oMf[fid].homogeneous.copy()))
        # ours: M and nle in our coordinates (root angular first)
        P = self.v(np.eye(pm.nv))
        return P @ M @ P.T, self.v(nle), out

    def kkt(self, mapping, q, v, **given):
        frames = (mapping.cut_link, mapping.model.body_names[mapping.model.joint_index(mapping.cut_joint)])
        M, nle, ((J_A, b_A, T_A), (J_B, b_B, _T_B)) = self.terms(q, v, frames)
        T_rel = np.linalg.solve(T_A, _T_B)
        return kkt_closed_chain(M, nle, J_A, J_B, b_A, b_B, T_rel, mapping.closure_components,
                                mapping.active_indices, mapping.passive_indices, **given)


def library_kkt(model, mapping, q, v, **given):
    """The same KKT oracle from the library's tree functions (the leg's ball joint)."""
    data = model.create_data()
    frame_a = mapping.cut_link
    frame_b = model.body_names[model.joint_index(mapping.cut_joint)]
    M = dc.crba(model, data, q).copy()
    nle = dc.nonlinear_effects(model, data, q, v).copy()
    terms = []
    for frame in (frame_a, frame_b):
        J = dc.jacobian(model, data, q, frame, "local").copy()
        dJ = dc.frame_jacobian_time_variation(model, data, q, v, frame, "local").copy()
        terms.append((J, dJ @ v, dc.frame_pose(model, data, q, frame).copy()))
    (J_A, b_A, T_A), (J_B, b_B, T_B) = terms
    return kkt_closed_chain(M, nle, J_A, J_B, b_A, b_B, np.linalg.solve(T_A, T_B), mapping.closure_components,
                            mapping.active_indices, mapping.passive_indices, **given)


def _assert_close(actual, expected, rtol, what):
    scale = max(1.0, np.abs(expected).max())
    error = np.abs(np.asarray(actual) - expected).max() / scale
    assert error < rtol, f"{what}: relative error {error:.3g}"


# ------------------------------------------------------------------------------------------------
# the five-bar on a free flyer


def test_floating_five_bar_coordinates(five_bar):
    """theta_a = [the free flyer's pose (7); joint1, joint4], dtheta_a = [its velocity (6); the two motors']."""
    model, mapping = five_bar
    assert mapping.active_joints == model.joint_names[:6] + ("joint1", "joint4")
    assert mapping.passive_joints == ("joint2", "joint3", "joint5")
    np.testing.assert_array_equal(mapping.active_configuration_indices, [0, 1, 2, 3, 4, 5, 6, 7, 10])


def test_floating_five_bar_closes_the_loop_in_pinocchio(five_bar):
    """complete() keeps the free flyer's pose and the motors as given, and the two loop frames coincide
    in Pinocchio's kinematics; the passive angles are the fixed five-bar's (the base does not move the
    loop)."""
    model, mapping = five_bar
    fixed = FiveBarMapping(dc.load_urdf(FIVE_BAR))
    oracle = PinFiveBar(model)
    rng = np.random.default_rng(1)
    for _ in range(N_SAMPLES):
        motors = rng.uniform(-0.4, 0.4, 2)
        theta = _random_theta(model, mapping, rng, motors)
        q = mapping.complete(theta)
        np.testing.assert_array_equal(mapping.active_configuration(q), theta)
        pin.framesForwardKinematics(oracle.pm, oracle.pd, q)
        T_a, T_b = (oracle.pd.oMf[oracle.pm.getFrameId(name)].homogeneous for name in ("link3", "link3_cut"))
        assert np.abs(T_a - T_b).max() < 1e-10
        np.testing.assert_allclose(q[7:], fixed.complete(motors), atol=1e-10)


def test_floating_five_bar_dynamics_match_the_pinocchio_kkt_system(five_bar):
    """forward_dynamics and inverse_dynamics against the KKT system built from Pinocchio, at random
    base poses and velocities: 1e-9 relative."""
    model, mapping = five_bar
    oracle = PinFiveBar(model)
    data = model.create_data()
    rng = np.random.default_rng(2)
    for _ in range(N_SAMPLES):
        theta = _random_theta(model, mapping, rng, rng.uniform(-0.4, 0.4, 2))
        dtheta, tau_a, ddtheta = rng.normal(size=(3, 8))
        q, v, _ = mapping.tree_state(theta, dtheta, np.zeros(8))
        _assert_close(mapping.forward_dynamics(model, data, theta, dtheta, tau_a),
                      oracle.kkt(mapping, q, v, tau_a=tau_a)[0], 1e-9, "forward_dynamics")
        expected, a_tree = oracle.kkt(mapping, q, v, ddtheta=ddtheta)
        _assert_close(mapping.inverse_dynamics(model, data, theta, dtheta, ddtheta), expected, 1e-9,
                      "inverse_dynamics")
        _assert_close(mapping.tree_state(theta, dtheta, ddtheta)[2], a_tree, 1e-9, "tree_state's a")


def test_floating_five_bar_falls_at_g(five_bar):
    """With no actuator torque the closed chain's centre of mass accelerates at gravity (Pinocchio's
    centre-of-mass acceleration of the tree state)."""
    model, mapping = five_bar
    oracle = PinFiveBar(model)
    data = model.create_data()
    rng = np.random.default_rng(3)
    theta = _random_theta(model, mapping, rng, [0.2, -0.1])
    dtheta = rng.normal(size=8)
    ddtheta = mapping.forward_dynamics(model, data, theta, dtheta, np.zeros(8))
    q, v, a = mapping.tree_state(theta, dtheta, ddtheta)
    pin.centerOfMass(oracle.pm, oracle.pd, q, oracle.v(v), oracle.v(a))
    np.testing.assert_allclose(oracle.pd.acom[0], model.gravity, atol=1e-9)


def test_floating_five_bar_defaults_of_the_interface(five_bar):
    """The base class's tree_state (G by central differences on the manifold), reduced_dynamics and
    frame_jacobian on a floating base: against the five-bar's analytic tree state, the Pinocchio KKT
    system and Pinocchio's frame Jacobian times G."""
    model, mapping = five_bar
    oracle = PinFiveBar(model)
    data = model.create_data()
    rng = np.random.default_rng(4)
    theta = _random_theta(model, mapping, rng, [-0.3, 0.25])
    dtheta, ddtheta, tau_a = rng.normal(size=(3, 8))
    for ours, expected in zip(ClosedChainMapping.tree_state(mapping, theta, dtheta, ddtheta),
                              mapping.tree_state(theta, dtheta, ddtheta)):
        _assert_close(ours, expected, 1e-7, "tree_state by central differences")
    M_a, h_a, q = ClosedChainMapping.reduced_dynamics(mapping, model, data, theta, dtheta)
    v = mapping.completion_jacobian(q) @ dtheta
    _assert_close(np.linalg.solve(M_a, tau_a - h_a), oracle.kkt(mapping, q, v, tau_a=tau_a)[0], 1e-6,
                  "reduced_dynamics")
    pin.computeJointJacobians(oracle.pm, oracle.pd, q)
    pin.updateFramePlacements(oracle.pm, oracle.pd)
    J = pin.getFrameJacobian(oracle.pm, oracle.pd, oracle.pm.getFrameId("end_effector"), pin.LOCAL_WORLD_ALIGNED)
    J = oracle.v(swap_halves(J).T).T
    _assert_close(mapping.frame_jacobian(q, "end_effector"), J @ mapping.completion_jacobian(q), 1e-10,
                  "frame_jacobian")


@pytest.mark.parametrize("case, n_motors", [("five_bar", 2), ("leg", 1)])
def test_inverse_dynamics_derivatives_by_central_differences_on_the_manifold(case, n_motors, five_bar, leg):
    """d tau_a / d theta_a (theta_a moved through dc.integrate, its quaternions staying unit) and
    d tau_a / d dtheta_a by central differences; M_a = G^T M G: 1e-6 relative."""
    model, mapping = five_bar if case == "five_bar" else leg
    data = model.create_data()
    rng = np.random.default_rng(5)
    theta = _random_theta(model, mapping, rng, rng.uniform(-0.3, 0.3, n_motors))
    na = mapping.active_indices.size
    dtheta, ddtheta = rng.normal(size=(2, na))
    q = mapping.complete(theta)

    def tau_at(step):
        moved = mapping.active_configuration(_tangent_step(model, mapping, q, step))
        return mapping.inverse_dynamics(model, data, moved, dtheta, ddtheta, guess=q)

    d_theta, d_dtheta, M_a = mapping.inverse_dynamics_derivatives(model, data, theta, dtheta, ddtheta)
    _assert_close(d_theta, central_difference(tau_at, np.zeros(na)), 1e-6, "d tau_a / d theta_a")
    _assert_close(d_dtheta, central_difference(
        lambda x: mapping.inverse_dynamics(model, data, theta, x, ddtheta, guess=q), dtheta), 1e-6,
        "d tau_a / d dtheta_a")
    G = mapping.completion_jacobian(q)
    _assert_close(M_a, G.T @ dc.crba(model, data, q) @ G, 1e-12, "M_a")


# ------------------------------------------------------------------------------------------------
# a leg with a four-bar knee below a spherical hip


def test_leg_coordinates_pass_the_free_flyer_hip_and_ankle_through(leg):
    """Everything outside the loop is active, in tree order, then the knee motor: the free flyer (7
    entries of q, 6 of v), the hip's quaternion (4, 3), the ankle; the loop's other joints are passive."""
    model, mapping = leg
    names = model.joint_names
    assert mapping.passive_joints == ("coupler_joint", "rocker_joint", "cut_joint")
    hip = model.multi_dof_joints[0]
    assert (hip.name, hip.kind) == ("hip", "spherical")
    expected = [n for n in names if n not in mapping.passive_joints and n != "knee"] + ["knee"]
    assert list(mapping.active_joints) == expected
    assert mapping.active_configuration_indices.size == 7 + 4 + 1 + 1


def test_leg_dynamics_match_the_kkt_system(leg):
    """forward and inverse dynamics of the leg against the KKT system of its tree (library functions,
    checked against Pinocchio in test_multi_dof), the loop closed in the library's kinematics, and
    its centre of mass falling at g under no torque (second differences of dc.center_of_mass)."""
    model, mapping = leg
    data = model.create_data()
    rng = np.random.default_rng(6)
    na = mapping.active_indices.size
    for _ in range(N_SAMPLES):
        theta = _random_theta(model, mapping, rng, rng.uniform(-0.4, 0.4, 1))
        q = mapping.complete(theta)
        T_a = dc.frame_pose(model, data, q, "coupler_end").copy()
        assert np.abs(T_a - dc.frame_pose(model, data, q, "coupler_copy")).max() < 1e-10
        dtheta, tau_a, ddtheta = rng.normal(size=(3, na))
        v = mapping.completion_jacobian(q) @ dtheta
        _assert_close(mapping.forward_dynamics(model, data, theta, dtheta, tau_a),
                      library_kkt(model, mapping, q, v, tau_a=tau_a)[0], 1e-9, "forward_dynamics")
        _assert_close(mapping.inverse_dynamics(model, data, theta, dtheta, ddtheta),
                      library_kkt(model, mapping, q, v, ddtheta=ddtheta)[0], 1e-9, "inverse_dynamics")
        falling = mapping.forward_dynamics(model, data, theta, dtheta, np.zeros(na))
        q, v, a = mapping.tree_state(theta, dtheta, falling)
        # the centre of mass along q(t) = integrate(q, t v + t^2 a / 2), whose acceleration at 0 is a
        com = [dc.center_of_mass(model, data, dc.integrate(model, q, t * v + 0.5 * t * t * a)).copy()
               for t in (-1e-3, 0.0, 1e-3)]
        np.testing.assert_allclose((com[0] - 2.0 * com[1] + com[2]) / 1e-6, model.gravity, atol=1e-4)


def test_leg_on_a_planar_hip_against_its_ball_hip(tmp_path):
    """The same leg with a planar hip: the loop and its passive angles do not depend on the hip's kind."""
    ball = leg_mapping(dc.load_urdf(leg_urdf(tmp_path), root_joint="free_flyer"))
    planar_model = dc.load_urdf(leg_urdf(tmp_path, hip="planar"))
    planar = leg_mapping(planar_model)
    assert planar.active_joints[:3] == planar_model.joint_names[:3]
    for knee in (-0.4, 0.1, 0.5):
        q_ball = ball.complete(np.concatenate([ball.reference_configuration[ball.active_configuration_indices[:-1]],
                                               [knee]]))
        q_planar = planar.complete(np.concatenate([[0.01, 0.02, 1.0, 0.0, 0.3], [knee]]))
        np.testing.assert_allclose(q_planar[[p + 1 for p in planar.passive_indices]],
                                   q_ball[[p + 2 for p in ball.passive_indices]], atol=1e-10)


# ------------------------------------------------------------------------------------------------
# a fixed base with a joint outside the loop: the five-bar on a turntable


@pytest.fixture(scope="module")
def turntable(tmp_path_factory):
    """The bundled five-bar on a revolute turntable whose axis misses the linkage's centre."""
    xml = Path(FIVE_BAR).read_text()
    assert '<link name="base_link">\n    <inertial>' not in xml      # the turntable gives it a mass
    table = ('<link name="ground"/><joint name="table" type="revolute"><origin xyz="0.05 -0.02 0.1" rpy="0.3 0 0"/>'
             '<parent link="ground"/><child link="base_link"/><axis xyz="0 0.6 0.8"/>'
             '<limit lower="-3" upper="3" velocity="5" effort="5"/></joint>')
    xml = xml.replace('<link name="base_link">', table + '<link name="base_link"><inertial><mass value="0.8"/>'
                      '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>', 1)
    path = tmp_path_factory.mktemp("turntable") / "five_bar_turntable.urdf"
    path.write_text(xml)
    model = dc.load_urdf(path)
    return model, FiveBarMapping(model), path


def test_turntable_joint_passes_through_and_matches_pinocchio(turntable):
    """The turntable joint is active ahead of the motors; forward and inverse dynamics against the KKT
    system built from Pinocchio's fixed-base model of the same URDF."""
    model, mapping, path = turntable
    assert mapping.active_joints == ("table", "joint1", "joint4")
    oracle = PinFiveBar(model, path)
    data = model.create_data()
    rng = np.random.default_rng(7)
    for _ in range(N_SAMPLES):
        theta = np.concatenate([rng.uniform(-2.0, 2.0, 1), rng.uniform(-0.4, 0.4, 2)])
        dtheta, tau_a, ddtheta = rng.normal(size=(3, 3))
        q = mapping.complete(theta)
        v = mapping.completion_jacobian(q) @ dtheta
        _assert_close(mapping.forward_dynamics(model, data, theta, dtheta, tau_a),
                      oracle.kkt(mapping, q, v, tau_a=tau_a)[0], 1e-9, "forward_dynamics")
        _assert_close(mapping.inverse_dynamics(model, data, theta, dtheta, ddtheta),
                      oracle.kkt(mapping, q, v, ddtheta=ddtheta)[0], 1e-9, "inverse_dynamics")


def test_turntable_compiled_tick_is_the_mappings_inverse_dynamics(turntable):
    """The nodes' compiled closed-chain tick with the turntable joint among the controlled ones: its
    torques are the mapping's inverse dynamics of its computed-torque command."""
    from dyn_control.control import tick as T
    from dyn_control.control.closed_chain_tick import ClosedChainTick
    model, mapping, _ = turntable
    active = mapping.active_indices
    tick = ClosedChainTick(model, mapping, active, "end_effector", 10)
    f, s = tick.f, tick.f.s
    f.kp[active], f.kd[active] = 100.0, 20.0
    rng = np.random.default_rng(8)
    for _ in range(N_SAMPLES):
        theta = np.concatenate([rng.uniform(-2.0, 2.0, 1), rng.uniform(-0.4, 0.4, 2)])
        dtheta = rng.normal(size=3)
        q = mapping.complete(theta)
        f.q[:] = q
        f.v[:] = mapping.completion_jacobian(q) @ dtheta
        f.centre[:] = q + 0.05 * rng.normal(size=model.nv)
        s[T.S_T] = 0.0
        tick.tick()
        a_cmd = 100.0 * (f.centre[active] - theta) + 20.0 * (0.0 - dtheta)
        expected = mapping.inverse_dynamics(model, model.create_data(), theta, dtheta, a_cmd, guess=q)
        np.testing.assert_allclose(f.tau[active], np.clip(expected, -5.0, 5.0), atol=1e-10)
        assert np.all(f.tau[mapping.passive_indices] == 0.0)


# ------------------------------------------------------------------------------------------------
# refusals


def test_refusals_name_the_joint_or_argument(tmp_path, five_bar, leg):
    model, mapping = leg
    with pytest.raises(ValueError, match="active_joints \\['ankle'\\] are not joints of the loop"):
        FiveBarMapping(model, active_joints=("ankle",), cut_joint="cut_joint", cut_link="coupler_end",
                       closure_components=PLANAR_Y)
    # a spherical knee motor: a multi-DoF joint in the loop
    xml = leg_urdf(tmp_path).read_text().replace('<joint name="rocker_joint" type="revolute">',
                                                 '<joint name="rocker_joint" type="ball">')
    (tmp_path / "ball_rocker.urdf").write_text(xml)
    ball_rocker = dc.load_urdf(tmp_path / "ball_rocker.urdf", root_joint="free_flyer")
    with pytest.raises(ValueError, match="spherical joint 'rocker_joint' lies in the loop"):
        leg_mapping(ball_rocker)
    theta = mapping.active_configuration(mapping.reference_configuration)
    theta[3] = 2.0     # the free flyer's quaternion no longer a unit one
    with pytest.raises(ValueError, match="theta_a.*quaternion"):
        mapping.complete(theta)
    with pytest.raises(ValueError, match="theta_a must have shape \\(13,\\)"):
        mapping.complete(theta[:-1])
    with pytest.raises(ValueError, match="guess must have shape"):
        mapping.complete(mapping.active_configuration(mapping.reference_configuration), guess=np.zeros(model.nv))
    five_model, five = five_bar
    with pytest.raises(ValueError, match="simulate_closed_chain: robot 'five_bar' has a free flyer"):
        simulate_closed_chain(five, five_model, lambda t: (np.zeros(9), np.zeros(8), np.zeros(8)), 0.01, 1e-3,
                              1.0, 1.0)
    from dyn_control.control.closed_chain_tick import ClosedChainTick
    from dyn_control.simulation.closed_chain import ClosedChainSimulator
    with pytest.raises(ValueError, match="closed-chain tick takes fixed bases of 1-DoF joints; robot 'five_bar'"):
        ClosedChainTick(five_model, five, five.active_indices, "end_effector", 2)
    with pytest.raises(ValueError, match="closed-chain simulation takes fixed bases"):
        ClosedChainSimulator(five, five_model, 1e-3, np.zeros(9))
