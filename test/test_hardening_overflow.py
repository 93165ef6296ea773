"""Issue 15, class 1: finite inputs whose results overflow float64.

Every public function, at states whose entries hypothesis draws with magnitudes from 1 to 1e300,
either returns finite results that agree with the oracle (to 1e-8 of its largest entry, times
cond(M(q)) / 1e5 where that is larger; prismatic joints far out make M ill-conditioned, and where
cond(M) > 1e9 neither library's answer is accurate enough to compare), or raises
a ValueError that says the inputs overflow and names them. It does not raise where every input is
below 1e50 (a product of a few such numbers stays far inside float64); above that an intermediate
may overflow where the oracle's result, computed in other frames, does not.

Oracles: Pinocchio (rnea, aba, crba, nonlinear effects, gravity, Coriolis matrix, frame poses and
Jacobians, first-order derivatives, M^-1, regressor, constraint and impulse dynamics), for the
mimic-coupled panda Pinocchio on the tree with the coupling G (tau = G^T tau_tree(G q + offset,
G v, G a)), and for the second-order derivatives central differences of Pinocchio's first-order
ones in v (exact for these functions: the first-order derivatives are linear in v, their own
derivatives in v independent of it); the joint-twist derivatives have no oracle at such states
and are checked for the kind of answer only.
"""
import functools

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dyn_control as dc
from oracles import JIT_DISABLED, OURS_FROM_PIN_PARAM, pin_q, robot_urdf, swap_halves

pytestmark = pytest.mark.kernels

EXAMPLES = settings(max_examples=4 if JIT_DISABLED else 30, deadline=None)
TOLERANCE = 1e-8      # relative to the largest entry of the reference
MODERATE = 50.0       # no overflow error where every input is below 10^MODERATE
ROBOTS = ("arm7", "panda")  # all revolute; with prismatic fingers (q itself can overflow)


class Robot:
    """A model of ours and Pinocchio's of the same URDF (the tree's, for the coupled panda)."""

    def __init__(self, name, mimic=False):
        path = dc.bundled_urdf(name) if name == "arm7" else robot_urdf(name)
        self.model = dc.load_urdf(path, mimic=mimic)
        self.data = self.model.create_data()
        self.pm = pin.buildModelFromUrdf(path)
        self.pd = self.pm.createData()
        nv = self.model.nv
        self.G = np.eye(nv) if self.model.coupling is None else self.model.coupling
        self.offset = np.zeros(nv) if self.model.coupling is None else self.model.coupling_offset
        self.frame = self.model.body_names[-1] if name == "arm7" else "panda_hand"

    def config(self, q):
        """Pinocchio's configuration of the tree."""
        return pin_q(self.pm, self.G @ q + self.offset)

    def tree(self, q, v, a):
        """Pinocchio's configuration and the tree's velocity and acceleration."""
        return self.config(q), self.G @ v, self.G @ a


@functools.lru_cache(maxsize=None)
def robot(name, mimic=False):
    return Robot(name, mimic)


def state(model, seed, exponents):
    """q, v, x (a or tau) with unit normal entries times 10^exponent each."""
    rng = np.random.default_rng(seed)
    return [rng.normal(size=model.nv) * 10.0 ** e for e in exponents]


def symmetric(upper):
    """Pinocchio fills the upper triangle of M and M^-1 only."""
    return np.triu(upper) + np.triu(upper, 1).T


def pin_first_order(derivatives):
    """(d/dq, d/dv, M or M^-1) of Pinocchio's first-order derivatives, the third made symmetric."""
    return [derivatives[0], derivatives[1], symmetric(derivatives[2])]


def pin_regressor(r, q, v, a):
    Y = pin.computeJointTorqueRegressor(r.pm, r.pd, *r.tree(q, v, a))
    return Y.reshape(-1, r.model.nbodies, 10)[:, :, OURS_FROM_PIN_PARAM].reshape(Y.shape)


def pin_jacobian(r, q):
    fid = r.pm.getFrameId(r.frame)
    return swap_halves(pin.computeFrameJacobian(r.pm, r.pd, r.config(q), fid, pin.WORLD))


def pin_frame_pose(r, q):
    pin.framesForwardKinematics(r.pm, r.pd, r.config(q))
    return r.pd.oMf[r.pm.getFrameId(r.frame)].homogeneous


# name: (ours(r, q, v, x) -> arrays, Pinocchio's(r, q, v, x) -> the same arrays)
FUNCTIONS = {
    "rnea": (lambda r, q, v, a: [dc.rnea(r.model, r.data, q, v, a)],
             lambda r, q, v, a: [pin.rnea(r.pm, r.pd, *r.tree(q, v, a))]),
    "aba": (lambda r, q, v, tau: [dc.aba(r.model, r.data, q, v, tau)],
            lambda r, q, v, tau: [pin.aba(r.pm, r.pd, pin_q(r.pm, q), v, tau)]),
    "crba": (lambda r, q, v, a: [dc.crba(r.model, r.data, q)],
             lambda r, q, v, a: [symmetric(pin.crba(r.pm, r.pd, r.config(q)))]),
    "nonlinear_effects": (lambda r, q, v, a: [dc.nonlinear_effects(r.model, r.data, q, v)],
                          lambda r, q, v, a: [pin.nonLinearEffects(r.pm, r.pd, pin_q(r.pm, q), v)]),
    "gravity": (lambda r, q, v, a: [dc.gravity(r.model, r.data, q)],
                lambda r, q, v, a: [pin.computeGeneralizedGravity(r.pm, r.pd, pin_q(r.pm, q))]),
    "coriolis_matrix": (lambda r, q, v, a: [dc.coriolis_matrix(r.model, r.data, q, v)],
                        lambda r, q, v, a: [pin.computeCoriolisMatrix(r.pm, r.pd, pin_q(r.pm, q), v)]),
    "frame_pose": (lambda r, q, v, a: [dc.frame_pose(r.model, r.data, q, r.frame)],
                   lambda r, q, v, a: [pin_frame_pose(r, q)]),
    "jacobian": (lambda r, q, v, a: [dc.jacobian(r.model, r.data, q, r.frame)],
                 lambda r, q, v, a: [pin_jacobian(r, q)]),
    "rnea_derivatives": (lambda r, q, v, a: dc.rnea_derivatives(r.model, r.data, q, v, a),
                         lambda r, q, v, a: pin_first_order(pin.computeRNEADerivatives(r.pm, r.pd, pin_q(r.pm, q),
                                                                                       v, a))),
    "aba_derivatives": (lambda r, q, v, tau: dc.aba_derivatives(r.model, r.data, q, v, tau),
                        lambda r, q, v, tau: pin_first_order(pin.computeABADerivatives(r.pm, r.pd, pin_q(r.pm, q),
                                                                                       v, tau))),
    "minverse": (lambda r, q, v, a: [dc.minverse(r.model, r.data, q)],
                 lambda r, q, v, a: [symmetric(pin.computeMinverse(r.pm, r.pd, pin_q(r.pm, q)))]),
    "regressor": (lambda r, q, v, a: [dc.regressor(r.model, r.data, q, v, a)],
                  lambda r, q, v, a: [pin_regressor(r, q, v, a)]),
    "rnea_batch": (lambda r, q, v, a: [dc.rnea_batch(r.model, np.stack([q, -q]), np.stack([v, v]),
                                                     np.stack([a, 0.5 * a]))],
                   lambda r, q, v, a: [np.stack([pin.rnea(r.pm, r.pd, *r.tree(q, v, a)),
                                                 pin.rnea(r.pm, r.pd, *r.tree(-q, v, 0.5 * a))])]),
    "rnea_derivatives_batch": (lambda r, q, v, a: dc.rnea_derivatives_batch(r.model, q[None], v[None], a[None]),
                               lambda r, q, v, a: [x[None] for x in pin_first_order(pin.computeRNEADerivatives(
                                   r.pm, r.pd, pin_q(r.pm, q), v, a))]),
    "regressor_batch": (lambda r, q, v, a: [dc.regressor_batch(r.model, q[None], v[None], a[None])],
                        lambda r, q, v, a: [pin_regressor(r, q, v, a)[None]]),
}
# the functions the mimic-coupled panda is checked with (its own code path: coupling and contraction)
COUPLED = ("rnea", "crba", "frame_pose", "jacobian", "regressor", "rnea_batch")
INPUT_NAMES = {"aba": ("q", "v", "tau"), "aba_derivatives": ("q", "v", "tau")}


def amplification(r, q):
    """How much M(q)'s conditioning may amplify round-off: cond(M) / 1e5, at least 1; inf (nothing
    to compare) where cond(M) > 1e9."""
    with np.errstate(all="ignore"):
        M = r.G.T @ symmetric(pin.crba(r.pm, r.pd, r.config(q))) @ r.G
    condition = np.linalg.cond(M) if np.all(np.isfinite(M)) else np.inf
    return max(1.0, condition / 1e5) if condition <= 1e9 else np.inf


def check_answer(what, call, reference, names, inputs, q, r, floor=0.0):
    """ours = call() is finite and matches the reference (to a relative tolerance, plus `floor`,
    the reference's own round-off), or a ValueError saying the inputs overflow, naming them, where
    some input is beyond 10^MODERATE."""
    try:
        ours = [np.array(x) for x in call()]
    except ValueError as error:
        message = str(error)
        assert "overflow" in message and any(f" {n}" in message for n in names), f"{what}: {message}"
        largest = max(float(np.abs(x).max()) for x in inputs)
        assert largest > 10.0 ** MODERATE, f"{what} raised with inputs up to {largest:.3g}: {message}"
        return
    with np.errstate(all="ignore"):
        reference = [np.asarray(x, dtype=float).copy() for x in reference]
    tolerance = TOLERANCE * amplification(r, q)
    assert len(ours) == len(reference)
    for k, (x, ref) in enumerate(zip(ours, reference)):
        assert np.all(np.isfinite(x)), f"{what}[{k}] is not finite and no ValueError was raised"
        if np.all(np.isfinite(ref)) and np.isfinite(tolerance):
            scale = max(1.0, float(np.abs(ref).max()))
            error = float(np.abs(x - ref).max())
            assert error <= tolerance * scale + floor, f"{what}[{k}]: error {error:.3g} at scale {scale:.3g}"


@pytest.mark.parametrize("name", ROBOTS)
@pytest.mark.parametrize("function", list(FUNCTIONS))
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), exponents=st.tuples(*[st.floats(0.0, 300.0)] * 3))
def test_finite_or_overflow_named(name, function, seed, exponents):
    r = robot(name)
    q, v, x = state(r.model, seed, exponents)
    ours, reference = FUNCTIONS[function]
    with np.errstate(all="ignore"):  # Pinocchio's own overflow
        expected = reference(r, q, v, x)
    check_answer(function, lambda: ours(r, q, v, x), expected, INPUT_NAMES.get(function, ("q", "v", "a")),
                 (q, v, x), q, r)


@pytest.mark.parametrize("function", COUPLED)
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), exponents=st.tuples(*[st.floats(0.0, 300.0)] * 3))
def test_finite_or_overflow_named_with_mimic_coupling(function, seed, exponents):
    r = robot("panda", mimic=True)
    assert r.model.coupling is not None
    q, v, a = state(r.model, seed, exponents)
    ours, reference = FUNCTIONS[function]
    G = r.G
    with np.errstate(all="ignore"):
        expected = reference(r, q, v, a)
        if function in ("rnea", "regressor"):
            expected = [G.T @ expected[0]]
        elif function == "rnea_batch":
            expected = [expected[0] @ G]
        elif function == "crba":
            expected = [G.T @ expected[0] @ G]
        elif function == "jacobian":
            expected = [expected[0] @ G]
    check_answer(function, lambda: ours(r, q, v, a), expected, ("q", "v", "a"), (q, v, a), q, r)


def differences_in_v(first_order, q, v, n):
    """d/dv of the first-order derivatives (d/dq, d/dv) of Pinocchio, by central differences with a
    step of the size of v: exact up to round-off, as they are polynomials of degree <= 2 in v (for
    forward dynamics through ddq, itself quadratic in v). Returns them and that round-off."""
    step_size = max(1.0, float(np.abs(v).max()))
    d2_dv2, d2_dqdv = np.zeros((n, n, n)), np.zeros((n, n, n))
    largest = 0.0
    for k in range(n):
        step = np.zeros(n)
        step[k] = step_size
        plus, minus = first_order(q, v + step), first_order(q, v - step)
        d2_dv2[:, :, k] = (plus[1] - minus[1]) / (2 * step_size)
        d2_dqdv[:, :, k] = (plus[0] - minus[0]) / (2 * step_size)
        largest = max(largest, *(float(np.abs(x).max()) for x in plus[:2] + minus[:2]))
    return [d2_dv2, d2_dqdv], 1e-13 * largest / step_size


@pytest.mark.parametrize("inverse", [True, False], ids=["rnea", "aba"])
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), exponents=st.tuples(st.just(0.0), st.floats(0.0, 160.0),
                                                           st.floats(0.0, 300.0)))
def test_second_order_finite_or_overflow_named(inverse, seed, exponents):
    """q moderate (second derivatives in q have no exact difference oracle); v and a or tau huge."""
    r = robot("panda")
    q, v, x = state(r.model, seed, exponents)
    qp = pin_q(r.pm, q)
    if inverse:
        ours = lambda: dc.rnea_second_derivatives(r.model, r.data, q, v, x)[1:3]  # noqa: E731
        first = lambda q_, v_: pin.computeRNEADerivatives(r.pm, r.pd, qp, v_, x)  # noqa: E731
        names = ("q", "v", "a")
    else:
        ours = lambda: dc.aba_second_derivatives(r.model, r.data, q, v, x)[1:3]  # noqa: E731
        first = lambda q_, v_: pin.computeABADerivatives(r.pm, r.pd, qp, v_, x)  # noqa: E731
        names = ("q", "v", "tau")
    with np.errstate(all="ignore"):
        expected, round_off = differences_in_v(lambda q_, v_: [y.copy() for y in first(q_, v_)], q, v,
                                               r.model.nv)
    check_answer("second order", ours, expected, names, (q, v, x), q, r, round_off)


@pytest.mark.parametrize("name", ROBOTS)
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), exponents=st.tuples(*[st.floats(0.0, 300.0)] * 3))
def test_twist_derivatives_finite_or_overflow_named(name, seed, exponents):
    r = robot(name)
    q, v, a = state(r.model, seed, exponents)
    try:
        out = dc.twist_derivatives(r.model, r.data, q, v, a)
    except ValueError as error:
        assert "overflow" in str(error) and (" v" in str(error) or " a" in str(error)), str(error)
        return
    assert np.all(np.isfinite(out))


def pin_point_contact(r):
    f = r.pm.frames[r.pm.getFrameId(r.frame)]
    model = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, r.pm, f.parentJoint, f.placement, 0,
                                     pin.SE3.Identity(), pin.ReferenceFrame.LOCAL)
    models = pin.StdVec_RigidConstraintModel()
    models.append(model)
    datas = pin.StdVec_RigidConstraintData()
    datas.append(model.createData())
    pin.initConstraintDynamics(r.pm, r.pd, models, datas)
    return models, datas


@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), exponents=st.tuples(st.floats(0.0, 300.0), st.floats(0.0, 300.0),
                                                           st.floats(0.0, 300.0)))
def test_contact_dynamics_finite_or_overflow_named(seed, exponents):
    """Constrained and impulse dynamics with one point contact: Pinocchio's constraintDynamics and
    impulseDynamics (a contact against the world, so Pinocchio's impulses are the oracle). On the
    all-revolute arm: M(q) stays well conditioned at any q, as these solvers need."""
    r = robot("arm7")
    q, v, tau = state(r.model, seed, exponents)
    contact = [dc.Contact(r.frame, "point", "local")]
    models, datas = pin_point_contact(r)
    with np.errstate(all="ignore"):
        a = pin.constraintDynamics(r.pm, r.pd, pin_q(r.pm, q), v, tau, models, datas)
        expected = [a.copy(), r.pd.lambda_c.copy()]
    check_answer("constrained_dynamics", lambda: dc.constrained_dynamics(r.model, r.data, q, v, tau, contact),
                 expected, ("q", "v", "tau"), (q, v, tau), q, r)
    with np.errstate(all="ignore"):
        v_plus = pin.impulseDynamics(r.pm, r.pd, pin_q(r.pm, q), v, models, datas, 0.0, pin.ProximalSettings())
        expected = [v_plus.copy(), r.pd.impulse_c.copy()]
    check_answer("impulse_dynamics", lambda: dc.impulse_dynamics(r.model, r.data, q, v, contact), expected,
                 ("q", "v_minus"), (q, v), q, r)


def test_the_issue_cases():
    """rnea on the bundled arm at v = 1e154 (NaN before), and the contact solver's overflow (scipy's
    message before): ValueErrors that say the inputs overflow and name v."""
    r = robot("arm7")
    q, v = np.zeros(r.model.nv), np.full(r.model.nv, 1e154)
    for call in (lambda: dc.rnea(r.model, r.data, q, v, q),
                 lambda: dc.constrained_dynamics(r.model, r.data, q, v, q, [dc.Contact(r.frame)])):
        with pytest.raises(ValueError, match=r"inputs overflow.* v \(largest \|v\| = 1e\+154\)"):
            call()
