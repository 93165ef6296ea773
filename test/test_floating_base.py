"""Floating-base models (root_joint "free_flyer") against Pinocchio's JointModelFreeFlyer on every
example-robot-data URDF (legged robots, humanoids, and arms set free), against central differences
on the manifold (through dc.integrate), and a falling free flyer against MuJoCo's free joint.

Pinocchio orders a free flyer's velocity linear first: `ours` permutes its six coordinates (and
the rows and columns of matrices) to ours, angular first. Every quantity agrees to 1e-9 relative to
max(1, |reference|), forward dynamics with the tolerance grown by cond(M) / 1e7 beyond 1e7 (as in
test_dynamics_pinocchio.py).
"""
import functools
import os
import re

import mujoco
import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from dyn_control import contact
from oracles import OURS_FROM_PIN_PARAM, JIT_DISABLED, all_robot_urdfs, pin_q, robot_urdf, swap_halves

pytestmark = pytest.mark.kernels

TOLERANCE = 1e-9
ALL_URDFS = dict(all_robot_urdfs())
JIT_OFF_ROBOTS = ("solo12", "talos_reduced")
ROBOTS = [rel for rel in ALL_URDFS if not JIT_DISABLED or os.path.basename(rel)[:-5] in JIT_OFF_ROBOTS]
N_STATES = 1 if JIT_DISABLED else 2
ANGULAR_FIRST = [3, 4, 5, 0, 1, 2]


def order(nv):
    """Our velocity coordinates as indices into Pinocchio's."""
    return np.r_[ANGULAR_FIRST, np.arange(6, nv)]


def ours(x, rows=True, columns=False):
    """A Pinocchio vector or matrix with the free flyer's coordinates in our order."""
    x = np.asarray(x)
    if rows:
        x = x[order(x.shape[0])]
    if columns:
        x = x[:, order(x.shape[1])]
    return x


def assert_close(value, reference, what, amplification=1.0):
    value, reference = np.asarray(value), np.asarray(reference)
    assert value.shape == reference.shape, f"{what}: shape {value.shape} != {reference.shape}"
    scale = max(1.0, float(np.abs(reference).max(initial=0.0)))
    error = float(np.abs(value - reference).max(initial=0.0))
    assert error <= TOLERANCE * amplification * scale, f"{what}: max error {error:.3e} (scale {scale:.3e})"


class Robot:
    """One URDF with a free-flyer root in both libraries, and random states (q, v, a, tau, f_ext)."""

    def __init__(self, rel):
        self.path = ALL_URDFS[rel]
        self.skip_reason = None
        try:
            self.pin_model = pin.buildModelFromUrdf(self.path, pin.JointModelFreeFlyer())
        except Exception as err:  # Pinocchio's own parse errors are plain exceptions
            self.skip_reason = f"Pinocchio cannot load {rel}: {str(err).splitlines()[0]}"
            return
        self.pin_data = self.pin_model.createData()
        self.model = dc.load_urdf(self.path, root_joint="free_flyer")
        self.data = self.model.create_data()
        rng = np.random.default_rng(sum(map(ord, rel)))
        self.states = []
        for _ in range(N_STATES):
            q = dc.random_configuration(self.model, rng)
            v, a, tau = rng.normal(size=(3, self.model.nv))
            f_ext = rng.normal(size=(self.model.nbodies, 6))
            f_ext[:5] = 0.0  # the free flyer's massless bodies
            self.states.append((q, v, a, tau, f_ext))

    def pin_q(self, q):
        """Our q as Pinocchio's: (cos, sin) for continuous joints after the free flyer."""
        out = list(q[:7])
        for k, joint in enumerate(self.pin_model.joints[2:]):
            angle = q[7 + k]
            out += [np.cos(angle), np.sin(angle)] if joint.nq == 2 else [angle]
        return np.array(out)

    def pin_forces(self, f_ext):
        return [pin.Force.Zero()] + [pin.Force(swap_halves(f)) for f in f_ext[5:]]

    def amplification(self, q):
        M = dc.crba(self.model, self.data, q)
        return max(1.0, np.linalg.cond(M) / 1e7)


@functools.lru_cache(maxsize=None)
def _robot(rel):
    return Robot(rel)


def robot(rel):
    r = _robot(rel)
    if r.skip_reason:
        pytest.skip(r.skip_reason)
    return r


@pytest.mark.parametrize("rel", ROBOTS)
def test_the_model_is_pinocchios(rel):
    """The free flyer's six coordinates first (named root_joint_wx .. root_joint_vz), then the same
    joints in the same order; the root link's inertia is the free flyer's body's."""
    r = robot(rel)
    m, pm = r.model, r.pin_model
    continuous = sum(joint.nq == 2 for joint in pm.joints[2:])  # one angle here, (cos, sin) there
    assert (m.nq + continuous, m.nv) == (pm.nq, pm.nv)
    assert list(m.joint_names[6:]) == list(pm.names[2:])
    assert m.actuated_joints == m.joint_names[6:]
    assert m.body_names[5] == m.root_name
    assert not np.any(m.phi[:5])
    inertia = pm.inertias[1]
    assert_close(m.phi[5, 0], inertia.mass, "root mass")
    assert_close(m.phi[5, 1:4], inertia.mass * inertia.lever, "root first moment")
    assert m.total_mass() == pytest.approx(sum(i.mass for i in pm.inertias[1:]), rel=1e-12, abs=1e-12)
    np.testing.assert_array_equal(dc.neutral(m)[:7], pin.neutral(pm)[:7])


@pytest.mark.parametrize("rel", ROBOTS)
def test_dynamics(rel):
    r = robot(rel)
    m, d, pm, pd = r.model, r.data, r.pin_model, r.pin_data
    for q, v, a, tau, f_ext in r.states:
        back = np.argsort(order(m.nv))  # ours -> Pinocchio's order
        pq, pv, pa, ptau = r.pin_q(q), v[back], a[back], tau[back]
        assert_close(dc.rnea(m, d, q, v, a), ours(pin.rnea(pm, pd, pq, pv, pa)), "rnea")
        assert_close(dc.rnea(m, d, q, v, a, f_ext), ours(pin.rnea(pm, pd, pq, pv, pa, r.pin_forces(f_ext))),
                     "rnea with f_ext")
        assert_close(dc.nonlinear_effects(m, d, q, v), ours(pin.nonLinearEffects(pm, pd, pq, pv)), "nle")
        assert_close(dc.gravity(m, d, q), ours(pin.computeGeneralizedGravity(pm, pd, pq)), "gravity")
        assert_close(dc.coriolis_matrix(m, d, q, v), ours(pin.computeCoriolisMatrix(pm, pd, pq, pv), columns=True),
                     "coriolis_matrix")
        upper = np.triu(pin.crba(pm, pd, pq))
        assert_close(dc.crba(m, d, q), ours(upper + np.triu(upper, 1).T, columns=True), "crba")
        expected = pin.aba(pm, pd, pq, pv, ptau).copy()
        if not np.all(np.isfinite(expected)):   # M(q) singular (massless links moved by a joint)
            with pytest.raises(ValueError, match="M\\(q\\) is singular"):
                dc.aba(m, d, q, v, tau)
            continue
        amplification = r.amplification(q)
        assert_close(dc.aba(m, d, q, v, tau), ours(expected), "aba", amplification)
        assert_close(dc.aba(m, d, q, v, tau, f_ext), ours(pin.aba(pm, pd, pq, pv, ptau, r.pin_forces(f_ext))),
                     "aba with f_ext", amplification)
        upper = np.triu(pin.computeMinverse(pm, pd, pq))
        assert_close(dc.minverse(m, d, q), ours(upper + np.triu(upper, 1).T, columns=True), "minverse",
                     amplification)


@pytest.mark.parametrize("rel", ROBOTS)
def test_kinematics(rel):
    r = robot(rel)
    m, d, pm, pd = r.model, r.data, r.pin_model, r.pin_data
    references = {"world": pin.WORLD, "local": pin.LOCAL, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
    frames = [m.root_name, m.frame_names[len(m.frame_names) // 2], m.frame_names[-1]]
    for q, *_ in r.states:
        pq = r.pin_q(q)
        pin.framesForwardKinematics(pm, pd, pq)
        poses = dc.forward_kinematics(m, d, q)
        for name, pose in zip(m.frame_names, poses):
            assert_close(pose, pd.oMf[pm.getFrameId(name, pin.BODY)].homogeneous, f"pose of {name!r}")
        for name in frames:
            for reference, pin_reference in references.items():
                expected = pin.computeFrameJacobian(pm, pd, pq, pm.getFrameId(name, pin.BODY), pin_reference)
                assert_close(dc.jacobian(m, d, q, name, reference), ours(swap_halves(expected), False, True),
                             f"jacobian of {name!r} ({reference})")


@pytest.mark.parametrize("rel", ROBOTS)
def test_task_space(rel):
    """frame_velocity, frame_jacobian_time_variation, frame_classical_acceleration against Pinocchio's
    getFrameVelocity, getFrameJacobianTimeVariation and getFrameClassicalAcceleration; the
    operational-space inertia against (J M^-1 J^T)^-1 from Pinocchio's J and M."""
    r = robot(rel)
    m, d, pm, pd = r.model, r.data, r.pin_model, r.pin_data
    references = {"world": pin.WORLD, "local": pin.LOCAL, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
    back = np.argsort(order(m.nv))
    for q, v, a, *_ in r.states:
        pq, pv, pa = r.pin_q(q), v[back], a[back]
        pin.forwardKinematics(pm, pd, pq, pv, pa)
        pin.computeJointJacobiansTimeVariation(pm, pd, pq, pv)
        pin.updateFramePlacements(pm, pd)
        for name in (m.root_name, m.frame_names[-1]):
            fid = pm.getFrameId(name, pin.BODY)
            for reference, pin_reference in references.items():
                what = f"{name!r} ({reference})"
                assert_close(dc.frame_velocity(m, d, q, v, name, reference),
                             swap_halves(pin.getFrameVelocity(pm, pd, fid, pin_reference).vector), "velocity " + what)
                expected = pin.getFrameJacobianTimeVariation(pm, pd, fid, pin_reference)
                assert_close(dc.frame_jacobian_time_variation(m, d, q, v, name, reference),
                             ours(swap_halves(expected), False, True), "dJ/dt " + what)
                assert_close(dc.frame_classical_acceleration(m, d, q, v, a, name, reference),
                             swap_halves(pin.getFrameClassicalAcceleration(pm, pd, fid, pin_reference).vector),
                             "classical acceleration " + what)
        name = m.frame_names[-1]
        J = ours(swap_halves(pin.computeFrameJacobian(pm, pd, pq, pm.getFrameId(name, pin.BODY),
                                                      pin.LOCAL_WORLD_ALIGNED)), False, True)
        M = dc.crba(m, d, q).copy()
        if np.linalg.eigvalsh(M)[0] <= 0.0:   # massless links moved by a joint (romeo's thumbs)
            with pytest.raises(ValueError, match="M\\(q\\) is not positive definite"):
                dc.operational_space_inertia(m, d, q, name)
            continue
        assert_close(np.linalg.inv(dc.operational_space_inertia(m, d, q, name)), J @ np.linalg.solve(M, J.T),
                     "operational_space_inertia^-1", r.amplification(q))


@pytest.mark.parametrize("rel", ROBOTS)
def test_derivatives(rel):
    r = robot(rel)
    m, d, pm, pd = r.model, r.data, r.pin_model, r.pin_data
    back = np.argsort(order(m.nv))
    for q, v, a, tau, f_ext in r.states:
        pq, pv, pa, ptau = r.pin_q(q), v[back], a[back], tau[back]
        pin.computeRNEADerivatives(pm, pd, pq, pv, pa, r.pin_forces(f_ext))
        dq, dv, M = dc.rnea_derivatives(m, d, q, v, a, f_ext)
        assert_close(dq, ours(pd.dtau_dq, columns=True), "dtau_dq")
        assert_close(dv, ours(pd.dtau_dv, columns=True), "dtau_dv")
        assert_close(M, ours(pd.M, columns=True), "dtau_da")
        if not np.all(np.isfinite(pin.aba(pm, pd, pq, pv, ptau))):
            continue
        amplification = r.amplification(q)
        for forces in (None, f_ext):
            if forces is None:
                pin.computeABADerivatives(pm, pd, pq, pv, ptau)
            else:
                pin.computeABADerivatives(pm, pd, pq, pv, ptau, r.pin_forces(forces))
            da_dq, da_dv, Minv = dc.aba_derivatives(m, d, q, v, tau, forces)
            what = "" if forces is None else " with f_ext"
            assert_close(da_dq, ours(pd.ddq_dq, columns=True), "ddq_dq" + what, amplification)
            assert_close(da_dv, ours(pd.ddq_dv, columns=True), "ddq_dv" + what, amplification)
            assert_close(Minv, ours(pd.Minv, columns=True), "Minv" + what, amplification)


@pytest.mark.parametrize("rel", ROBOTS)
def test_regressor(rel):
    """The joint torque regressor against Pinocchio's computeJointTorqueRegressor (its root joint's
    columns are the root link's, body 5 here; the free flyer's massless bodies' columns are zero), and
    Y @ parameters is rnea with the joint terms."""
    r = robot(rel)
    m, d, pm, pd = r.model, r.data, r.pin_model, r.pin_data
    back = np.argsort(order(m.nv))
    for q, v, a, *_ in r.states:
        Y = dc.regressor(m, d, q, v, a)
        expected = pin.computeJointTorqueRegressor(pm, pd, r.pin_q(q), v[back], a[back])
        expected = expected.reshape(m.nv, m.nbodies - 5, 10)[:, :, OURS_FROM_PIN_PARAM].reshape(m.nv, -1)
        assert_close(Y[:, 50:], ours(expected), "regressor")
        assert not np.any(Y[:, :50])
        assert_close(Y @ m.inertial_parameters(), dc.rnea(m, d, q, v, a), "Y phi")
        actuated = np.r_[np.zeros(6), np.ones(m.nv - 6)]
        model = m.with_joint_dynamics(armature=0.1 * actuated, viscous=0.2 * actuated, coulomb=0.3 * actuated)
        data = model.create_data()
        assert_close(dc.regressor(model, data, q, v, a, joint_terms=True) @ model.parameters(),
                     dc.rnea(model, data, q, v, a), "Y_full parameters")


@pytest.mark.parametrize("rel", ROBOTS)
@pytest.mark.parametrize("root_joint", [None, "free_flyer"])
def test_centroidal(rel, root_joint):
    """Centre of mass, its Jacobian, the centroidal momentum matrix, the momentum and its rate
    (computeCentroidalMomentumTimeVariation), fixed and floating bases."""
    r = robot(rel)
    if root_joint is None:
        pm = pin.buildModelFromUrdf(r.path)
        m = dc.load_urdf(r.path)
        columns = np.arange(m.nv)
    else:
        pm, m, columns = r.pin_model, r.model, order(r.model.nv)
    pd, d = pm.createData(), m.create_data()
    rng = np.random.default_rng(7)
    for _ in range(N_STATES):
        q = dc.random_configuration(m, rng)
        pq = r.pin_q(q) if root_joint else pin_q(pm, q)
        if m.total_mass() == 0.0:   # Pinocchio's centre of mass is then NaN
            with pytest.raises(ValueError, match="has no mass: its centre of mass is undefined"):
                dc.center_of_mass(m, d, q)
            return
        assert_close(dc.center_of_mass(m, d, q), pin.centerOfMass(pm, pd, pq), "center_of_mass")
        assert_close(dc.jacobian_center_of_mass(m, d, q), pin.jacobianCenterOfMass(pm, pd, pq)[:, columns],
                     "jacobian_center_of_mass")
        pin.ccrba(pm, pd, pq, np.zeros(pm.nv))
        assert_close(dc.centroidal_momentum_matrix(m, d, q), swap_halves(pd.Ag)[:, columns],
                     "centroidal_momentum_matrix")
        v, a = rng.normal(size=(2, m.nv))
        v_pin, a_pin = np.empty(m.nv), np.empty(m.nv)
        v_pin[columns], a_pin[columns] = v, a
        pin.computeCentroidalMomentumTimeVariation(pm, pd, pq, v_pin, a_pin)
        h, dh = dc.centroidal_momentum_time_variation(m, d, q, v, a)
        assert_close(h, np.r_[pd.hg.angular, pd.hg.linear], "centroidal momentum")
        assert_close(dh, np.r_[pd.dhg.angular, pd.dhg.linear], "centroidal momentum's rate")
        assert_close(dc.centroidal_momentum(m, d, q, v), h, "centroidal_momentum")


@pytest.mark.parametrize("name, options", [("panda", {"mimic": True}), ("solo12", {"root_joint": "free_flyer"})])
def test_centroidal_momentum_rate_by_central_differences(name, options):
    """dh_g/dt = A_g a + dA_g/dt v against central differences of h_g along q(t) = integrate(q, t v +
    t^2 a / 2), v(t) = v + t a (whose acceleration at t = 0 is a): a mimic-coupled panda (no
    Pinocchio counterpart) and solo12 on a free flyer."""
    m = dc.load_urdf(robot_urdf(name), **options)
    d = m.create_data()
    rng = np.random.default_rng(11)
    q = dc.random_configuration(m, rng)
    v, a = rng.normal(size=(2, m.nv))
    h, dh = (x.copy() for x in dc.centroidal_momentum_time_variation(m, d, q, v, a))

    def momentum(t):
        return dc.centroidal_momentum(m, d, dc.integrate(m, q, t * v + 0.5 * t * t * a), v + t * a)

    assert_close(momentum(0.0), h, "h_g")
    difference = (momentum(1e-5) - momentum(-1e-5)) / 2e-5
    assert np.abs(difference - dh).max() <= 1e-7 * max(1.0, np.abs(dh).max()), "dh_g"


@pytest.mark.parametrize("rel", ROBOTS)
def test_configuration_space(rel):
    """integrate, difference and their Jacobians against Pinocchio's (a quaternion and its negative
    are one orientation; a continuous joint is one angle here, so its difference is not wrapped to
    [-pi, pi] as Pinocchio's (cos, sin) pair is); difference undoes integrate for rotations below pi."""
    r = robot(rel)
    m, pm = r.model, r.pin_model
    rng = np.random.default_rng(3)
    for q, v, *_ in r.states:
        back = np.argsort(order(m.nv))
        pq, pv = r.pin_q(q), v[back]
        q1 = dc.integrate(m, q, v)
        expected = pin.integrate(pm, pq, pv)
        sign = np.sign(q1[3:7] @ expected[3:7])
        assert_close(np.r_[q1[:3], sign * q1[3:7]], expected[:7], "integrate")
        small = v * min(1.0, 3.0 / np.linalg.norm(v[:3]))
        assert_close(dc.difference(m, q, dc.integrate(m, q, small)), small, "difference of integrate")
        q2 = dc.random_configuration(m, rng)
        wrapped = dc.difference(m, q, q2)
        continuous = 6 + np.flatnonzero([joint.nq == 2 for joint in pm.joints[2:]])
        wrapped[continuous] = np.angle(np.exp(1j * wrapped[continuous]))
        assert_close(wrapped, ours(pin.difference(pm, pq, r.pin_q(q2))), "difference")
        d_q, d_v = dc.integrate_jacobians(m, q, v)
        assert_close(d_q, ours(pin.dIntegrate(pm, pq, pv, pin.ARG0), columns=True), "integrate / dq")
        assert_close(d_v, ours(pin.dIntegrate(pm, pq, pv, pin.ARG1), columns=True), "integrate / dv")
        d_0, d_1 = dc.difference_jacobians(m, q, q2)
        pq2 = r.pin_q(q2)
        assert_close(d_0, ours(pin.dDifference(pm, pq, pq2, pin.ARG0), columns=True), "difference / dq0")
        assert_close(d_1, ours(pin.dDifference(pm, pq, pq2, pin.ARG1), columns=True), "difference / dq1")


def central_difference(f, model, q, eps=1e-6):
    """d f / d q (tangent space) by central differences through dc.integrate."""
    columns = []
    for j in range(model.nv):
        dv = np.zeros(model.nv)
        dv[j] = eps
        columns.append((np.array(f(dc.integrate(model, q, dv))) - np.array(f(dc.integrate(model, q, -dv)))) / (2 * eps))
    return np.column_stack(columns)


@pytest.mark.parametrize("name", ["solo12", "anymal", "talos_reduced"])
def test_derivatives_by_central_differences_on_the_manifold(name):
    """d/dq of rnea, aba, the com and a frame's position through integrate, 1e-6 relative; and the
    integrate / difference Jacobians likewise."""
    model = dc.load_urdf(robot_urdf(name), root_joint="free_flyer")
    data = model.create_data()
    rng = np.random.default_rng(11)
    q = dc.random_configuration(model, rng)
    v, a, tau = rng.normal(size=(3, model.nv))
    f_ext = np.zeros((model.nbodies, 6))
    f_ext[5:] = rng.normal(size=(model.nbodies - 5, 6))

    def close(analytic, numeric, what):
        scale = max(1.0, np.abs(numeric).max())
        assert np.abs(analytic - numeric).max() <= 1e-6 * scale, f"{what}: {np.abs(analytic - numeric).max():.2e}"

    dq = dc.rnea_derivatives(model, data, q, v, a, f_ext)[0].copy()
    close(dq, central_difference(lambda x: dc.rnea(model, data, x, v, a, f_ext).copy(), model, q), "dtau_dq")
    da_dq = dc.aba_derivatives(model, data, q, v, tau)[0].copy()
    close(da_dq, central_difference(lambda x: dc.aba(model, data, x, v, tau).copy(), model, q), "ddq_dq")
    J = dc.jacobian_center_of_mass(model, data, q).copy()
    close(J, central_difference(lambda x: dc.center_of_mass(model, data, x).copy(), model, q), "J_com")
    frame = model.frame_names[-1]
    J = dc.jacobian(model, data, q, frame, "local_world_aligned")[3:].copy()
    close(J, central_difference(lambda x: dc.frame_pose(model, data, x, frame)[:3, 3].copy(), model, q),
          "jacobian (frame origin)")
    d_q, d_v = dc.integrate_jacobians(model, q, v)
    q1 = dc.integrate(model, q, v)
    close(d_q, central_difference(lambda x: dc.difference(model, q1, dc.integrate(model, x, v)), model, q),
          "integrate / dq")
    eps = 1e-6
    numeric = np.column_stack([(dc.difference(model, q1, dc.integrate(model, q, v + eps * e))
                                - dc.difference(model, q1, dc.integrate(model, q, v - eps * e))) / (2 * eps)
                               for e in np.eye(model.nv)])
    close(d_v, numeric, "integrate / dv")


FALLING_URDF = """<robot name="tumbler">
  <link name="base"><inertial><origin xyz="0.05 -0.02 0.01" rpy="0.3 0.1 -0.2"/><mass value="3.0"/>
    <inertia ixx="0.05" ixy="0.004" ixz="-0.002" iyy="0.08" iyz="0.003" izz="0.06"/></inertial></link>
  <link name="arm"><inertial><origin xyz="0.2 0.0 0.05" rpy="0 0 0"/><mass value="1.2"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.015"/></inertial></link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/>
    <origin xyz="0.1 0.05 0.0" rpy="0 0.4 0"/><axis xyz="0 0.6 0.8"/>
    <limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
</robot>"""

FALLING_MJCF = """<mujoco><compiler angle="radian"/><option timestep="0.001" integrator="RK4"/>
  <worldbody><body name="base"><freejoint/>
    <inertial pos="0.05 -0.02 0.01" mass="3.0" fullinertia="{}"/>
    <body name="arm" pos="0.1 0.05 0" euler="0 0.4 0">
      <joint name="hinge" type="hinge" axis="0 0.6 0.8"/>
      <inertial pos="0.2 0 0.05" mass="1.2" diaginertia="0.01 0.02 0.015"/>
    </body></body></worldbody></mujoco>"""


def test_a_falling_free_flyer_is_mujocos_free_joint():
    """A two-body robot thrown tumbling: our aba against MuJoCo's free joint, qacc at random states
    (MuJoCo's free velocity is [world linear velocity; body angular velocity], its quaternion w first)."""
    model = dc.load_urdf(FALLING_URDF, root_joint="free_flyer")
    data = model.create_data()
    # the base's inertia about its centre of mass in the base's axes: R I R^T, R of the URDF's rpy
    R = pin.rpy.rpyToMatrix(0.3, 0.1, -0.2)
    inertia = R @ np.array([[0.05, 0.004, -0.002], [0.004, 0.08, 0.003], [-0.002, 0.003, 0.06]]) @ R.T
    full = [inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2], inertia[1, 2]]
    mj = mujoco.MjModel.from_xml_string(FALLING_MJCF.format(" ".join(f"{float(x)!r}" for x in full)))
    mjd = mujoco.MjData(mj)
    rng = np.random.default_rng(5)
    for _ in range(5):
        q = dc.random_configuration(model, rng)
        v = rng.normal(size=model.nv) * 2.0
        R = dc.frame_pose(model, data, q, "base")[:3, :3].copy()
        mjd.qpos[:] = [*q[:3], q[6], *q[3:6], q[7]]
        # our v: [w; R^T pdot] in the base frame; MuJoCo's: [pdot (world); w (base frame)]
        mjd.qvel[:] = [*(R @ v[3:6]), *v[:3], v[6]]
        mujoco.mj_forward(mj, mjd)
        a = dc.aba(model, data, q, v, np.zeros(model.nv))
        # MuJoCo's qacc = [pddot (world); wdot (base)], pddot = R (a_lin + w x v_lin)
        expected = np.r_[mjd.qacc[3:6], R.T @ mjd.qacc[:3] - np.cross(v[:3], v[3:6]), mjd.qacc[6]]
        np.testing.assert_allclose(a, expected, rtol=1e-9, atol=1e-9)


def with_floating_joint(urdf, joint='<joint name="to_world" type="floating">', origin=""):
    """The URDF text with a world link and a floating joint from it to the root link (as URDFs
    written for simulators have them)."""
    xml = open(urdf).read()
    children = set(re.findall(r'<child\s+link="([^"]+)"', xml))
    root = next(name for name in re.findall(r'<link\s+name="([^"]+)"', xml) if name not in children)
    first = re.search(r'<link\s', xml).group(0)
    return xml.replace(first, f'<link name="world"/>{joint}<parent link="world"/><child link="{root}"/>{origin}'
                       f'</joint>{first}', 1)


@pytest.mark.parametrize("name", ["solo12", "talos_full_v2"])
def test_a_urdf_floating_joint_is_the_free_flyer(name):
    """A floating joint from a world link: Pinocchio's URDF parser makes it a JointModelFreeFlyer, ours
    the model's free flyer on its child; the dynamics agree on random states."""
    xml = with_floating_joint(robot_urdf(name))
    pm = pin.buildModelFromXML(xml)
    assert pm.joints[1].shortname() == "JointModelFreeFlyer"
    model = dc.load_urdf(xml)
    free = dc.load_urdf(robot_urdf(name), root_joint="free_flyer")
    assert (model.root_joint, model.root_name, model.joint_names) == ("free_flyer", free.root_name, free.joint_names)
    assert "world" not in model.frame_names
    data, pd = model.create_data(), pm.createData()
    rng = np.random.default_rng(7)
    back = np.argsort(order(model.nv))
    for _ in range(2):
        q = dc.random_configuration(model, rng)
        v, a, tau = rng.normal(size=(3, model.nv))
        pq = np.concatenate([q[:7], [x for k, joint in enumerate(pm.joints[2:])
                                     for x in ([np.cos(q[7 + k]), np.sin(q[7 + k])] if joint.nq == 2 else [q[7 + k]])]])
        assert_close(dc.rnea(model, data, q, v, a), ours(pin.rnea(pm, pd, pq, v[back], a[back])), "rnea")
        assert_close(dc.aba(model, data, q, v, tau), ours(pin.aba(pm, pd, pq, v[back], tau[back])), "aba",
                     max(1.0, np.linalg.cond(dc.crba(model, data, q)) / 1e7))


def test_what_a_floating_base_refuses():
    path = robot_urdf("solo12")
    model = dc.load_urdf(path, root_joint="free_flyer")
    data = model.create_data()
    q = dc.random_configuration(model, 1)
    v = np.zeros(model.nv)
    with pytest.raises(ValueError, match=r"q\[3:7\], the free flyer's orientation .* unit quaternion, got norm (2\.0|1\.99)"):
        dc.rnea(model, data, np.r_[q[:3], 2 * q[3:7], q[7:]], v, v)
    np.testing.assert_allclose(dc.normalize(model, np.r_[q[:3], 2 * q[3:7], q[7:]]), q, rtol=1e-15)
    with pytest.raises(ValueError, match=r"q must have shape \(19,\)"):
        dc.rnea(model, data, q[:18], v, v)
    f_ext = np.zeros((model.nbodies, 6))
    f_ext[2, 4] = 1.0
    with pytest.raises(ValueError, match="f_ext rows 0-4 are the free flyer's massless bodies"):
        dc.rnea(model, data, q, v, v, f_ext)
    with pytest.raises(ValueError, match=r"unit quaternion at samples \[1\]"):
        dc.rnea_batch(model, np.stack([q, np.r_[q[:3], 2 * q[3:7], q[7:]]]), np.zeros((2, 18)), np.zeros((2, 18)))
    with pytest.raises(ValueError, match="eta of the free flyer's coordinates .* must be zero"):
        model.with_twist_perturbation(np.ones((model.nbodies, 6)))
    with pytest.raises(ValueError, match="takes fixed-base models only"):
        dc.control.wrench_from_joint_torque(model, data, q, v, "FL_FOOT")
    with pytest.raises(ValueError, match="joint terms act on the actuated 1-DoF joints only: the free flyer"):
        model.with_joint_dynamics(viscous=0.1)
    assert model.with_joint_dynamics(viscous=[0.0] * 6 + [0.1] * 12).viscous_friction[6:].tolist() == [0.1] * 12
    with pytest.raises(ValueError, match="root_joint must be None or 'free_flyer'"):
        dc.load_urdf(path, root_joint="planar")
    with pytest.raises(ValueError, match="non-finite"):
        dc.aba(model, data, np.r_[q[:7], np.nan, q[8:]], v, v)


FEET = {"solo12": ("FL_FOOT", "HR_FOOT", "HL_FOOT"), "anymal": ("LF_FOOT", "RH_FOOT", "LH_FOOT"),
        "go1": ("FL_foot", "RR_foot", "RL_foot"), "talos_reduced": ("left_sole_link", "right_sole_link")}
CONTACT_CASES = [(name, kind, reference) for name in (("solo12",) if JIT_DISABLED else FEET)
                 for kind in ("point", "frame") for reference in ("local", "local_world_aligned")]
RESTITUTION = 0.3


def pin_constraints(r, contacts):
    pm = r.pin_model
    models = pin.StdVec_RigidConstraintModel()
    for c in contacts:
        kind = pin.ContactType.CONTACT_3D if c.kind == "point" else pin.ContactType.CONTACT_6D
        ref = pin.ReferenceFrame.LOCAL if c.reference == "local" else pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        frame = pm.frames[pm.getFrameId(c.frame)]
        models.append(pin.RigidConstraintModel(kind, pm, frame.parentJoint, frame.placement, 0, pin.SE3(c.anchor), ref))
    datas = pin.StdVec_RigidConstraintData()
    for cm in models:
        datas.append(cm.createData())
    pin.initConstraintDynamics(pm, r.pin_data, models, datas)
    return models, datas


def pin_rows(x, contacts, columns=False):
    """Pinocchio's stacked rows in our order (6D halves swapped); columns: its velocity order too."""
    x = np.asarray(x)
    blocks, start = [], 0
    for c in contacts:
        block = x[start:start + c.dim]
        blocks.append(swap_halves(block) if c.dim == 6 else block)
        start += c.dim
    out = np.concatenate(blocks)
    return ours(out, False, True) if columns else out


@pytest.mark.parametrize("name, kind, reference", CONTACT_CASES)
def test_contacts(name, kind, reference):
    """Constrained and impulse dynamics of feet on the ground and their first-order derivatives
    against Pinocchio's constraintDynamics, impulseDynamics and their derivatives (free flyer);
    the first foot a 6D frame contact, the others `kind`; to 1e-6 (test_contact.py's 1e-7 for the
    KKT solve's conditioning, with the 1e-9 here grown by 1e3)."""
    r = robot(next(rel for rel in ROBOTS if os.path.basename(rel) == name + ".urdf"))
    m, d, pm, pd = r.model, r.data, r.pin_model, r.pin_data
    # 6D contacts on two feet only: on a third, a quadruped's three-joint legs leave the rows redundant
    # (Pinocchio's regularized solve and our minimum-norm forces then differ)
    feet = FEET[name][1:2] if kind == "frame" else FEET[name][1:]
    contacts = [dc.Contact(FEET[name][0], "frame", reference)] + [dc.Contact(foot, kind, reference) for foot in feet]
    q, v, _, tau, _ = r.states[0]
    back = np.argsort(order(m.nv))
    pq, pv, ptau = r.pin_q(q), v[back], tau[back]
    models, datas = pin_constraints(r, contacts)
    expected_a = pin.constraintDynamics(pm, pd, pq, pv, ptau, models, datas).copy()
    expected_lam = pin_rows(pd.lambda_c, contacts)
    expected = pin.computeConstraintDynamicsDerivatives(pm, pd, models, datas)
    expected = ([ours(x, columns=True) for x in expected[:3]]
                + [pin_rows(x, contacts, columns=True) for x in expected[3:]])
    v_plus_ref = pin.impulseDynamics(pm, pd, pq, pv, models, datas, RESTITUTION).copy()
    impulses_ref = pin_rows(pd.impulse_c, contacts)
    pin.computeImpulseDynamicsDerivatives(pm, pd, models, datas, RESTITUTION)
    # Pinocchio's ddq_dv is the derivative of the jump v+ - v-
    impulse_references = (ours(pd.ddq_dq, columns=True), ours(pd.ddq_dv, columns=True) + np.eye(m.nv),
                          pin_rows(pd.dlambda_dq, contacts, columns=True),
                          pin_rows(pd.dlambda_dv, contacts, columns=True))
    # the compiled kernels on the first call (checked) and the second (the fast path), and the NumPy
    # functions on the twin that Baumgarte gains and a singular M or G take
    paths = {"call": (dc.constrained_dynamics, dc.constrained_dynamics_derivatives, dc.impulse_dynamics,
                      dc.impulse_dynamics_derivatives)}
    paths["fast call"] = paths["call"]
    paths["NumPy on the twin"] = (contact._floating_constrained_dynamics,
                                  contact._floating_constrained_dynamics_derivatives,
                                  contact._floating_impulse_dynamics, contact._floating_impulse_dynamics_derivatives)
    for path, (forward, derivatives, impulse, impulse_derivatives) in paths.items():
        a, lam = forward(m, d, q, v, tau, contacts)
        assert_close(a, ours(expected_a), f"{path}: a", 1e3)
        assert_close(lam, expected_lam, f"{path}: lambda", 1e3)
        names = ("da_dq", "da_dv", "da_dtau", "dlam_dq", "dlam_dv", "dlam_dtau")
        for what, x, ref in zip(names, derivatives(m, d, q, v, tau, contacts), expected):
            assert_close(x, ref, f"{path}: {what}", 1e3)
        v_plus, impulses = impulse(m, d, q, v, contacts, RESTITUTION)
        assert_close(v_plus, ours(v_plus_ref), f"{path}: v_plus", 1e3)
        assert_close(impulses, impulses_ref, f"{path}: impulses", 1e3)
        names = ("dv_plus_dq", "dv_plus_dv", "dimpulses_dq", "dimpulses_dv")
        for what, x, ref in zip(names, impulse_derivatives(m, d, q, v, contacts, RESTITUTION), impulse_references):
            assert_close(x, ref, f"{path}: {what}", 1e3)


@pytest.mark.parametrize("name", ["solo12", "talos_reduced"])
def test_contact_derivatives_by_central_differences_on_the_manifold(name):
    """d/dq of constrained and impulse dynamics through integrate, world-aligned rows (which turn with
    the root), 1e-6 relative."""
    model = dc.load_urdf(robot_urdf(name), root_joint="free_flyer")
    data = model.create_data()
    rng = np.random.default_rng(13)
    q = dc.random_configuration(model, rng)
    v, tau = rng.normal(size=(2, model.nv))
    contacts = [dc.Contact(FEET[name][0], "point", "local_world_aligned"), dc.Contact(FEET[name][1], "frame", "local")]

    def close(analytic, numeric, what):
        scale = max(1.0, np.abs(numeric).max())
        assert np.abs(analytic - numeric).max() <= 1e-6 * scale, f"{what}: {np.abs(analytic - numeric).max():.2e}"

    da_dq, _, _, dlam_dq, _, _ = dc.constrained_dynamics_derivatives(model, data, q, v, tau, contacts)
    numeric = central_difference(lambda x: np.concatenate(dc.constrained_dynamics(model, data, x, v, tau, contacts)),
                                 model, q)
    close(da_dq, numeric[:model.nv], "da_dq")
    close(dlam_dq, numeric[model.nv:], "dlam_dq")
    dv_dq, _, dimpulse_dq, _ = dc.impulse_dynamics_derivatives(model, data, q, v, contacts, RESTITUTION)
    numeric = central_difference(
        lambda x: np.concatenate(dc.impulse_dynamics(model, data, x, v, contacts, RESTITUTION)), model, q)
    close(dv_dq, numeric[:model.nv], "dv_plus_dq")
    close(dimpulse_dq, numeric[model.nv:], "dimpulses_dq")


@pytest.mark.parametrize("name", ["solo12"] if JIT_DISABLED else ["solo12", "talos_reduced"])
def test_second_order_derivatives_by_central_differences_of_the_first(name):
    """rnea's and aba's second-order tensors (with external forces) against central differences of
    the first-order derivatives (checked against Pinocchio above) through integrate: iterated
    derivatives, d2[:, j, k] = d (d/dq_j) / dq_k, whose root block is not symmetric."""
    model = dc.load_urdf(robot_urdf(name), root_joint="free_flyer")
    data = model.create_data()
    rng = np.random.default_rng(17)
    q = dc.random_configuration(model, rng)
    v, a, tau = rng.normal(size=(3, model.nv))
    f_ext = np.zeros((model.nbodies, 6))
    f_ext[5:] = rng.normal(size=(model.nbodies - 5, 6))
    nv, eps = model.nv, 1e-6

    def along(function, index, k):
        """Central difference of function(...)[index] along the k-th tangent direction of q and of v."""
        e = np.zeros(nv)
        e[k] = eps
        dq = function(dc.integrate(model, q, e), v)[index].copy() - function(dc.integrate(model, q, -e), v)[index]
        dv = function(q, v + e)[index].copy() - function(q, v - e)[index].copy()
        return dq / (2 * eps), dv / (2 * eps)

    def close(analytic, numeric, what, tolerance=1e-6):
        scale = max(1.0, np.abs(numeric).max())
        assert np.abs(analytic - numeric).max() <= tolerance * scale, f"{what}: {np.abs(analytic - numeric).max():.2e}"

    d2q, d2v, d2qv, dM = (x.copy() for x in dc.rnea_second_derivatives(model, data, q, v, a, f_ext))
    first = lambda x, y: dc.rnea_derivatives(model, data, x, y, a, f_ext)  # noqa: E731
    numeric = [[along(first, index, k) for k in range(nv)] for index in range(3)]
    close(d2q, np.stack([numeric[0][k][0] for k in range(nv)], axis=2), "d2tau_dq2")
    close(d2qv, np.stack([numeric[0][k][1] for k in range(nv)], axis=2), "d2tau_dqdv")
    close(d2v, np.stack([numeric[1][k][1] for k in range(nv)], axis=2), "d2tau_dv2")
    close(dM, np.stack([numeric[2][k][0] for k in range(nv)], axis=2), "dM_dq")
    d2q, d2v, d2qv, dMinv = (x.copy() for x in dc.aba_second_derivatives(model, data, q, v, tau, f_ext))
    first = lambda x, y: dc.aba_derivatives(model, data, x, y, tau, f_ext)  # noqa: E731
    numeric = [[along(first, index, k) for k in range(nv)] for index in range(3)]
    # forward dynamics: M^-1 amplifies the differences' round-off (cond(M) 8e3 and 9e4 here): 1e-5
    close(d2q, np.stack([numeric[0][k][0] for k in range(nv)], axis=2), "d2ddq_dq2", 1e-5)
    close(d2qv, np.stack([numeric[0][k][1] for k in range(nv)], axis=2), "d2ddq_dqdv", 1e-5)
    close(d2v, np.stack([numeric[1][k][1] for k in range(nv)], axis=2), "d2ddq_dv2", 1e-5)
    close(dMinv, np.stack([numeric[2][k][0] for k in range(nv)], axis=2), "dMinv_dq", 1e-5)


@pytest.mark.parametrize("name", ["solo12", "talos_reduced"])
def test_twist_derivatives_by_central_differences(name):
    """d tau / d eta of the joints' screws (with external forces) against central differences of rnea
    on Model.with_twist_perturbation; the free flyer's columns are zero."""
    model = dc.load_urdf(robot_urdf(name), root_joint="free_flyer")
    data = model.create_data()
    rng = np.random.default_rng(19)
    q = dc.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    f_ext = np.zeros((model.nbodies, 6))
    f_ext[5:] = rng.normal(size=(model.nbodies - 5, 6))
    analytic = dc.twist_derivatives(model, data, q, v, a, f_ext).copy()
    assert not np.any(analytic[:, :36])
    eps = 1e-6
    for column in range(36, 6 * model.nbodies, 7):   # every joint, each of its six components in turn
        eta = np.zeros(6 * model.nbodies)
        eta[column] = eps
        plus, minus = model.with_twist_perturbation(eta), model.with_twist_perturbation(-eta)
        numeric = dc.rnea(plus, plus.create_data(), q, v, a, f_ext).copy()
        numeric -= dc.rnea(minus, minus.create_data(), q, v, a, f_ext)
        numeric /= 2 * eps
        scale = max(1.0, np.abs(numeric).max())
        assert np.abs(analytic[:, column] - numeric).max() <= 1e-6 * scale, f"column {column}"


@pytest.mark.parametrize("name", ["solo12", "talos_reduced"])
def test_batches_are_the_single_calls(name):
    """rnea, aba, rnea_derivatives and the regressor over samples, and identification's reductions,
    against the single calls (checked against Pinocchio above), to 1e-9: the batches move each sample's
    gravity into the accelerations of a gravity-free twin, the single calls turn it into the root
    link's frame. The regressor's columns of the free flyer's massless bodies and joint terms are zero."""
    model = dc.load_urdf(robot_urdf(name), root_joint="free_flyer")
    actuated = np.r_[np.zeros(6), np.ones(model.nv - 6)]
    model = model.with_joint_dynamics(armature=0.05 * actuated, viscous=0.1 * actuated, coulomb=0.2 * actuated)
    data = model.create_data()
    rng = np.random.default_rng(23)
    T = 6
    q = np.stack([dc.random_configuration(model, rng) for _ in range(T)])
    v, a, tau = rng.normal(size=(3, T, model.nv))

    def close(batch, single, what):
        single = np.asarray(single)
        scale = max(1.0, np.abs(single).max())
        assert np.abs(batch - single).max() <= 1e-9 * scale, f"{what}: {np.abs(batch - single).max():.2e}"

    tau_b = dc.rnea_batch(model, q, v, a)
    ddq_b = dc.aba_batch(model, q, v, tau)
    derivatives_b = dc.rnea_derivatives_batch(model, q, v, a)
    Y_b = dc.regressor_batch(model, q, v, a, joint_terms=True)
    for t in range(T):
        close(tau_b[t], dc.rnea(model, data, q[t], v[t], a[t]), "rnea_batch")
        close(ddq_b[t], dc.aba(model, data, q[t], v[t], tau[t]), "aba_batch")
        for batch, single, what in zip(derivatives_b, dc.rnea_derivatives(model, data, q[t], v[t], a[t]),
                                       ("dtau_dq", "dtau_dv", "M")):
            close(batch[t], single, what + " batch")
        close(Y_b[t], dc.regressor(model, data, q[t], v[t], a[t], joint_terms=True), "regressor_batch")
    assert not np.any(Y_b[:, :, 10 * model.nbodies:10 * model.nbodies + 18]) and not np.any(Y_b[:, :, :50])
    close(Y_b @ model.parameters(), tau_b, "Y theta")
    YtY, Ytau = dc.regressor_normal_equations(model, q, v, a, tau)
    close(YtY, np.einsum("tip,tiq->pq", Y_b, Y_b), "YtY")
    close(Ytau, np.einsum("tip,ti->p", Y_b, tau), "Ytau")
    phi = model.parameters() * 1.1
    value, gradient = dc.residual_gradient_batch(model, q, v, a, tau, phi)
    residual = Y_b @ phi - tau
    close(value, 0.5 * np.sum(residual ** 2), "residual")
    close(gradient, np.einsum("tip,ti->p", Y_b, residual), "gradient")
