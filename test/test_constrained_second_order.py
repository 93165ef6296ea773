"""Second-order derivatives of the constrained (KKT) and impulse dynamics
(dc.constrained_dynamics_second_derivatives, dc.impulse_dynamics_second_derivatives).

Oracle: central differences of the package's first-order derivatives
(dc.constrained_dynamics_derivatives, dc.impulse_dynamics_derivatives), which test_contact.py checks
against Pinocchio's computeConstraintDynamicsDerivatives / computeImpulseDynamicsDerivatives.
Fourth-order stencil, step 1e-4: the step-1e-6 second-order stencil's roundoff, amplified by the
KKT matrix's conditioning, reaches 1e-6 on talos's two 6D contacts, which would hide the comparison
under the oracle's own error. Tolerance 1e-6 relative to max(1, |reference|).
Free flyer (solo12): differences through dc.integrate (integrate's tangent convention).
Symmetries of the Hessians (seed 002, eqs. 395, 421, 444) to 1e-12 relative to max(1, |tensor|).
The compiled path's own cases: a Data's cached workspaces reused across contact sets (the numbers of a
fresh Data), and the dense solve taken when the kernel's factors decline (the numbers of the kernel).
"""
import numpy as np
import pytest

import dyn_control as dc
from dyn_control.constrained_second_order import (constrained_dynamics_second_derivatives,
                                                  impulse_dynamics_second_derivatives)
from oracles import JIT_DISABLED, random_state, robot_urdf

pytestmark = pytest.mark.kernels

TOLERANCE = 1e-6
SYMMETRY = 1e-12
STEP = 1e-4
RESTITUTION = 0.3
KINDS = [(kind, reference) for kind in ("point", "frame") for reference in ("local", "local_world_aligned")]
# robot, the frames in contact, the kinds tried (a 3-DoF leg takes no 6D contact: redundant rows)
CASES = {
    "panda": (["panda_hand"], KINDS),
    "ur5_robot": (["tool0"], KINDS),
    "talos_reduced": (["left_sole_link", "right_sole_link"], KINDS),
    "solo12": (["FL_FOOT", "HR_FOOT"], KINDS[:2]),
}
FIXED = [(name, kind, reference) for name, (_, kinds) in CASES.items() for kind, reference in kinds]
if JIT_DISABLED:  # the first-order oracle runs as plain Python: one robot, one kind
    FIXED = [("panda", "point", "local")]
    print("NUMBA_DISABLE_JIT=1: only panda, point contact, local axes")


def stencil(f, n, shift):
    """d f / d x_k for k < n by the fourth-order central stencil, f's arrays with k last;
    shift(k, t) is the point x moved by t along direction k."""
    columns = None
    for k in range(n):
        values = [[np.array(x) for x in f(shift(k, t * STEP))] for t in (2, 1, -1, -2)]
        d = [(-p2 + 8 * p1 - 8 * m1 + m2) / (12 * STEP) for p2, p1, m1, m2 in zip(*values)]
        if columns is None:
            columns = [np.zeros(x.shape + (n,)) for x in d]
        for c, x in zip(columns, d):
            c[..., k] = x
    return columns


def assert_close(ours, reference, what):
    ours, reference = np.asarray(ours), np.asarray(reference)
    assert ours.shape == reference.shape, f"{what}: shape {ours.shape} != {reference.shape}"
    scale = max(1.0, float(np.abs(reference).max()))
    error = float(np.abs(ours - reference).max())
    assert error <= TOLERANCE * scale, f"{what}: relative error {error / scale:.3e}"
    return error / scale


def assert_symmetric(x, what, block=slice(None)):
    x = np.asarray(x)[:, block, block]
    scale = max(1.0, float(np.abs(x).max()))
    error = float(np.abs(x - x.transpose(0, 2, 1)).max())
    assert error <= SYMMETRY * scale, f"{what}: asymmetry {error / scale:.3e}"


def _state(model, seed):
    rng = np.random.default_rng(seed)
    if model.root_joint is None:
        q, v, _ = random_state(model, rng)
    else:
        q = dc.neutral(model)
        q[7:] = rng.uniform(-1.0, 1.0, model.nq - 7)
        q = dc.integrate(model, q, 0.3 * rng.normal(size=model.nv))
        v = rng.normal(size=model.nv)
    return q, v, 5.0 * rng.normal(size=model.nv)


def _shift_q(model, q):
    def shift(k, t):
        dq = np.zeros(model.nv)
        dq[k] = t
        return dc.integrate(model, q, dq) if model.root_joint is not None else q + dq
    return shift


def _shift(x):
    def shift(k, t):
        y = np.array(x, dtype=float)
        y[k] += t
        return y
    return shift


def check_constrained(model, data, q, v, tau, contacts):
    """Compares all eight tensors with differences of the first order; returns the worst error."""
    ours = [np.array(x) for x in constrained_dynamics_second_derivatives(model, data, q, v, tau, contacts)]
    nv = model.nv

    def first(q_, v_):
        return dc.constrained_dynamics_derivatives(model, data, q_, v_, tau, contacts)

    by_q = stencil(lambda x: first(x, v), nv, _shift_q(model, q))
    by_v = stencil(lambda x: first(q, x), nv, _shift(v))
    # (da_dq, da_dv, da_dtau, dlam_dq, dlam_dv, dlam_dtau) with the differentiated index last
    references = [by_q[0], by_v[1], by_v[0], by_q[2], by_q[3], by_v[4], by_v[3], by_q[5]]
    names = ("d2a_dq2", "d2a_dv2", "d2a_dqdv", "d2a_dtaudq", "d2lam_dq2", "d2lam_dv2", "d2lam_dqdv", "d2lam_dtaudq")
    return ours, max(assert_close(o, r, n) for o, r, n in zip(ours, references, names))


def check_impulse(model, data, q, v_minus, contacts):
    ours = [np.array(x) for x in impulse_dynamics_second_derivatives(model, data, q, v_minus, contacts, RESTITUTION)]

    def first(q_):
        return dc.impulse_dynamics_derivatives(model, data, q_, v_minus, contacts, RESTITUTION)

    by_q = stencil(first, model.nv, _shift_q(model, q))
    # (dvplus_dq, dvplus_dvminus, dimpulse_dq, dimpulse_dvminus): d/dq_k of the v- column j is [i, j, k]
    references = [by_q[0], by_q[1].transpose(0, 2, 1), by_q[2], by_q[3].transpose(0, 2, 1)]
    names = ("d2vplus_dq2", "d2vplus_dqdvminus", "d2impulse_dq2", "d2impulse_dqdvminus")
    # v+ and the impulses are linear in v-: the mixed tensors are those of the first order in q,
    # and scaling v- scales nothing else than the v- columns' q-derivatives
    return ours, max(assert_close(o, r, n) for o, r, n in zip(ours, references, names))


_MODELS = {}


def robot(name, root_joint=None):
    key = (name, root_joint)
    if key not in _MODELS:
        model = dc.load_urdf(robot_urdf(name), root_joint=root_joint)
        _MODELS[key] = (model, model.create_data())
    return _MODELS[key]


@pytest.mark.parametrize("name, kind, reference", FIXED)
def test_constrained_and_impulse_second_derivatives_on_trees(name, kind, reference):
    model, data = robot(name)
    frames, _ = CASES[name]
    q, v, tau = _state(model, sum(map(ord, name)))
    for count in sorted({1, len(frames)}):
        contacts = [dc.Contact(f, kind, reference) for f in frames[:count]]
        ours, worst = check_constrained(model, data, q, v, tau, contacts)
        for x, what in zip((ours[0], ours[1], ours[4], ours[5]), ("d2a_dq2", "d2a_dv2", "d2lam_dq2", "d2lam_dv2")):
            assert_symmetric(x, what)
        impulse, worst_impulse = check_impulse(model, data, q, v, contacts)
        assert_symmetric(impulse[0], "d2vplus_dq2")
        assert_symmetric(impulse[2], "d2impulse_dq2")
        print(f"{name} {count} x {kind} {reference}: worst relative error constrained {worst:.2e}, "
              f"impulse {worst_impulse:.2e}")


@pytest.mark.parametrize("reference", ["local_world_aligned"] if JIT_DISABLED else ["local", "local_world_aligned"])
def test_free_flyer_feet_point_contacts(reference):
    model, data = robot("solo12", "free_flyer")
    q, v, tau = _state(model, 12)
    contacts = [dc.Contact(f, "point", reference) for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")]
    ours, worst = check_constrained(model, data, q, v, tau, contacts)
    # symmetric in the joints' block and in v; the root's rotations do not commute
    for x, what in ((ours[0], "d2a_dq2"), (ours[4], "d2lam_dq2")):
        assert_symmetric(x, what, slice(6, None))
    assert_symmetric(ours[1], "d2a_dv2")
    assert_symmetric(ours[5], "d2lam_dv2")
    impulse, worst_impulse = check_impulse(model, data, q, v, contacts)
    assert_symmetric(impulse[0], "d2vplus_dq2", slice(6, None))
    print(f"solo12 free flyer, 4 feet {reference}: worst relative error constrained {worst:.2e}, "
          f"impulse {worst_impulse:.2e}")


def test_what_is_refused():
    model, data = robot("panda")
    q, v, tau = _state(model, 0)
    with pytest.raises(ValueError, match="Baumgarte"):
        constrained_dynamics_second_derivatives(model, data, q, v, tau, [dc.Contact("panda_hand", kp=10.0)])
    with pytest.raises(ValueError, match="Baumgarte"):
        impulse_dynamics_second_derivatives(model, data, q, v, [dc.Contact("panda_hand", kd=1.0)])
    with pytest.raises(ValueError, match="loop closure"):
        constrained_dynamics_second_derivatives(model, data, q, v, tau,
                                                [dc.Contact("panda_hand", other="panda_link3")])
    with pytest.raises(ValueError, match="tau"):
        constrained_dynamics_second_derivatives(model, data, q, v, tau[:-1], [dc.Contact("panda_hand")])
    with pytest.raises(ValueError, match="redundant"):
        constrained_dynamics_second_derivatives(model, data, q, v, tau, [dc.Contact("panda_hand", "frame"),
                                                                         dc.Contact("panda_link5", "point")])


def test_mixed_contacts_on_two_legs():
    """A 6D frame contact (local axes) and a 3D point contact (world axes) at once."""
    model, data = robot("talos_reduced")
    q, v, tau = _state(model, 7)
    contacts = [dc.Contact("left_sole_link", "frame", "local"),
                dc.Contact("right_sole_link", "point", "local_world_aligned")]
    ours, worst = check_constrained(model, data, q, v, tau, contacts)
    assert_symmetric(ours[0], "d2a_dq2")
    impulse, worst_impulse = check_impulse(model, data, q, v, contacts)
    print(f"talos_reduced frame + point: worst relative error constrained {worst:.2e}, impulse {worst_impulse:.2e}")


def test_workspaces_reused_across_contact_sets():
    """One Data through several contact sets, both functions interleaved, and back: each call gives
    the numbers of a fresh Data (the buffers cached per contact set on the Data hold nothing over)."""
    model, data = robot("talos_reduced")
    q, v, tau = _state(model, 5)
    sets = [[dc.Contact("left_sole_link", "frame", "local")],
            [dc.Contact("left_sole_link", "point", "local_world_aligned"),
             dc.Contact("right_sole_link", "frame", "local")],
            [dc.Contact("right_sole_link", "point", "local")]]

    def both(d, contacts):
        return ([np.array(x) for x in constrained_dynamics_second_derivatives(model, d, q, v, tau, contacts)]
                + [np.array(x) for x in impulse_dynamics_second_derivatives(model, d, q, v, contacts, RESTITUTION)])

    fresh = [both(model.create_data(), contacts) for contacts in sets]
    for _ in range(2):
        for contacts, reference in zip(sets, fresh):
            for ours, ref in zip(both(data, contacts), reference):
                np.testing.assert_allclose(ours, ref, rtol=0.0, atol=1e-12 * max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize("name", ["panda", "solo12"])
def test_dense_solve_when_the_factors_decline(monkeypatch, name):
    """When the kernel's Cholesky factors find K (numerically) singular but the rows are independent,
    the right-hand sides it leaves go through a dense solve: the same numbers (forced here by a kernel
    that reports SINGULAR after doing its work)."""
    import dyn_control.constrained_second_order as cso
    root = "free_flyer" if name == "solo12" else None
    model, data = robot(name, root)
    q, v, tau = _state(model, 3)
    contacts = [dc.Contact(f, "point") for f in CASES[name][0]]
    expected = ([np.array(x) for x in constrained_dynamics_second_derivatives(model, data, q, v, tau, contacts)]
                + [np.array(x) for x in impulse_dynamics_second_derivatives(model, data, q, v, contacts, 0.5)])
    kernel = cso._cso.second_derivatives

    def declining(*args):
        kernel(*args)
        return cso._cso.SINGULAR
    monkeypatch.setattr(cso._cso, "second_derivatives", declining)
    got = ([np.array(x) for x in constrained_dynamics_second_derivatives(model, data, q, v, tau, contacts)]
           + [np.array(x) for x in impulse_dynamics_second_derivatives(model, data, q, v, contacts, 0.5)])
    for ours, ref in zip(got, expected):
        np.testing.assert_allclose(ours, ref, rtol=0.0, atol=1e-10 * max(1.0, np.abs(ref).max()))
