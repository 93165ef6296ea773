"""Acceptance: constrained (KKT) and impulse dynamics with point/frame contacts and loop closures,
and their first-order derivatives, against Pinocchio 4.1 (constraintDynamics,
computeConstraintDynamicsDerivatives, impulseDynamics, computeImpulseDynamicsDerivatives with
RigidConstraintModel CONTACT_3D / CONTACT_6D, LOCAL / LOCAL_WORLD_ALIGNED).

Pinocchio is linear-first: its 6D forces [f; n] are swapped into our [n; f]. Where Pinocchio is not
a valid oracle the tests say so and use another:
- its analytic derivatives of two-frame 3D constraints are not those of its own constraintDynamics
  (it moves the rotation of frame 1 with frame 2's joint): central differences of constraintDynamics;
- its impulseDynamics ignores frame 2's velocity (its J v+ is not zero): the impact laws
  J v+ = -e J v- and M (v+ - v-) = J^T impulses with Pinocchio's J and M, and central differences;
- the five-bar's 6D closure has three empty rows (all axes through one point) and a massless cut
  body, which Pinocchio's exact solver cannot take: the five-bar mapping's forward dynamics.
Tolerance 1e-7 relative to max(1, |reference|), central differences 1e-6.
"""
import functools

import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from oracles import JIT_DISABLED, central_difference, pin_q, random_state, robot_urdf, swap_halves

pytestmark = pytest.mark.kernels

TOLERANCE = 1e-7
DIFFERENCE_TOLERANCE = 1e-6
RESTITUTION = 0.3
KINDS = [(kind, reference) for kind in ("point", "frame") for reference in ("local", "local_world_aligned")]
SINGLE = ["panda"] if JIT_DISABLED else ["panda", "ur5_robot"]
DERIVATIVE_NAMES = ("da_dq", "da_dv", "da_dtau", "dlam_dq", "dlam_dv", "dlam_dtau")


def assert_close(ours, reference, what, tolerance=TOLERANCE):
    ours, reference = np.asarray(ours), np.asarray(reference)
    assert ours.shape == reference.shape, f"{what}: shape {ours.shape} != {reference.shape}"
    scale = max(1.0, float(np.abs(reference).max(initial=0.0)))
    error = float(np.abs(ours - reference).max(initial=0.0))
    assert error <= tolerance * scale, f"{what}: max error {error:.3e} (reference scale {scale:.3e})"


class Robot:
    def __init__(self, name):
        path = robot_urdf(name)
        self.model = dc.load_urdf(path)
        self.data = self.model.create_data()
        self.pm = pin.buildModelFromUrdf(path)
        self.pd = self.pm.createData()
        rng = np.random.default_rng(sum(map(ord, name)))
        self.q, self.v, _ = random_state(self.model, rng)
        self.tau = 5.0 * rng.normal(size=self.model.nv)
        self.anchor = pin.SE3.Random().homogeneous

    def pin_constraints(self, contacts):
        """Pinocchio's constraint models and datas for our contacts (initialised)."""
        pm = self.pm
        models = pin.StdVec_RigidConstraintModel()
        for c in contacts:
            kind = pin.ContactType.CONTACT_3D if c.kind == "point" else pin.ContactType.CONTACT_6D
            ref = (pin.ReferenceFrame.LOCAL if c.reference == "local"
                   else pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
            f1 = pm.frames[pm.getFrameId(c.frame)]
            if c.other is None:
                cm = pin.RigidConstraintModel(kind, pm, f1.parentJoint, f1.placement, 0, pin.SE3(c.anchor),
                                              ref)
            else:
                f2 = pm.frames[pm.getFrameId(c.other)]
                cm = pin.RigidConstraintModel(kind, pm, f1.parentJoint, f1.placement, f2.parentJoint,
                                              f2.placement, ref)
            cm.m_baumgarte_parameters.Kp = float(c.kp[0])  # Pinocchio 4.1 takes scalar gains
            cm.m_baumgarte_parameters.Kd = float(c.kd[0])
            models.append(cm)
        datas = pin.StdVec_RigidConstraintData()
        for cm in models:
            datas.append(cm.createData())
        pin.initConstraintDynamics(pm, self.pd, models, datas)
        return models, datas

    def pin_constraint_dynamics(self, contacts, q, v, tau):
        models, datas = self.pin_constraints(contacts)
        a = pin.constraintDynamics(self.pm, self.pd, pin_q(self.pm, q), v, tau, models, datas)
        return np.concatenate([a, ours_rows(self.pd.lambda_c, contacts)])


def ours_rows(x, contacts):
    """Pinocchio's stacked constraint rows (axis 0) in our order: 6D halves swapped."""
    x = np.asarray(x)
    out, start = [], 0
    for c in contacts:
        block = x[start:start + c.dim]
        out.append(swap_halves(block) if c.dim == 6 else block)
        start += c.dim
    return np.concatenate(out)


@functools.lru_cache(maxsize=None)
def robot(name):
    return Robot(name)


def feet(kind, reference, other=False):
    if other:
        return [dc.Contact("left_sole_link", kind, reference, other="right_sole_link")]
    return [dc.Contact("left_sole_link", "frame", "local"),
            dc.Contact("right_sole_link", kind, reference)]


def single_contact(name, kind, reference):
    frame = {"panda": "panda_hand", "ur5_robot": "tool0"}[name]
    return [dc.Contact(frame, kind, reference)]


CASES = [(name, kind, reference) for name in SINGLE for kind, reference in KINDS]
if not JIT_DISABLED:
    CASES += [("talos_reduced", kind, reference) for kind, reference in KINDS[2:]]


LOOP_KINDS_OF_PATHS = KINDS[2:3] if JIT_DISABLED else KINDS


def contacts_of(name, kind, reference):
    return feet(kind, reference) if name == "talos_reduced" else single_contact(name, kind, reference)


# ------------------------------------------------------------------------------------------------
# contacts against the world


@pytest.mark.parametrize("name, kind, reference", CASES)
def test_constrained_dynamics_and_derivatives(name, kind, reference):
    r = robot(name)
    contacts = contacts_of(name, kind, reference)
    a, lam = dc.constrained_dynamics(r.model, r.data, r.q, r.v, r.tau, contacts)
    reference_solution = r.pin_constraint_dynamics(contacts, r.q, r.v, r.tau)
    assert_close(a, reference_solution[:r.model.nv], f"{name} {kind} {reference} a")
    assert_close(lam, reference_solution[r.model.nv:], f"{name} {kind} {reference} lambda")
    models, datas = r.pin_constraints(contacts)
    pin.constraintDynamics(r.pm, r.pd, pin_q(r.pm, r.q), r.v, r.tau, models, datas)
    pin_derivatives = pin.computeConstraintDynamicsDerivatives(r.pm, r.pd, models, datas)
    ours = dc.constrained_dynamics_derivatives(r.model, r.data, r.q, r.v, r.tau, contacts)
    for what, x, ref in zip(DERIVATIVE_NAMES, ours, pin_derivatives):
        if what.startswith("dlam"):
            ref = ours_rows(ref, contacts)
        assert_close(x, ref, f"{name} {kind} {reference} {what}")


@pytest.mark.parametrize("name, kind, reference", CASES)
def test_impulse_dynamics_and_derivatives(name, kind, reference):
    r = robot(name)
    contacts = contacts_of(name, kind, reference)
    models, datas = r.pin_constraints(contacts)
    v_plus_ref = pin.impulseDynamics(r.pm, r.pd, pin_q(r.pm, r.q), r.v, models, datas, RESTITUTION).copy()
    v_plus, impulses = dc.impulse_dynamics(r.model, r.data, r.q, r.v, contacts, RESTITUTION)
    assert_close(v_plus, v_plus_ref, f"{name} {kind} {reference} v_plus")
    assert_close(impulses, ours_rows(r.pd.impulse_c, contacts), f"{name} {kind} {reference} impulses")
    pin.computeImpulseDynamicsDerivatives(r.pm, r.pd, models, datas, RESTITUTION)
    ours = dc.impulse_dynamics_derivatives(r.model, r.data, r.q, r.v, contacts, RESTITUTION)
    # Pinocchio's ddq_dv is the derivative of the jump v+ - v-
    reference_derivatives = (r.pd.ddq_dq, r.pd.ddq_dv + np.eye(r.model.nv),
                             ours_rows(r.pd.dlambda_dq, contacts), ours_rows(r.pd.dlambda_dv, contacts))
    for what, x, ref in zip(("dv_plus_dq", "dv_plus_dv", "dimpulses_dq", "dimpulses_dv"), ours,
                            reference_derivatives):
        assert_close(x, ref, f"{name} {kind} {reference} {what}")


@pytest.mark.parametrize("name, kind, reference", CASES)
def test_compiled_path_matches_the_numpy_path(name, kind, reference, monkeypatch):
    """The compiled kernels (kernels/constrained_dynamics.py) and the NumPy fallback give one answer."""
    from dyn_control import contact
    r = robot(name)
    contacts = contacts_of(name, kind, reference)
    compiled = (dc.constrained_dynamics(r.model, r.data, r.q, r.v, r.tau, contacts)
                + dc.impulse_dynamics(r.model, r.data, r.q, r.v, contacts, RESTITUTION))
    assert r.data._contact_workspaces, "the compiled path was not taken"
    monkeypatch.setattr(contact, "_workspace", lambda *args: None)
    numpy_path = (dc.constrained_dynamics(r.model, r.data, r.q, r.v, r.tau, contacts)
                  + dc.impulse_dynamics(r.model, r.data, r.q, r.v, contacts, RESTITUTION))
    for what, x, ref in zip(("a", "lam", "v_plus", "impulses"), compiled, numpy_path):
        assert_close(x, ref, f"{name} {kind} {reference} {what}", 1e-10)


# the compiled derivatives (kernels/constrained_dynamics_derivatives.py): Pinocchio's cases of the
# benchmark (talos_reduced on two 6D feet, panda with a 3D point) and every contact set above
DERIVATIVE_CASES = [("panda", "point", "local"), ("panda", "point", "local_world_aligned")]
if not JIT_DISABLED:
    DERIVATIVE_CASES += [("talos_reduced", "frame", "local"), ("talos_reduced", "frame", "local_world_aligned")]
IMPULSE_NAMES = ("dv_plus_dq", "dv_plus_dv", "dimpulses_dq", "dimpulses_dv")


def compiled_derivatives(r, contacts, restitution, monkeypatch):
    """Both derivatives through the compiled kernels: the NumPy paths raise if they are taken."""
    from dyn_control import contact

    def refuse(*args):
        raise AssertionError("the NumPy path was taken")
    with monkeypatch.context() as patch:
        patch.setattr(contact, "_constrained_dynamics_derivatives_numpy", refuse)
        patch.setattr(contact, "_impulse_dynamics_derivatives_numpy", refuse)
        return (dc.constrained_dynamics_derivatives(r.model, r.data, r.q, r.v, r.tau, contacts),
                dc.impulse_dynamics_derivatives(r.model, r.data, r.q, r.v, contacts, restitution))


def numpy_derivatives(r, contacts, restitution, monkeypatch):
    from dyn_control import contact
    with monkeypatch.context() as patch:
        patch.setattr(contact, "_workspace", lambda *args: None)
        return (dc.constrained_dynamics_derivatives(r.model, r.data, r.q, r.v, r.tau, contacts),
                dc.impulse_dynamics_derivatives(r.model, r.data, r.q, r.v, contacts, restitution))


@pytest.mark.parametrize("restitution", [0.0, 0.5])
@pytest.mark.parametrize("name, kind, reference", DERIVATIVE_CASES)
def test_compiled_derivatives_against_pinocchio(name, kind, reference, restitution, monkeypatch):
    r = robot(name)
    contacts = contacts_of(name, kind, reference)
    constrained, impulse = compiled_derivatives(r, contacts, restitution, monkeypatch)
    for x in constrained + impulse:
        assert type(x) is np.ndarray and x.flags.c_contiguous and x.flags.writeable
    models, datas = r.pin_constraints(contacts)
    qp = pin_q(r.pm, r.q)
    pin.constraintDynamics(r.pm, r.pd, qp, r.v, r.tau, models, datas)
    for what, x, ref in zip(DERIVATIVE_NAMES, constrained,
                            pin.computeConstraintDynamicsDerivatives(r.pm, r.pd, models, datas)):
        assert_close(x, ours_rows(ref, contacts) if what.startswith("dlam") else ref, f"{name} {reference} {what}")
    pin.impulseDynamics(r.pm, r.pd, qp, r.v, models, datas, restitution)
    pin.computeImpulseDynamicsDerivatives(r.pm, r.pd, models, datas, restitution)
    reference_derivatives = (r.pd.ddq_dq, r.pd.ddq_dv + np.eye(r.model.nv),
                             ours_rows(r.pd.dlambda_dq, contacts), ours_rows(r.pd.dlambda_dv, contacts))
    for what, x, ref in zip(IMPULSE_NAMES, impulse, reference_derivatives):
        assert_close(x, ref, f"{name} {reference} e={restitution} {what}")


DERIVATIVE_PATH_CASES = CASES + [("loop", kind, reference) for kind, reference in LOOP_KINDS_OF_PATHS]


@pytest.mark.parametrize("restitution", [0.0, 0.5])
@pytest.mark.parametrize("name, kind, reference", DERIVATIVE_PATH_CASES)
def test_compiled_derivatives_match_the_numpy_path(name, kind, reference, restitution, monkeypatch):
    """Every kind of contact, against the world and as a loop closure: the compiled kernels and the
    NumPy reference path give one answer."""
    r = robot("talos_reduced" if name == "loop" else name)
    contacts = feet(kind, reference, other=True) if name == "loop" else contacts_of(name, kind, reference)
    compiled = compiled_derivatives(r, contacts, restitution, monkeypatch)
    numpy_path = numpy_derivatives(r, contacts, restitution, monkeypatch)
    for names, ours, ref in zip((DERIVATIVE_NAMES, IMPULSE_NAMES), compiled, numpy_path):
        for what, x, y in zip(names, ours, ref):
            assert_close(x, y, f"{name} {kind} {reference} e={restitution} {what}", 1e-9)


def test_redundant_rows_fall_back_to_minimum_norm_forces():
    """A contact given twice makes the Delassus matrix singular: the kernel declines, and the NumPy
    path's pseudo-inverse splits the force evenly with the single contact's accelerations."""
    r = robot("panda")
    single = single_contact("panda", "point", "local")
    a1, lam1 = dc.constrained_dynamics(r.model, r.data, r.q, r.v, r.tau, single)
    a2, lam2 = dc.constrained_dynamics(r.model, r.data, r.q, r.v, r.tau, single * 2)
    assert_close(a2, a1, "a")
    assert_close(lam2, np.concatenate([lam1, lam1]) / 2.0, "lambda")
    v1, p1 = dc.impulse_dynamics(r.model, r.data, r.q, r.v, single, RESTITUTION)
    v2, p2 = dc.impulse_dynamics(r.model, r.data, r.q, r.v, single * 2, RESTITUTION)
    assert_close(v2, v1, "v_plus")
    assert_close(p2, np.concatenate([p1, p1]) / 2.0, "impulses")


def test_derivatives_with_redundant_rows_fall_back_to_the_numpy_path(monkeypatch):
    """The derivative kernels decline with the forward kernel (G singular): the NumPy path answers,
    with the single contact's derivatives of a (v_plus) and half its derivatives of the forces for
    each copy (the minimum-norm forces)."""
    from dyn_control import contact
    r = robot("panda")
    single = single_contact("panda", "point", "local")
    taken = []
    for name in ("_constrained_dynamics_derivatives_numpy", "_impulse_dynamics_derivatives_numpy"):
        def spy(*args, _numpy=getattr(contact, name), _name=name):
            taken.append(_name)
            return _numpy(*args)
        monkeypatch.setattr(contact, name, spy)
    d1 = dc.constrained_dynamics_derivatives(r.model, r.data, r.q, r.v, r.tau, single)
    i1 = dc.impulse_dynamics_derivatives(r.model, r.data, r.q, r.v, single, RESTITUTION)
    assert not taken, "the single contact should take the compiled path"
    d2 = dc.constrained_dynamics_derivatives(r.model, r.data, r.q, r.v, r.tau, single * 2)
    i2 = dc.impulse_dynamics_derivatives(r.model, r.data, r.q, r.v, single * 2, RESTITUTION)
    assert taken == ["_constrained_dynamics_derivatives_numpy", "_impulse_dynamics_derivatives_numpy"]
    for what, x, ref in zip(DERIVATIVE_NAMES + IMPULSE_NAMES, d2 + i2, d1 + i1):
        if what.startswith(("dlam", "dimpulses")):
            ref = np.concatenate([ref, ref]) / 2.0
        assert_close(x, ref, f"redundant rows {what}")


@pytest.mark.parametrize("kind, reference", KINDS)
def test_baumgarte_gains_against_pinocchio(kind, reference):
    r = robot("panda")
    contacts = [dc.Contact("panda_hand", kind, reference, anchor=r.anchor, kp=30.0, kd=7.0)]
    a, lam = dc.constrained_dynamics(r.model, r.data, r.q, r.v, r.tau, contacts)
    reference_solution = r.pin_constraint_dynamics(contacts, r.q, r.v, r.tau)
    assert_close(np.concatenate([a, lam]), reference_solution, f"{kind} {reference} with Baumgarte gains")
    with pytest.raises(ValueError, match="Baumgarte"):
        dc.constrained_dynamics_derivatives(r.model, r.data, r.q, r.v, r.tau, contacts)


# ------------------------------------------------------------------------------------------------
# loop closures: a frame held against another frame


LOOP_KINDS = KINDS[2:3] if JIT_DISABLED else KINDS


@pytest.mark.parametrize("kind, reference", LOOP_KINDS)
def test_loop_closure_dynamics_and_derivatives(kind, reference):
    r = robot("talos_reduced")
    contacts = feet(kind, reference, other=True)
    a, lam = dc.constrained_dynamics(r.model, r.data, r.q, r.v, r.tau, contacts)
    assert_close(np.concatenate([a, lam]), r.pin_constraint_dynamics(contacts, r.q, r.v, r.tau),
                 f"loop {kind} {reference} (a, lambda)")
    ours = dc.constrained_dynamics_derivatives(r.model, r.data, r.q, r.v, r.tau, contacts)
    if kind == "frame":
        models, datas = r.pin_constraints(contacts)
        pin.constraintDynamics(r.pm, r.pd, pin_q(r.pm, r.q), r.v, r.tau, models, datas)
        for what, x, ref in zip(DERIVATIVE_NAMES, ours,
                                pin.computeConstraintDynamicsDerivatives(r.pm, r.pd, models, datas)):
            ref = ours_rows(ref, contacts) if what.startswith("dlam") else ref
            assert_close(x, ref, f"loop {kind} {reference} {what}")
    # every kind: central differences of Pinocchio's constraintDynamics
    by_q = central_difference(lambda q: r.pin_constraint_dynamics(contacts, q, r.v, r.tau), r.q)
    by_v = central_difference(lambda v: r.pin_constraint_dynamics(contacts, r.q, v, r.tau), r.v)
    assert_close(np.vstack([ours[0], ours[3]]), by_q, f"loop {kind} {reference} d/dq", DIFFERENCE_TOLERANCE)
    assert_close(np.vstack([ours[1], ours[4]]), by_v, f"loop {kind} {reference} d/dv", DIFFERENCE_TOLERANCE)


@pytest.mark.parametrize("kind, reference", LOOP_KINDS)
def test_loop_closure_impulses(kind, reference):
    r = robot("talos_reduced")
    contacts = feet(kind, reference, other=True)
    model, data = r.model, r.data
    v_plus, impulses = dc.impulse_dynamics(model, data, r.q, r.v, contacts, RESTITUTION)
    # the impact laws with Pinocchio's constraint Jacobian and mass matrix
    models, datas = r.pin_constraints(contacts)
    qp = pin_q(r.pm, r.q)
    pin.computeJointJacobians(r.pm, r.pd, qp)
    for cm, cd in zip(models, datas):
        cm.calc(r.pm, r.pd, cd)
    J = ours_rows(pin.getConstraintsJacobian(r.pm, r.pd, models, datas), contacts)
    M = pin.crba(r.pm, r.pd, qp)
    M = np.triu(M) + np.triu(M, 1).T
    assert_close(J @ v_plus, -RESTITUTION * (J @ r.v), f"loop {kind} {reference} J v+ = -e J v-")
    assert_close(M @ (v_plus - r.v), J.T @ impulses, f"loop {kind} {reference} M dv = J^T impulses")
    ours = dc.impulse_dynamics_derivatives(model, data, r.q, r.v, contacts, RESTITUTION)

    def jump(q, v):
        return np.concatenate(dc.impulse_dynamics(model, data, q, v, contacts, RESTITUTION))
    by_q = central_difference(lambda q: jump(q, r.v), r.q)
    by_v = central_difference(lambda v: jump(r.q, v), r.v)
    assert_close(np.vstack([ours[0], ours[2]]), by_q, f"loop {kind} {reference} impulse d/dq",
                 DIFFERENCE_TOLERANCE)
    assert_close(np.vstack([ours[1], ours[3]]), by_v, f"loop {kind} {reference} impulse d/dv",
                 DIFFERENCE_TOLERANCE)


# ------------------------------------------------------------------------------------------------
# the spherical five-bar: its equivalent tree closed by a 6D loop constraint


@pytest.fixture(scope="module")
def five_bar():
    model = dc.load_urdf(dc.bundled_urdf("five_bar"))
    return model, model.create_data(), dc.load_mapping("five_bar", model)


CLOSURE = dc.Contact("link3", "frame", "local", other="link3_cut")


def test_five_bar_closure_matches_the_mapping(five_bar):
    model, data, mapping = five_bar
    rng = np.random.default_rng(11)
    for _ in range(2 if JIT_DISABLED else 5):
        theta, dtheta, tau_a = rng.uniform(-0.6, 0.6, 2), rng.normal(size=2), 0.1 * rng.normal(size=2)
        q, v, _ = mapping.tree_state(theta, dtheta, np.zeros(2))
        tau = np.zeros(model.nv)
        tau[mapping.active_indices] = tau_a
        a, lam = dc.constrained_dynamics(model, data, q, v, tau, [CLOSURE])
        expected = mapping.forward_dynamics(model, data, theta, dtheta, tau_a)
        assert_close(a[mapping.active_indices], expected, "five-bar active accelerations")
        # the translation rows are empty (every frame at the sphere's centre): no force there
        assert np.abs(lam[3:]).max() <= 1e-9 * max(1.0, np.abs(lam).max())


def test_five_bar_simulation_pulls_the_loop_closed(five_bar):
    """A simulator's loop (constrained dynamics, semi-implicit Euler) started 0.01 rad off the
    closure, gravity off: Baumgarte gains (critically damped, 50 rad/s) close it, no gains leave
    it open."""
    _, _, mapping = five_bar
    model = mapping.model.with_gravity((0.0, 0.0, 0.0))
    data = model.create_data()
    q0, _, _ = mapping.tree_state(np.array([0.2, -0.1]), np.zeros(2), np.zeros(2))
    q0[mapping.passive_indices[0]] += 0.01
    opening = np.linalg.norm(mapping.closure_residual(q0))

    def final_residual(kp, kd):
        closure = dc.Contact("link3", "frame", "local", other="link3_cut", kp=kp, kd=kd)
        q, v, tau = q0.copy(), np.zeros(model.nv), np.zeros(model.nv)
        for _ in range(200):
            a, _ = dc.constrained_dynamics(model, data, q, v, tau, [closure])
            v = v + 1e-3 * a
            q = q + 1e-3 * v
        assert np.all(np.isfinite(q))
        return np.linalg.norm(mapping.closure_residual(q))
    assert final_residual(0.0, 0.0) > 0.5 * opening
    assert final_residual(2500.0, 100.0) < 0.01 * opening


# ------------------------------------------------------------------------------------------------
# inputs


def test_bad_inputs_are_named():
    r = robot("panda")
    model, data = r.model, r.data
    good = [dc.Contact("panda_hand")]
    with pytest.raises(ValueError, match="unknown frame 'nowhere'"):
        dc.constrained_dynamics(model, data, r.q, r.v, r.tau, [dc.Contact("nowhere")])
    with pytest.raises(ValueError, match="kind"):
        dc.Contact("panda_hand", kind="line")
    with pytest.raises(ValueError, match="reference"):
        dc.Contact("panda_hand", reference="world")
    with pytest.raises(ValueError, match="kp"):
        dc.Contact("panda_hand", kp=[1.0, 2.0])
    with pytest.raises(ValueError, match="same body"):
        dc.constrained_dynamics(model, data, r.q, r.v, r.tau,
                                [dc.Contact("panda_link8", other="panda_link7")])
    with pytest.raises(ValueError, match="contacts"):
        dc.constrained_dynamics(model, data, r.q, r.v, r.tau, [])
    with pytest.raises(ValueError, match=r"\btau\b.*shape"):
        dc.constrained_dynamics(model, data, r.q, r.v, r.tau[:2], good)
    with pytest.raises(ValueError, match="restitution"):
        dc.impulse_dynamics(model, data, r.q, r.v, good, restitution=1.5)
    bad = r.v.copy()
    bad[1] = np.inf
    with pytest.raises(ValueError, match=r"non-finite.*\bv at indices \[1\]"):
        dc.constrained_dynamics(model, data, r.q, bad, r.tau, good)
    # the derivatives' kernels decline non-finite inputs too: the checked path names them
    with pytest.raises(ValueError, match=r"non-finite.*\bv at indices \[1\]"):
        dc.constrained_dynamics_derivatives(model, data, r.q, bad, r.tau, good)
    with pytest.raises(ValueError, match=r"non-finite.*\bv_minus at indices \[1\]"):
        dc.impulse_dynamics_derivatives(model, data, r.q, bad, good)
