"""Multi-DoF joints inside the tree (spherical, planar, floating; multi_dof.py) against Pinocchio's
JointModelSpherical, JointModelPlanar and JointModelFreeFlyer.

Random trees mixing them with revolute and prismatic joints are written twice from one description:
as URDF for load_urdf (ball joints as Drake's `type="ball"`) and, joint by joint, as a Pinocchio
model built in code. Pinocchio orders a planar joint's velocity [v_x, v_y, w_z] and a floating one's
linear first: `Pair.ours` permutes its coordinates to ours, angular first. Every quantity agrees to
1e-9 relative to max(1, |reference|); the tangent-space derivatives also against central differences
through dc.integrate; functions not taking these joints yet refuse them by name.
"""
import re

import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from oracles import JIT_DISABLED, robot_urdf

pytestmark = pytest.mark.kernels

TOLERANCE = 1e-9
KINDS = ("revolute", "prismatic", "ball", "planar", "floating")
# our coordinates of a Pinocchio joint as indices into its own (angular first)
PIN_ORDER = {"JointModelSpherical": [0, 1, 2], "JointModelPlanar": [2, 0, 1], "JointModelFreeFlyer": [3, 4, 5, 0, 1, 2]}
SEEDS = (0, 1) if JIT_DISABLED else (0, 1, 2, 3, 4, 5)


def pin_permutation(pm):
    """Our velocity coordinates as indices into Pinocchio's, for a model whose joints come in our order."""
    return np.array([j.idx_v + k for j in pm.joints[1:] for k in PIN_ORDER.get(j.shortname(), range(j.nv))])


def _rotation(rng):
    return pin.Quaternion(*(lambda x: x / np.linalg.norm(x))(rng.normal(size=4))).matrix()


def _rpy(R):
    return pin.rpy.matrixToRpy(R)


class Pair:
    """A random tree of `n` joints (each kind at least once) in both libraries, and random states."""

    def __init__(self, seed, n=9):
        rng = np.random.default_rng(seed)
        kinds = list(KINDS) + list(rng.choice(KINDS, n - len(KINDS)))
        rng.shuffle(kinds)
        self.kinds = kinds
        parents = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
        # names in depth-first pre-order with children sorted by name: load_urdf's order is Pinocchio's
        order, stack = [], [0]
        children = {i: [c for c in range(n) if parents[c] == i] for i in range(n)}
        while stack:
            i = stack.pop()
            order.append(i)
            stack.extend(reversed(children[i]))
        name = {i: f"j{rank:02d}" for rank, i in enumerate(order)}
        pm = pin.Model()
        pm.gravity = pin.Motion(np.array([0.0, 0.0, -9.81, 0.0, 0.0, 0.0]))
        links = ['<link name="world"/>']
        joints = []
        pin_id = {}
        for i in order:
            kind = kinds[i]
            R, p = _rotation(rng), rng.uniform(-0.4, 0.4, 3)
            axis = rng.normal(size=3)
            axis /= np.linalg.norm(axis)
            if kind == "planar":
                R = np.eye(3) if rng.uniform() < 0.5 else R    # its plane: the joint frame's x-y
            mass, com = float(rng.uniform(0.5, 3.0)), rng.uniform(-0.2, 0.2, 3)
            A = rng.normal(size=(3, 3))
            inertia = A @ A.T * 0.05 + np.eye(3) * 0.02
            joint_model = {"revolute": lambda: pin.JointModelRevoluteUnaligned(axis),
                           "prismatic": lambda: pin.JointModelPrismaticUnaligned(axis),
                           "ball": pin.JointModelSpherical, "planar": pin.JointModelPlanar,
                           "floating": pin.JointModelFreeFlyer}[kind]()
            parent_id = 0 if parents[i] < 0 else pin_id[parents[i]]
            pin_id[i] = pm.addJoint(parent_id, joint_model, pin.SE3(R, p), name[i])
            pm.appendBodyToJoint(pin_id[i], pin.Inertia(mass, com, inertia), pin.SE3.Identity())
            parent_link = "world" if parents[i] < 0 else f"l_{name[parents[i]]}"
            limit = '<limit lower="-3" upper="3" effort="100" velocity="10"/>' if kind in ("revolute", "prismatic") else ""
            axis_xml = f'<axis xyz="{axis[0]} {axis[1]} {axis[2]}"/>' if kind in ("revolute", "prismatic") else ""
            rpy = _rpy(R)
            I = inertia.tolist()
            p, com, axis, rpy = p.tolist(), com.tolist(), axis.tolist(), rpy.tolist()
            joints.append(f'<joint name="{name[i]}" type="{kind}"><parent link="{parent_link}"/>'
                          f'<child link="l_{name[i]}"/><origin xyz="{p[0]} {p[1]} {p[2]}" '
                          f'rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>{axis_xml}{limit}</joint>')
            links.append(f'<link name="l_{name[i]}"><inertial><origin xyz="{com[0]} {com[1]} {com[2]}"/>'
                         f'<mass value="{mass}"/><inertia ixx="{I[0][0]}" iyy="{I[1][1]}" izz="{I[2][2]}" '
                         f'ixy="{I[0][1]}" ixz="{I[0][2]}" iyz="{I[1][2]}"/></inertial></link>')
        self.urdf = f'<robot name="mixed{seed}">{"".join(links)}{"".join(joints)}</robot>'
        self.model = dc.load_urdf(self.urdf)
        self.data = self.model.create_data()
        self.pm, self.pd = pm, pm.createData()
        self.perm = pin_permutation(pm)     # our q is Pinocchio's, joint by joint
        assert self.model.nq == pm.nq and self.model.nv == pm.nv
        self.q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        self.v, self.a, self.tau = (rng.normal(size=pm.nv) for _ in range(3))
        self.frames = [f"l_{name[i]}" for i in order]
        self.pin_ids = [pin_id[i] for i in order]

    def ours(self, x, rows=True, columns=False):
        x = np.asarray(x)
        if rows:
            x = x[self.perm]
        if columns:
            x = x[:, self.perm]
        return x

    def pin_v(self, x):
        out = np.empty_like(x)
        out[self.perm] = x
        return out


PAIRS = {seed: Pair(seed) for seed in SEEDS}


@pytest.fixture(params=SEEDS)
def pair(request):
    return PAIRS[request.param]


def assert_close(value, reference, what):
    value, reference = np.asarray(value), np.asarray(reference)
    assert value.shape == reference.shape, f"{what}: shape {value.shape} != {reference.shape}"
    scale = max(1.0, float(np.abs(reference).max(initial=0.0)))
    error = float(np.abs(value - reference).max(initial=0.0))
    assert error <= TOLERANCE * scale, f"{what}: max error {error:.3e} (scale {scale:.3e})"


def test_model_layout(pair):
    m = pair.model
    kinds = sorted(j.kind for j in m.multi_dof_joints)
    expected = sorted({"ball": "spherical", "planar": "planar", "floating": "floating"}[k]
                      for k in pair.kinds if k in ("ball", "planar", "floating"))
    assert kinds == expected
    assert_close(dc.neutral(m), pin.neutral(pair.pm), "neutral")


def test_dynamics(pair):
    m, d, pm, pd = pair.model, pair.data, pair.pm, pair.pd
    q, v, a, tau = pair.q, pair.v, pair.a, pair.tau
    pv, pa, ptau = pair.pin_v(v), pair.pin_v(a), pair.pin_v(tau)
    assert_close(dc.rnea(m, d, q, v, a), pair.ours(pin.rnea(pm, pd, q, pv, pa)), "rnea")
    assert_close(dc.aba(m, d, q, v, tau), pair.ours(pin.aba(pm, pd, q, pv, ptau)), "aba")
    assert_close(dc.crba(m, d, q), pair.ours(pin.crba(pm, pd, q), columns=True), "crba")
    M = pin.crba(pm, pd, q)
    M = np.triu(M) + np.triu(M, 1).T
    assert_close(dc.minverse(m, d, q), pair.ours(np.linalg.inv(M), columns=True), "minverse")
    assert_close(dc.nonlinear_effects(m, d, q, v), pair.ours(pin.nonLinearEffects(pm, pd, q, pv)), "nle")
    assert_close(dc.gravity(m, d, q), pair.ours(pin.computeGeneralizedGravity(pm, pd, q)), "gravity")
    assert_close(dc.coriolis_matrix(m, d, q, v), pair.ours(pin.computeCoriolisMatrix(pm, pd, q, pv), columns=True),
                 "coriolis_matrix")


def test_external_forces(pair):
    m, d, pm, pd = pair.model, pair.data, pair.pm, pair.pd
    rng = np.random.default_rng(7)
    f_ext = np.zeros((m.nbodies, 6))
    pin_forces = [pin.Force.Zero() for _ in range(pm.njoints)]
    for frame, jid in zip(pair.frames, pair.pin_ids):
        body = m.body_names.index(frame)
        f = rng.normal(size=6)
        f_ext[body] = f
        pin_forces[jid] = pin.Force(f[3:], f[:3])
    assert_close(dc.rnea(m, d, pair.q, pair.v, pair.a, f_ext),
                 pair.ours(pin.rnea(pm, pd, pair.q, pair.pin_v(pair.v), pair.pin_v(pair.a), pin_forces)), "rnea f_ext")
    assert_close(dc.aba(m, d, pair.q, pair.v, pair.tau, f_ext),
                 pair.ours(pin.aba(pm, pd, pair.q, pair.pin_v(pair.v), pair.pin_v(pair.tau), pin_forces)), "aba f_ext")


def test_kinematics(pair):
    m, d, pm, pd = pair.model, pair.data, pair.pm, pair.pd
    q = pair.q
    poses = dc.forward_kinematics(m, d, q)
    pin.forwardKinematics(pm, pd, q)
    pin.computeJointJacobians(pm, pd, q)
    for frame, jid in zip(pair.frames, pair.pin_ids):
        assert_close(poses[m.frame_id(frame)], pd.oMi[jid].homogeneous, f"pose of {frame}")
        for reference, pin_reference in (("world", pin.WORLD), ("local", pin.LOCAL),
                                         ("local_world_aligned", pin.LOCAL_WORLD_ALIGNED)):
            J = pin.getJointJacobian(pm, pd, jid, pin_reference)
            assert_close(dc.jacobian(m, d, q, frame, reference), pair.ours(np.r_[J[3:], J[:3]], rows=False, columns=True),
                         f"{reference} Jacobian of {frame}")


def test_centroidal(pair):
    m, d, pm, pd = pair.model, pair.data, pair.pm, pair.pd
    q = pair.q
    assert_close(dc.center_of_mass(m, d, q), pin.centerOfMass(pm, pd, q), "com")
    assert_close(dc.jacobian_center_of_mass(m, d, q), pair.ours(pin.jacobianCenterOfMass(pm, pd, q), False, True),
                 "J_com")
    A = pin.ccrba(pm, pd, q, np.zeros(pm.nv))
    assert_close(dc.centroidal_momentum_matrix(m, d, q), pair.ours(np.r_[A[3:], A[:3]], False, True), "A_g")
    pin.computeCentroidalMomentumTimeVariation(pm, pd, q, pair.pin_v(pair.v), pair.pin_v(pair.a))
    h, dh = dc.centroidal_momentum_time_variation(m, d, q, pair.v, pair.a)
    assert_close(h, np.r_[pd.hg.angular, pd.hg.linear], "h_g")
    assert_close(dh, np.r_[pd.dhg.angular, pd.dhg.linear], "dh_g")


def test_derivatives(pair):
    m, d, pm, pd = pair.model, pair.data, pair.pm, pair.pd
    q, v, a, tau = pair.q, pair.v, pair.a, pair.tau
    pv, pa, ptau = pair.pin_v(v), pair.pin_v(a), pair.pin_v(tau)
    dq, dv, M = dc.rnea_derivatives(m, d, q, v, a)
    pdq, pdv, pM = pin.computeRNEADerivatives(pm, pd, q, pv, pa)
    assert_close(dq, pair.ours(pdq, columns=True), "dtau_dq")
    assert_close(dv, pair.ours(pdv, columns=True), "dtau_dv")
    assert_close(M, pair.ours(np.triu(pM) + np.triu(pM, 1).T, columns=True), "dtau_da")
    da_dq, da_dv, Minv = dc.aba_derivatives(m, d, q, v, tau)
    pin.computeABADerivatives(pm, pd, q, pv, ptau)
    assert_close(da_dq, pair.ours(pd.ddq_dq, columns=True), "ddq_dq")
    assert_close(da_dv, pair.ours(pd.ddq_dv, columns=True), "ddq_dv")
    pMinv = np.triu(pd.Minv) + np.triu(pd.Minv, 1).T
    assert_close(Minv, pair.ours(pMinv, columns=True), "Minv")


def test_derivatives_by_central_differences(pair):
    """d rnea / d q and d aba / d q through integrate (the tangent space), steps 1e-6."""
    m, d = pair.model, pair.data
    q, v, a, tau = pair.q, pair.v, pair.a, pair.tau
    dq = dc.rnea_derivatives(m, d, q, v, a)[0].copy()
    da_dq = dc.aba_derivatives(m, d, q, v, tau)[0].copy()
    h = 1e-6
    for k in range(m.nv):
        e = np.zeros(m.nv)
        e[k] = h
        plus, minus = dc.integrate(m, q, e), dc.integrate(m, q, -e)
        column = (dc.rnea(m, d, plus, v, a).copy() - dc.rnea(m, d, minus, v, a)) / (2 * h)
        _assert_difference(dq[:, k], column, f"dtau_dq column {k}")
        column = (dc.aba(m, d, plus, v, tau).copy() - dc.aba(m, d, minus, v, tau)) / (2 * h)
        _assert_difference(da_dq[:, k], column, f"ddq_dq column {k}")


def _assert_difference(value, difference, what, tolerance=1e-5):
    """Central differences: within `tolerance` relative to the largest entry (at least 1)."""
    error, scale = np.abs(value - difference).max(), max(1.0, np.abs(difference).max())
    assert error <= tolerance * scale, f"{what}: max error {error:.3e} (scale {scale:.3e})"


def test_configuration(pair):
    m, pm = pair.model, pair.pm
    rng = np.random.default_rng(3)
    q0, q1 = pair.q, pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    v = rng.normal(size=m.nv)
    integrated, reference = dc.integrate(m, q0, v), pin.integrate(pm, q0, pair.pin_v(v))
    assert_close(dc.difference(m, reference, integrated), np.zeros(m.nv), "integrate")
    assert_close(dc.difference(m, q0, q1), pair.ours(pin.difference(pm, q0, q1)), "difference")
    for ours, arg in zip(dc.integrate_jacobians(m, q0, v), (pin.ARG0, pin.ARG1)):
        assert_close(ours, pair.ours(pin.dIntegrate(pm, q0, pair.pin_v(v), arg), columns=True), f"dIntegrate {arg}")
    for ours, arg in zip(dc.difference_jacobians(m, q0, q1), (pin.ARG0, pin.ARG1)):
        assert_close(ours, pair.ours(pin.dDifference(pm, q0, q1, arg), columns=True), f"dDifference {arg}")
    q = dc.random_configuration(m, rng)
    assert_close(dc.normalize(m, q), q, "a random configuration is normalized")
    small = 0.3 * v    # rotations below pi: the logarithm's range
    assert_close(dc.difference(m, q, dc.integrate(m, q, small)), small, "difference(q, integrate(q, v))")


def test_non_unit_rotation_is_named(pair):
    m, d = pair.model, pair.data
    joint = m.multi_dof_joints[0]
    q = pair.q.copy()
    q[joint.q_index + joint.nq - 1] += 0.1
    with pytest.raises(ValueError, match=f"joint '{joint.name}'"):
        dc.rnea(m, d, q, pair.v, pair.a)
    fixed = dc.normalize(m, q)
    dc.rnea(m, d, fixed, pair.v, pair.a)


def test_the_control_laws_refuse_by_name(pair):
    """dc.control takes models of 1-DoF joints (fixed bases) only."""
    m, d = pair.model, pair.data
    with pytest.raises(ValueError, match=f"1-DoF joints only, not robot {m.name!r} with the multi-DoF"):
        dc.control.wrench_from_joint_torque(m, d, pair.q, pair.v, pair.frames[-1])


def test_planar_axis_other_than_z_is_refused():
    urdf = ('<robot name="p"><link name="world"/><link name="b"><inertial><mass value="1"/>'
            '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            '<joint name="base" type="planar"><parent link="world"/><child link="b"/><axis xyz="1 0 0"/></joint></robot>')
    with pytest.raises(dc.URDFError, match="joint 'base'.*x-y plane"):
        dc.load_urdf(urdf)


def _with_world(xml, joint, origin=""):
    """The URDF text with a world link and `joint` (its opening tag) from it to the root link."""
    first = xml.index("<link ")
    return (xml[:first] + f'<link name="world"/>{joint}<parent link="world"/><child link="base_link"/>{origin}</joint>'
            + xml[first:])


def _solo12_variants():
    xml = open(robot_urdf("solo12")).read()
    assert "<link name=\"base_link\"" in xml
    yield "floating joint from a world link, with an <origin>", _with_world(
        xml, '<joint name="to_world" type="floating">', '<origin xyz="0.1 0 1" rpy="0.1 0.2 0.3"/>'), None
    yield "planar joint from a world link", _with_world(xml, '<joint name="to_world" type="planar">'), None
    yield "floating knee", xml.replace('<joint name="FL_KFE" type="revolute">', '<joint name="FL_KFE" type="floating">'), None
    yield "floating knee on a free flyer", xml.replace('<joint name="FL_KFE" type="revolute">',
                                                       '<joint name="FL_KFE" type="floating">'), "free_flyer"
    start = xml.index('<joint name="FL_KFE" type="revolute">')
    end = xml.index("</joint>", start)
    knee = xml[start:end].replace('type="revolute"', 'type="planar"')
    knee = re.sub(r'<axis xyz="[^"]*"\s*/>', '<axis xyz="0 0 1"/>', knee)
    yield "planar knee on a free flyer", xml[:start] + knee + xml[end:], "free_flyer"


@pytest.mark.parametrize("case", [case for case, _, _ in _solo12_variants()])
def test_urdf_floating_and_planar_joints_load_as_pinocchio_reads_them(case):
    """solo12's URDF with floating and planar joints at its root and inside its tree: the dynamics and
    their derivatives against Pinocchio's model of the same XML on random states."""
    xml, root_joint = next((x, r) for c, x, r in _solo12_variants() if c == case)
    pm = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if root_joint else pin.buildModelFromXML(xml)
    model = dc.load_urdf(xml, root_joint=root_joint)
    assert model.multi_dof_joints and (model.nq, model.nv) == (pm.nq, pm.nv)
    perm = pin_permutation(pm)
    data, pd = model.create_data(), pm.createData()
    rng = np.random.default_rng(11)
    for _ in range(2):
        q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        v, a, tau = rng.normal(size=(3, model.nv))
        pv, pa, ptau = (np.empty_like(x) for x in (v, a, tau))
        pv[perm], pa[perm], ptau[perm] = v, a, tau
        assert_close(dc.rnea(model, data, q, v, a), pin.rnea(pm, pd, q, pv, pa)[perm], "rnea")
        assert_close(dc.aba(model, data, q, v, tau), pin.aba(pm, pd, q, pv, ptau)[perm], "aba")
        dq, dv, _ = dc.rnea_derivatives(model, data, q, v, a)
        pdq, pdv, _ = pin.computeRNEADerivatives(pm, pd, q, pv, pa)
        assert_close(dq, pdq[np.ix_(perm, perm)], "dtau_dq")
        assert_close(dv, pdv[np.ix_(perm, perm)], "dtau_dv")


def test_joint_terms_and_forces_on_a_chain_are_refused(pair):
    m, d = pair.model, pair.data
    joint = m.multi_dof_joints[0]
    terms = np.zeros(m.nbodies)
    terms[joint.body] = 0.1
    with pytest.raises(ValueError, match=f"multi-DoF joint '{joint.name}''s coordinates"):
        m.with_joint_dynamics(viscous=terms)
    f_ext = np.zeros((m.nbodies, 6))
    f_ext[joint.body, 0] = 1.0
    with pytest.raises(ValueError, match=f"joint '{joint.name}''s massless bodies"):
        dc.rnea(m, d, pair.q, pair.v, pair.a, f_ext)


def test_task_space(pair):
    m, d, pm, pd = pair.model, pair.data, pair.pm, pair.pd
    q, v, a = pair.q, pair.v, pair.a
    pv, pa = pair.pin_v(v), pair.pin_v(a)
    pin.computeJointJacobiansTimeVariation(pm, pd, q, pv)
    pin.forwardKinematics(pm, pd, q, pv, pa)
    M = dc.crba(m, d, q).copy()
    for frame, jid in zip(pair.frames, pair.pin_ids):
        for reference, pin_reference in (("world", pin.WORLD), ("local", pin.LOCAL),
                                         ("local_world_aligned", pin.LOCAL_WORLD_ALIGNED)):
            dJ = pin.getJointJacobianTimeVariation(pm, pd, jid, pin_reference)
            assert_close(dc.frame_jacobian_time_variation(m, d, q, v, frame, reference),
                         pair.ours(np.r_[dJ[3:], dJ[:3]], rows=False, columns=True), f"{reference} dJ/dt of {frame}")
            velocity = pin.getVelocity(pm, pd, jid, pin_reference).vector
            assert_close(dc.frame_velocity(m, d, q, v, frame, reference), np.r_[velocity[3:], velocity[:3]],
                         f"{reference} velocity of {frame}")
            acceleration = pin.getClassicalAcceleration(pm, pd, jid, pin_reference).vector
            assert_close(dc.frame_classical_acceleration(m, d, q, v, a, frame, reference),
                         np.r_[acceleration[3:], acceleration[:3]], f"{reference} classical acceleration of {frame}")
        J = dc.jacobian(m, d, q, frame, "local_world_aligned").copy()
        Lambda = np.linalg.inv(J @ np.linalg.solve(M, J.T) + 0.01 * np.eye(6))
        assert_close(dc.operational_space_inertia(m, d, q, frame, damping=0.1), Lambda, f"Lambda of {frame}")


def test_regressor(pair):
    """rnea = Y phi, the massless chain bodies' columns zero."""
    m, d = pair.model, pair.data
    Y = dc.regressor(m, d, pair.q, pair.v, pair.a).copy()
    assert_close(Y @ m.inertial_parameters(), dc.rnea(m, d, pair.q, pair.v, pair.a), "Y phi")
    for joint in m.multi_dof_joints:
        assert not np.any(Y[:, 10 * joint.body:10 * (joint.body + joint.nv - 1)])


def _pin_contacts(pm, pd, ids_and_kinds):
    """Pinocchio's constraint models and datas (LOCAL, against the world), initialised."""
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for jid, kind in ids_and_kinds:
        pin_kind = pin.ContactType.CONTACT_3D if kind == "point" else pin.ContactType.CONTACT_6D
        models.append(pin.RigidConstraintModel(pin_kind, pm, jid, pin.SE3.Identity(), 0, pin.SE3.Identity(),
                                               pin.ReferenceFrame.LOCAL))
        datas.append(models[-1].createData())
    pin.initConstraintDynamics(pm, pd, models, datas)
    return models, datas


def _well_posed_contacts(pair):
    """A point and a frame contact (LOCAL) on two links whose stacked Jacobian has full row rank (a
    contact below a spherical joint at the link's origin alone, say, constrains nothing)."""
    m, d = pair.model, pair.data
    for first in reversed(range(len(pair.frames))):
        for second in reversed(range(len(pair.frames))):
            if first == second:
                continue
            J = np.r_[dc.jacobian(m, d, pair.q, pair.frames[first], "local")[3:].copy(),
                      dc.jacobian(m, d, pair.q, pair.frames[second], "local")]
            singular = np.linalg.svd(J, compute_uv=False)
            if singular[-1] > 1e-2 * singular[0]:
                return (first, "point"), (second, "frame")
    pytest.fail("no well-posed pair of contacts")


def test_contacts(pair):
    """Constrained and impulse dynamics with a point and a frame contact on two links (LOCAL)."""
    m, d, pm, pd = pair.model, pair.data, pair.pm, pair.pd
    q, v, tau = pair.q, pair.v, pair.tau
    chosen = _well_posed_contacts(pair)
    contacts = [dc.Contact(pair.frames[k], kind, reference="local") for k, kind in chosen]
    models, datas = _pin_contacts(pm, pd, [(pair.pin_ids[k], kind) for k, kind in chosen])
    a, lam = dc.constrained_dynamics(m, d, q, v, tau, contacts)
    reference = pin.constraintDynamics(pm, pd, q, pair.pin_v(v), pair.pin_v(tau), models, datas)
    assert_close(a, pair.ours(reference), "constrained a")
    pin_lam = pd.lambda_c
    assert_close(lam, np.r_[pin_lam[:3], pin_lam[6:], pin_lam[3:6]], "constrained forces")
    v_plus, impulses = dc.impulse_dynamics(m, d, q, v, contacts, restitution=0.3)
    reference = pin.impulseDynamics(pm, pd, q, pair.pin_v(v), models, datas, 0.3)
    assert_close(v_plus, pair.ours(reference), "v_plus")
    pin_impulses = pd.impulse_c
    assert_close(impulses, np.r_[pin_impulses[:3], pin_impulses[6:], pin_impulses[3:6]], "impulses")
    rows = np.r_[0:3, 6:9, 3:6]     # our forces' rows in Pinocchio's
    pin.impulseDynamics(pm, pd, q, pair.pin_v(v), models, datas, 0.3)
    pin.computeImpulseDynamicsDerivatives(pm, pd, models, datas, 0.3)
    references = (pair.ours(pd.ddq_dq, columns=True), pair.ours(pd.ddq_dv + np.eye(m.nv), columns=True),
                  pair.ours(pd.dlambda_dq, rows=False, columns=True)[rows],
                  pair.ours(pd.dlambda_dv, rows=False, columns=True)[rows])
    for what, x, reference in zip(("dv_plus_dq", "dv_plus_dv_minus", "dimpulses_dq", "dimpulses_dv_minus"),
                                  dc.impulse_dynamics_derivatives(m, d, q, v, contacts, 0.3), references):
        assert_close(x, reference, what)
    pin.constraintDynamics(pm, pd, q, pair.pin_v(v), pair.pin_v(tau), models, datas)
    derivatives = pin.computeConstraintDynamicsDerivatives(pm, pd, models, datas)
    references = ([pair.ours(x, columns=True) for x in derivatives[:3]]
                  + [pair.ours(x, rows=False, columns=True)[rows] for x in derivatives[3:]])
    for what, x, reference in zip(("da_dq", "da_dv", "da_dtau", "dlam_dq", "dlam_dv", "dlam_dtau"),
                                  dc.constrained_dynamics_derivatives(m, d, q, v, tau, contacts), references):
        assert_close(x, reference, what)


def test_batches_are_the_single_calls(pair):
    m, d = pair.model, pair.data
    rng = np.random.default_rng(5)
    q = np.stack([dc.random_configuration(m, rng) for _ in range(3)])
    v, a = rng.normal(size=(2, 3, m.nv))
    for t in range(3):
        assert_close(dc.rnea_batch(m, q, v, a)[t], dc.rnea(m, d, q[t], v[t], a[t]), "rnea_batch")
        assert_close(dc.aba_batch(m, q, v, a)[t], dc.aba(m, d, q[t], v[t], a[t]), "aba_batch")
        for batch, single in zip(dc.rnea_derivatives_batch(m, q, v, a), dc.rnea_derivatives(m, d, q[t], v[t], a[t])):
            assert_close(batch[t], single, "rnea_derivatives_batch")
        assert_close(dc.regressor_batch(m, q, v, a, joint_terms=True)[t],
                     dc.regressor(m, d, q[t], v[t], a[t], joint_terms=True), "regressor_batch")
    bad = q.copy()
    bad[1, m.multi_dof_joints[0].q_index + 3] += 0.5
    with pytest.raises(ValueError, match="sample 1: .*unit norm"):
        dc.rnea_batch(m, bad, v, a)


def test_identification_sums_and_twist_derivatives(pair):
    """regressor_normal_equations and residual_gradient_batch are the sums of the single regressors;
    twist_derivatives is d tau / d eta by central differences of with_twist_perturbation (the chains'
    columns zero)."""
    m, d = pair.model, pair.data
    rng = np.random.default_rng(9)
    q = np.stack([dc.random_configuration(m, rng) for _ in range(3)])
    v, a, tau = rng.normal(size=(3, 3, m.nv))
    Y = dc.regressor_batch(m, q, v, a, joint_terms=True)
    A, b = dc.regressor_normal_equations(m, q, v, a, tau)
    assert_close(A, np.einsum("tip,tiq->pq", Y, Y), "YtY")
    assert_close(b, np.einsum("tip,ti->p", Y, tau), "Ytau")
    phi = m.parameters()
    value, gradient = dc.residual_gradient_batch(m, q, v, a, tau)
    residual = Y @ phi - tau
    assert_close(value, 0.5 * np.sum(residual ** 2), "residual")
    assert_close(gradient, np.einsum("tip,ti->p", Y, residual), "gradient")
    D = dc.twist_derivatives(m, d, pair.q, pair.v, pair.a).copy()
    h = 1e-6
    for column in range(0, 6 * m.nbodies, 5):
        eta = np.zeros(6 * m.nbodies)
        eta[column] = h
        body = column // 6
        if any(j.body <= body < j.body + j.nv for j in m.multi_dof_joints):
            assert not np.any(D[:, column])
            with pytest.raises(ValueError, match="no screw of their own"):
                m.with_twist_perturbation(eta)
            continue
        plus, minus = m.with_twist_perturbation(eta), m.with_twist_perturbation(-eta)
        difference = (dc.rnea(plus, plus.create_data(), pair.q, pair.v, pair.a)
                      - dc.rnea(minus, minus.create_data(), pair.q, pair.v, pair.a)) / (2 * h)
        _assert_difference(D[:, column], difference, f"dtau_deta column {column}")


class _Steps:
    """A step x -> step(x, e) with its number of directions n."""

    def __init__(self, step, n):
        self.step, self.directions = step, range(n)

    def __call__(self, x, e):
        return self.step(x, e)


def _stencil(function, x, step_of, h):
    """Central differences of function (arrays) along each direction k: (f(step_of(x, +h e_k)) -
    f(step_of(x, -h e_k))) / 2h, stacked on a last axis."""
    columns = []
    for k in range(len(step_of.directions)):
        e = np.zeros(len(step_of.directions))
        e[k] = h
        plus = [np.array(y) for y in function(step_of(x, e))]
        minus = [np.array(y) for y in function(step_of(x, -e))]
        columns.append([(p - m) / (2 * h) for p, m in zip(plus, minus)])
    return [np.stack([c[n] for c in columns], axis=-1) for n in range(len(columns[0]))]


def test_second_derivatives_by_central_differences(pair):
    """rnea_ and aba_second_derivatives against central differences (step 1e-5, 1e-7 relative: their
    error is below 1e-9 here, the twin's uncorrected tensors are off by their own size) of the first
    order (Pinocchio-checked above): q through integrate, iterated as d/dq_k (d/dq_j)."""
    m, d = pair.model, pair.data
    q, v, a, tau = pair.q, pair.v, pair.a, pair.tau
    h = 1e-5
    Q, Vel = _Steps(lambda x, e: dc.integrate(m, x, e), m.nv), _Steps(lambda x, e: x + e, m.nv)
    d2q, d2v, d2qv, dM = (np.array(x) for x in dc.rnea_second_derivatives(m, d, q, v, a))
    dq_q, dv_q, M_q = _stencil(lambda x: dc.rnea_derivatives(m, d, x, v, a), q, Q, h)
    dq_v, dv_v, _ = _stencil(lambda x: dc.rnea_derivatives(m, d, q, x, a), v, Vel, h)
    for what, value, reference in (("d2tau_dq2", d2q, dq_q), ("d2tau_dv2", d2v, dv_v), ("d2tau_dqdv", d2qv, dq_v),
                                   ("dM_dq", dM, M_q)):
        _assert_difference(value, reference, what, 1e-7)
    d2q, d2v, d2qv, dMinv = (np.array(x) for x in dc.aba_second_derivatives(m, d, q, v, tau))
    dq_q, dv_q, Minv_q = _stencil(lambda x: dc.aba_derivatives(m, d, x, v, tau), q, Q, h)
    dq_v, dv_v, _ = _stencil(lambda x: dc.aba_derivatives(m, d, q, x, tau), v, Vel, h)
    for what, value, reference in (("d2ddq_dq2", d2q, dq_q), ("d2ddq_dv2", d2v, dv_v), ("d2ddq_dqdv", d2qv, dq_v),
                                   ("dMinv_dq", dMinv, Minv_q)):
        _assert_difference(value, reference, what, 1e-7)


def test_contact_derivatives_by_central_differences(pair):
    """constrained_ and impulse_dynamics_derivatives in q through integrate (step 1e-6)."""
    m, d = pair.model, pair.data
    q, v, tau = pair.q, pair.v, pair.tau
    contacts = [dc.Contact(pair.frames[k], kind, reference="local") for k, kind in _well_posed_contacts(pair)]
    derivatives = [np.array(x) for x in dc.constrained_dynamics_derivatives(m, d, q, v, tau, contacts)]
    impulse_derivatives = [np.array(x) for x in dc.impulse_dynamics_derivatives(m, d, q, v, contacts, 0.3)]
    h = 1e-6
    for k in range(m.nv):
        e = np.zeros(m.nv)
        e[k] = h
        plus, minus = dc.integrate(m, q, e), dc.integrate(m, q, -e)
        for n, (x_plus, x_minus) in enumerate(zip(dc.constrained_dynamics(m, d, plus, v, tau, contacts),
                                                  dc.constrained_dynamics(m, d, minus, v, tau, contacts))):
            _assert_difference(derivatives[3 * n][:, k], (x_plus - x_minus) / (2 * h), f"constrained {n} column {k}")
        for n, (x_plus, x_minus) in enumerate(zip(dc.impulse_dynamics(m, d, plus, v, contacts, 0.3),
                                                  dc.impulse_dynamics(m, d, minus, v, contacts, 0.3))):
            _assert_difference(impulse_derivatives[2 * n][:, k], (x_plus - x_minus) / (2 * h), f"impulse {n} column {k}")


def test_derivatives_with_external_forces(pair):
    m, d, pm = pair.model, pair.data, pair.pm
    pd = pm.createData()    # a Data that constraintDynamics (test_contacts) has not used
    rng = np.random.default_rng(13)
    f_ext = np.zeros((m.nbodies, 6))
    pin_forces = pin.StdVec_Force()
    for _ in range(pm.njoints):
        pin_forces.append(pin.Force.Zero())
    for frame, jid in zip(pair.frames, pair.pin_ids):
        f = rng.normal(size=6)
        f_ext[m.body_names.index(frame)] = f
        pin_forces[jid] = pin.Force(f[3:], f[:3])
    dq, dv, _ = dc.rnea_derivatives(m, d, pair.q, pair.v, pair.a, f_ext)
    pdq, pdv, _ = pin.computeRNEADerivatives(pm, pd, pair.q, pair.pin_v(pair.v), pair.pin_v(pair.a), pin_forces)
    assert_close(dq, pair.ours(pdq, columns=True), "dtau_dq with f_ext")
    assert_close(dv, pair.ours(pdv, columns=True), "dtau_dv with f_ext")
    assert all(n not in m.actuated_joints for j in m.multi_dof_joints for n in m.joint_names[j.body:j.body + j.nv])


def test_second_order_contact_derivatives_by_central_differences(pair):
    """constrained_ and impulse_dynamics_second_derivatives against central differences (step 1e-5) of
    the first order (Pinocchio-checked above), q through integrate."""
    m, d = pair.model, pair.data
    q, v, tau = pair.q, pair.v, pair.tau
    contacts = [dc.Contact(pair.frames[k], kind, reference="local") for k, kind in _well_posed_contacts(pair)]
    h = 1e-5

    def along_q(function):
        return _stencil(function, q, _Steps(lambda x, e: dc.integrate(m, x, e), m.nv), h)

    def along_v(function):
        return _stencil(function, v, _Steps(lambda x, e: x + e, m.nv), h)

    ours = dc.constrained_dynamics_second_derivatives(m, d, q, v, tau, contacts)
    Dq = along_q(lambda x: dc.constrained_dynamics_derivatives(m, d, x, v, tau, contacts))
    Dv = along_v(lambda x: dc.constrained_dynamics_derivatives(m, d, q, x, tau, contacts))
    references = (Dq[0], Dv[1], Dv[0], Dq[2], Dq[3], Dv[4], Dv[3], Dq[5])
    names = ("d2a_dq2", "d2a_dv2", "d2a_dqdv", "d2a_dtaudq", "d2lam_dq2", "d2lam_dv2", "d2lam_dqdv", "d2lam_dtaudq")
    for what, value, reference in zip(names, ours, references):
        _assert_difference(np.array(value), reference, what, 1e-7)
    ours = dc.impulse_dynamics_second_derivatives(m, d, q, v, contacts, 0.3)
    Dq = along_q(lambda x: dc.impulse_dynamics_derivatives(m, d, x, v, contacts, 0.3))
    # [i, j, k] = d2 y_i / dq_j dv-_k: d/dq_j of the v- column k
    references = (Dq[0], Dq[1].transpose(0, 2, 1), Dq[2], Dq[3].transpose(0, 2, 1))
    names = ("d2vplus_dq2", "d2vplus_dqdvminus", "d2impulse_dq2", "d2impulse_dqdvminus")
    for what, value, reference in zip(names, ours, references):
        _assert_difference(np.array(value), reference, what, 1e-7)
