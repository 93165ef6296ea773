"""Joint terms (armature I_a, viscous F_v and Coulomb F_c friction) in the dynamics, derivatives,
regressor and Model API.

Oracles: Pinocchio 4, which includes `model.armature` in rnea, aba, crba, computeMinverse, the RNEA
and ABA derivatives and constraintDynamics; for friction (Pinocchio has none) the closed form
F_v v + F_c tanh(v / v_s) and central differences; for payloads Pinocchio's inertias with the payload
added at the frame's placement.
"""
import functools

import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from dyn_control.kernels.joint_terms import COULOMB_VELOCITY_SCALE
from oracles import JIT_DISABLED, central_difference, pin_q, random_state, robot_urdf

pytestmark = pytest.mark.kernels

ROBOTS = ["panda"] if JIT_DISABLED else ["panda", "ur5_robot", "kinova"]  # kinova: continuous joints
VS = COULOMB_VELOCITY_SCALE


def assert_close(ours, reference, what, tolerance=1e-10):
    ours, reference = np.asarray(ours), np.asarray(reference)
    assert ours.shape == reference.shape, f"{what}: shape {ours.shape} != {reference.shape}"
    scale = max(1.0, float(np.abs(reference).max(initial=0.0)))
    error = float(np.abs(ours - reference).max(initial=0.0))
    assert error <= tolerance * scale, f"{what}: max error {error:.3e} (reference scale {scale:.3e})"


def symmetric_from_upper(A):
    return np.triu(A) + np.triu(A, 1).T


def friction(model, v):
    """The closed form F_v v + F_c tanh(v / v_s), per joint of the tree."""
    return model.viscous_friction * v + model.coulomb_friction * np.tanh(v / VS)


class Robot:
    """One URDF with random joint terms, in both libraries (Pinocchio gets the armature)."""

    def __init__(self, name):
        path = robot_urdf(name)
        rng = np.random.default_rng(sum(map(ord, name)))
        self.rigid = dc.load_urdf(path)
        nb = self.rigid.nbodies
        self.model = self.rigid.with_joint_dynamics(armature=rng.uniform(0.05, 0.5, nb),
                                                    viscous=rng.uniform(0.1, 2.0, nb),
                                                    coulomb=rng.uniform(0.1, 3.0, nb))
        self.armature_only = self.rigid.with_joint_dynamics(armature=self.model.armature)
        self.data = self.model.create_data()
        self.pm = pin.buildModelFromUrdf(path)
        self.pm.armature[:] = self.model.armature  # one velocity per joint, in the same order
        self.pd = self.pm.createData()
        self.q, self.v, self.a = random_state(self.model, rng)
        self.v_slow = VS * rng.normal(size=nb)  # where tanh(v / v_s) bends
        self.tau = 5.0 * rng.normal(size=nb)
        self.qp = pin_q(self.pm, self.q)


@functools.lru_cache(maxsize=None)
def robot(name):
    return Robot(name)


@pytest.mark.parametrize("name", ROBOTS)
def test_armature_matches_pinocchio(name):
    """Armature alone: every algorithm against Pinocchio's with model.armature set."""
    r = robot(name)
    model, data, pm, pd = r.armature_only, r.armature_only.create_data(), r.pm, r.pd
    q, v, a, tau, qp = r.q, r.v, r.a, r.tau, r.qp
    assert_close(dc.rnea(model, data, q, v, a), pin.rnea(pm, pd, qp, v, a), "rnea")
    assert_close(dc.aba(model, data, q, v, tau), pin.aba(pm, pd, qp, v, tau), "aba")
    assert_close(dc.crba(model, data, q), symmetric_from_upper(pin.crba(pm, pd, qp)), "crba")
    assert_close(dc.minverse(model, data, q), symmetric_from_upper(pin.computeMinverse(pm, pd, qp)), "minverse")
    assert_close(dc.nonlinear_effects(model, data, q, v), pin.nonLinearEffects(pm, pd, qp, v), "nle")
    dq, dv, M = dc.rnea_derivatives(model, data, q, v, a)
    pin.computeRNEADerivatives(pm, pd, qp, v, a)
    assert_close(dq, pd.dtau_dq, "dtau_dq")
    assert_close(dv, pd.dtau_dv, "dtau_dv")
    assert_close(M, symmetric_from_upper(pd.M), "dtau_da")
    da_dq, da_dv, Minv = dc.aba_derivatives(model, data, q, v, tau)
    pin.computeABADerivatives(pm, pd, qp, v, tau)
    assert_close(da_dq, pd.ddq_dq, "ddq_dq")
    assert_close(da_dv, pd.ddq_dv, "ddq_dv")
    assert_close(Minv, symmetric_from_upper(pd.Minv), "Minv")


@pytest.mark.parametrize("name", ROBOTS)
def test_friction_is_the_closed_form_and_aba_inverts_rnea(name):
    r = robot(name)
    model, data, rigid = r.model, r.data, r.armature_only
    rigid_data = rigid.create_data()
    for v in (r.v, r.v_slow):
        extra = friction(model, v)
        assert_close(dc.rnea(model, data, r.q, v, r.a), dc.rnea(rigid, rigid_data, r.q, v, r.a) + extra, "rnea")
        assert_close(dc.nonlinear_effects(model, data, r.q, v),
                     dc.nonlinear_effects(rigid, rigid_data, r.q, v) + extra, "nle = rnea(q, v, 0)")
        assert_close(dc.aba(model, data, r.q, v, r.tau), dc.aba(rigid, rigid_data, r.q, v, r.tau - extra), "aba")
        a = dc.aba(model, data, r.q, v, r.tau).copy()
        assert_close(dc.rnea(model, data, r.q, v, a), r.tau, "rnea(aba(tau)) = tau")
        M = dc.crba(model, data, r.q).copy()
        assert_close(M @ a + dc.nonlinear_effects(model, data, r.q, v), r.tau, "M a + nle = tau")
    # gravity and the Coriolis matrix stay the rigid body's
    assert_close(dc.gravity(model, data, r.q), pin.computeGeneralizedGravity(r.pm, r.pd, r.qp), "gravity")
    assert_close(dc.coriolis_matrix(model, data, r.q, r.v), pin.computeCoriolisMatrix(r.pm, r.pd, r.qp, r.v),
                 "coriolis_matrix")
    assert_close(dc.crba(model, data, r.q), symmetric_from_upper(pin.crba(r.pm, r.pd, r.qp)), "crba")


@pytest.mark.parametrize("name", ROBOTS)
def test_first_order_derivatives_with_friction(name):
    """Closed form against the armature-only model (Pinocchio-checked above), and central differences
    where the smooth sign bends (v ~ v_s: step 1e-4 v_s, truncation ~1e-9 of F_c)."""
    r = robot(name)
    model, data, q, a, tau = r.model, r.data, r.q, r.a, r.tau
    rigid = r.armature_only
    rigid_data = rigid.create_data()
    for v in (r.v, r.v_slow):
        slope = np.diag(model.viscous_friction + model.coulomb_friction * (1.0 - np.tanh(v / VS) ** 2) / VS)
        dq, dv, M = (x.copy() for x in dc.rnea_derivatives(model, data, q, v, a))
        rq, rv, rM = dc.rnea_derivatives(rigid, rigid_data, q, v, a)
        assert_close(dq, rq, "dtau_dq")
        assert_close(dv, rv + slope, "dtau_dv")
        assert_close(M, rM, "dtau_da")
        eps = 1e-4 * VS
        assert_close(dv, central_difference(lambda x: dc.rnea(model, data, q, x, a).copy(), v, eps), "dtau_dv (fd)",
                     1e-6)
        da_dq, da_dv, Minv = (x.copy() for x in dc.aba_derivatives(model, data, q, v, tau))
        assert_close(Minv, np.linalg.inv(M), "Minv")
        assert_close(da_dv, central_difference(lambda x: dc.aba(model, data, q, x, tau).copy(), v, eps),
                     "ddq_dv (fd)", 1e-6)
        assert_close(da_dq, central_difference(lambda x: dc.aba(model, data, x, v, tau).copy(), q), "ddq_dq (fd)",
                     1e-6)
        assert_close(dc.minverse(model, data, q), Minv, "minverse")


def test_second_order_derivatives_with_joint_terms():
    """d2tau_dv2 gains F_c sgn_s''(v_i) on [i, i, i]; the forward-dynamics tensors follow M + diag(I_a):
    central differences of the (checked) first-order derivatives."""
    r = robot("ur5_robot" if not JIT_DISABLED else "panda")
    model, data, q, tau = r.model, r.data, r.q, r.tau
    v = r.v_slow
    n = model.nv
    d2q, d2v, d2qv, dM = (x.copy() for x in dc.rnea_second_derivatives(model, data, q, v, r.a))
    eps = 1e-4 * VS
    fd_v = central_difference(lambda x: dc.rnea_derivatives(model, data, q, x, r.a)[1].copy(), v, eps)
    assert_close(d2v, fd_v, "d2tau_dv2", 1e-5)
    f2q, f2v, f2qv, dMinv = (x.copy() for x in dc.aba_second_derivatives(model, data, q, v, tau))
    fd_v = central_difference(lambda x: dc.aba_derivatives(model, data, q, x, tau)[1].copy(), v, eps)
    assert_close(f2v, fd_v, "d2ddq_dv2", 1e-5)
    fd_q = central_difference(lambda x: dc.aba_derivatives(model, data, x, v, tau)[0].copy(), q)
    assert_close(f2q, fd_q, "d2ddq_dq2", 1e-5)
    fd_Minv = central_difference(lambda x: dc.minverse(model, data, x).copy(), q)
    assert_close(dMinv, fd_Minv, "dMinv_dq", 1e-5)
    assert d2q.shape == d2qv.shape == dM.shape == (n, n, n)


@pytest.mark.parametrize("name", ROBOTS)
def test_regressor_with_the_joint_block(name):
    r = robot(name)
    model, data = r.model, r.data
    nb = model.nbodies
    theta = model.parameters()
    for v in (r.v, r.v_slow):
        Y = dc.regressor(model, data, r.q, v, r.a, joint_terms=True).copy()
        assert Y.shape == (model.nv, 13 * nb)
        assert_close(Y @ theta, dc.rnea(model, data, r.q, v, r.a), "Y theta = rnea")
        # the inertial block is the rigid regressor, the joint block [a_i, v_i, sgn_s(v_i)] in row i
        np.testing.assert_array_equal(Y[:, :10 * nb], dc.regressor(model, data, r.q, v, r.a))
        expected = np.zeros((nb, 3 * nb))
        for i in range(nb):
            expected[i, 3 * i:3 * i + 3] = r.a[i], v[i], np.tanh(v[i] / VS)
        np.testing.assert_allclose(Y[:, 10 * nb:], expected, rtol=1e-15, atol=0.0)
    assert dc.regressor(model, data, r.q, r.v, r.a).shape == (model.nv, 10 * nb)
    # batch: each sample bit for bit the serial call
    rng = np.random.default_rng(5)
    T = 40
    qs = np.array([random_state(model, rng)[0] for _ in range(T)])
    vs, as_ = rng.normal(size=(T, nb)), rng.normal(size=(T, nb))
    Yb = dc.regressor_batch(model, qs, vs, as_, joint_terms=True)
    assert Yb.shape == (T, nb, 13 * nb)
    for t in (0, 17, T - 1):
        np.testing.assert_array_equal(Yb[t], dc.regressor(model, data, qs[t], vs[t], as_[t], joint_terms=True))
    assert dc.regressor_batch(model, qs, vs, as_).shape == (T, nb, 10 * nb)
    # the other batches include the joint terms too
    tau_b = dc.rnea_batch(model, qs, vs, as_)
    dq_b, dv_b, M_b = dc.rnea_derivatives_batch(model, qs, vs, as_)
    for t in (0, T - 1):
        np.testing.assert_array_equal(tau_b[t], dc.rnea(model, data, qs[t], vs[t], as_[t]))
        dq, dv, M = dc.rnea_derivatives(model, data, qs[t], vs[t], as_[t])
        np.testing.assert_array_equal(dv_b[t], dv)
        np.testing.assert_array_equal(M_b[t], M)


def test_mimic_coupled_model_applies_the_terms_in_tree_coordinates():
    """Panda's fingers: the mimic finger's terms act on its own tree coordinate, G^T maps them."""
    path = robot_urdf("panda")
    rng = np.random.default_rng(11)
    coupled = dc.load_urdf(path, mimic=True)
    nb = coupled.nbodies
    model = coupled.with_joint_dynamics(rng.uniform(0.1, 0.5, nb), rng.uniform(0.1, 1.0, nb), rng.uniform(0.1, 1.0, nb))
    data = model.create_data()
    rigid_data = coupled.create_data()
    G = model.coupling
    q, v, a = random_state(model, rng)
    v_t, a_t = G @ v, G @ a
    joint = model.armature * a_t + friction(model, v_t)
    assert_close(dc.rnea(model, data, q, v, a), dc.rnea(coupled, rigid_data, q, v, a) + G.T @ joint, "rnea")
    M = dc.crba(model, data, q).copy()
    assert_close(M, dc.crba(coupled, rigid_data, q) + G.T @ np.diag(model.armature) @ G, "crba")
    tau = rng.normal(size=model.nv)
    assert_close(dc.rnea(model, data, q, v, dc.aba(model, data, q, v, tau).copy()), tau, "rnea(aba)")
    Y = dc.regressor(model, data, q, v, a, joint_terms=True)
    assert_close(Y @ model.parameters(), dc.rnea(model, data, q, v, a), "Y theta = rnea")
    _, dv, _ = dc.rnea_derivatives(model, data, q, v, a)
    assert_close(dv, central_difference(lambda x: dc.rnea(model, data, q, x, a).copy(), v, 1e-7), "dtau_dv", 1e-6)


def test_constrained_dynamics_with_joint_terms():
    """Armature: Pinocchio's constraintDynamics (armature set); friction: the same solve with
    tau - friction(v) (it is a known joint torque); derivatives in v: central differences."""
    r = robot("panda")
    model, data = r.model, r.data
    contact = dc.Contact("panda_hand", "point", "local_world_aligned")
    hand = r.pm.frames[r.pm.getFrameId("panda_hand")]
    cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, r.pm, hand.parentJoint, hand.placement,
                                  pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    models.append(cm)
    datas.append(cm.createData())
    pin.initConstraintDynamics(r.pm, r.pd, models, datas)
    rigid = r.armature_only
    a, lam = (x.copy() for x in dc.constrained_dynamics(rigid, rigid.create_data(), r.q, r.v, r.tau, [contact]))
    assert_close(a, pin.constraintDynamics(r.pm, r.pd, r.qp, r.v, r.tau, models, datas), "a (armature)", 1e-9)
    assert_close(lam, r.pd.lambda_c, "lambda (armature)", 1e-9)
    a_f, lam_f = dc.constrained_dynamics(model, data, r.q, r.v, r.tau, [contact])
    a_ref, lam_ref = dc.constrained_dynamics(rigid, rigid.create_data(), r.q, r.v, r.tau - friction(model, r.v),
                                             [contact])
    assert_close(a_f, a_ref, "a (friction)")
    assert_close(lam_f, lam_ref, "lambda (friction)")
    da_dq, da_dv, *_ = dc.constrained_dynamics_derivatives(model, data, r.q, r.v, r.tau, [contact])
    fd = central_difference(lambda x: dc.constrained_dynamics(model, data, r.q, x, r.tau, [contact])[0].copy(), r.v)
    assert_close(da_dv, fd, "da_dv", 1e-6)
    v_plus, _ = dc.impulse_dynamics(model, data, r.q, r.v, [contact])
    assert_close(v_plus, pin.impulseDynamics(r.pm, r.pd, r.qp, r.v, models, datas, 0.0), "impulse (armature)", 1e-9)


def test_parameters_labels_and_with_parameters():
    model = robot("panda").model
    nb = model.nbodies
    theta = model.parameters()
    labels = model.parameter_labels()
    assert theta.shape == (13 * nb,) and len(labels) == 13 * nb
    assert labels[0] == f"{model.body_names[0]}/m" and labels[9] == f"{model.body_names[0]}/Iyz"
    assert labels[10 * nb:10 * nb + 3] == [f"{model.joint_names[0]}/{p}" for p in ("armature", "viscous", "coulomb")]
    np.testing.assert_array_equal(theta[:10 * nb], model.inertial_parameters())
    np.testing.assert_array_equal(theta[10 * nb:].reshape(nb, 3), model.joint_parameters())
    np.testing.assert_array_equal(model.joint_parameters()[:, 2], model.coulomb_friction)
    changed = theta.copy()
    changed[10 * nb:] *= 2.0
    changed[0] *= 1.5
    other = model.with_parameters(changed)
    np.testing.assert_array_equal(other.parameters(), changed)
    np.testing.assert_array_equal(model.parameters(), theta)  # the original is untouched
    assert not model.armature.flags.writeable
    with pytest.raises(ValueError, match="parameters"):
        model.with_parameters(theta[:10 * nb])
    bad = theta.copy()
    bad[10 * nb + 4] = -1.0
    with pytest.raises(ValueError, match=f"viscous of joint '{model.joint_names[1]}'"):
        model.with_parameters(bad)


def test_with_joint_dynamics_keeps_and_checks():
    rigid = robot("panda").rigid
    nb = rigid.nbodies
    assert not np.any(rigid.joint_terms)  # load_urdf applies no joint terms ...
    assert rigid.damping[0] == 0.003      # ... and keeps the URDF's <dynamics> as written
    model = rigid.with_joint_dynamics(armature=0.1).with_joint_dynamics(coulomb=np.arange(nb))
    np.testing.assert_array_equal(model.armature, np.full(nb, 0.1))
    np.testing.assert_array_equal(model.coulomb_friction, np.arange(nb))
    np.testing.assert_array_equal(model.viscous_friction, np.zeros(nb))
    urdf = rigid.with_joint_dynamics(viscous=rigid.damping, coulomb=rigid.friction)
    np.testing.assert_array_equal(urdf.viscous_friction, rigid.damping)
    for kwargs, message in [
        ({"armature": -0.1}, f"armature of joint '{rigid.joint_names[0]}' must be finite and >= 0"),
        ({"viscous": [0.0] * (nb - 1) + [np.nan]}, f"viscous of joint '{rigid.joint_names[-1]}'"),
        ({"coulomb": np.inf}, "coulomb of joint"),
        ({"coulomb": [1.0, 2.0]}, "coulomb must be a number or"),
        ({"armature": "big"}, "armature must be"),
    ]:
        with pytest.raises(ValueError, match=message):
            rigid.with_joint_dynamics(**kwargs)


def test_zero_joint_terms_give_the_rigid_kernels_bit_for_bit():
    """A model whose terms are all zero: results equal to the rigid-body kernels run directly."""
    from dyn_control.kernels import crba as crba_kernel
    from dyn_control.kernels import rnea as rnea_kernel
    r = robot("panda")
    model = r.model.with_joint_dynamics(0.0, 0.0, 0.0)
    data, scratch = model.create_data(), model.create_data()
    tau = np.empty(model.nv)
    assert rnea_kernel.rnea(model._parents, model._screw_axes, model._home_R, model._home_p, model._phi, r.q, r.v,
                            r.a, model._base_accel, scratch._f_ext_zero, scratch._R, scratch._p, scratch._V,
                            scratch._Vdot, scratch._F, scratch._tmp6, tau)
    assert np.array_equal(dc.rnea(model, data, r.q, r.v, r.a), tau)
    M = np.empty((model.nv, model.nv))
    assert crba_kernel.crba(model._parents, model._screw_axes, model._home_R, model._home_p, model._phi, r.q,
                            scratch._R, scratch._p, scratch._oR, scratch._op, scratch._oS, scratch._phi_composite,
                            scratch._F, M)
    assert np.array_equal(dc.crba(model, data, r.q), M)


def payload_case():
    path = dc.bundled_urdf("arm7")
    model = dc.load_urdf(path)
    rng = np.random.default_rng(8)
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    inertia = Q @ np.diag([0.004, 0.006, 0.008]) @ Q.T
    return path, model, 1.5, np.array([0.01, -0.02, 0.06]), inertia


def test_with_payload_matches_pinocchio():
    """The payload added to Pinocchio's joint inertia at the tool frame's placement."""
    path, model, mass, com, inertia = payload_case()
    loaded = model.with_payload("arm7_tool", mass, com, inertia)
    pm = pin.buildModelFromUrdf(path)
    frame = pm.frames[pm.getFrameId("arm7_tool")]
    pm.inertias[frame.parentJoint] += frame.placement.act(pin.Inertia(mass, com, inertia))
    pd = pm.createData()
    rng = np.random.default_rng(9)
    q, v, a = random_state(loaded, rng)
    data = loaded.create_data()
    qp = pin_q(pm, q)
    assert_close(dc.rnea(loaded, data, q, v, a), pin.rnea(pm, pd, qp, v, a), "rnea with payload")
    assert_close(dc.crba(loaded, data, q), symmetric_from_upper(pin.crba(pm, pd, qp)), "crba with payload")
    assert loaded.total_mass() == pytest.approx(model.total_mass() + mass, rel=1e-14)
    # a point mass by default; a joint name stands for its child link
    point = model.with_payload("arm7_joint7", 2.0)
    assert_close(dc.gravity(point, point.create_data(), q) - dc.gravity(model, model.create_data(), q),
                 -2.0 * dc.jacobian(model, model.create_data(), q, "arm7_joint7", "local_world_aligned")[3:].T
                 @ model.gravity, "gravity of a point mass at the joint-7 frame", 1e-12)


def test_with_payload_refuses_what_is_not_a_rigid_body():
    _, model, mass, com, inertia = payload_case()
    cases = [
        (dict(mass=-1.0), "mass must be"), (dict(mass=np.nan), "mass must be"),
        (dict(center_of_mass=[0.0, np.inf, 0.0]), "center_of_mass"),
        (dict(center_of_mass=[0.0, 0.0]), "center_of_mass"),
        (dict(inertia=np.diag([1.0, 1.0, -0.1])), "positive semi-definite"),
        (dict(inertia=np.diag([0.1, 0.1, 1.0])), "triangle inequality"),
        (dict(inertia=[[1.0, 0.1, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), "symmetric"),
        (dict(inertia=np.eye(2)), "inertia must be"),
        (dict(mass=0.0, inertia=np.eye(3)), "massless payload"),
    ]
    for changes, message in cases:
        args = dict(mass=mass, center_of_mass=com, inertia=inertia)
        args.update(changes)
        with pytest.raises(ValueError, match=message):
            model.with_payload("arm7_tool", **args)
    with pytest.raises(ValueError, match="unknown frame"):
        model.with_payload("no_such_link", mass)
    with pytest.raises(ValueError, match="fixed to the root"):
        model.with_payload(model.root_name, mass)
