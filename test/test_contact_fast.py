"""Issue 12: the fast path of the contact functions (contact.py's _fast: a contact list validated by an
earlier call, cached on the Data under its contacts' stamps, and the compiled kernel called on the
inputs as they are) gives the checked path's results bit for bit and Pinocchio's within tolerance; a
contact changed after a first call is honoured (no stale cache); inputs of any other form take the
checked path, with the same results and the same errors.
"""
import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from dyn_control import contact as _contact
from oracles import JIT_DISABLED, pin_q
from test_contact import RESTITUTION, assert_close, robot

pytestmark = pytest.mark.kernels

CALLS = ("constrained_dynamics", "constrained_dynamics_derivatives", "impulse_dynamics",
         "impulse_dynamics_derivatives")


def call(name, r, contacts, q=None, v=None, tau=None, restitution=RESTITUTION, data=None):
    """dc.<name> on robot r's state (or the given inputs), as a tuple of arrays."""
    q = r.q if q is None else q
    v = r.v if v is None else v
    tau = r.tau if tau is None else tau
    data = r.data if data is None else data
    if name.startswith("constrained"):
        return tuple(getattr(dc, name)(r.model, data, q, v, tau, contacts))
    return tuple(getattr(dc, name)(r.model, data, q, v, contacts, restitution))


def strided(x):
    return np.repeat(x, 2)[::2]


def pin_forward(r, contacts):
    """(a, lam) of Pinocchio's constraintDynamics for our contacts (Baumgarte gains included)."""
    out = r.pin_constraint_dynamics(contacts, r.q, r.v, r.tau)
    return out[:r.model.nv], out[r.model.nv:]


CASES = [("panda", lambda: [dc.Contact("panda_hand", "point", "local")])]
if not JIT_DISABLED:
    CASES += [("talos_reduced", lambda: [dc.Contact("left_sole_link", "frame", "local"),
                                         dc.Contact("right_sole_link", "frame", "local_world_aligned")])]


@pytest.mark.skipif(JIT_DISABLED, reason="without the JIT every call takes the checked path")
@pytest.mark.parametrize("name, make", CASES)
def test_fast_path_is_taken_and_matches_the_checked_path(name, make, monkeypatch):
    r = robot(name)
    contacts = make()
    checked = {f: call(f, r, contacts, q=strided(r.q)) for f in CALLS}  # strided: the checked path
    # the checked path is now off: the second calls must go the fast way
    monkeypatch.setattr(_contact, "_check_contacts", None)
    monkeypatch.setattr(_contact, "_check_state", None)
    for f in CALLS:
        fast = call(f, r, contacts)
        for k, (x, y) in enumerate(zip(fast, checked[f])):
            np.testing.assert_array_equal(x, y, err_msg=f"{name} {f} output {k}")
            assert x.flags.writeable and x.flags.owndata, f"{f}: results are new arrays"
        # another list (or a tuple) of the same contacts, unchanged, is the same validated set
        np.testing.assert_array_equal(call(f, r, tuple(contacts))[0], fast[0])
    a, lam = call("constrained_dynamics", r, contacts)
    a_ref, lam_ref = pin_forward(r, contacts)
    assert_close(a, a_ref, f"{name} a")
    assert_close(lam, lam_ref, f"{name} lambda")
    # results are new arrays: a second call leaves the first one's alone
    a2, _ = call("constrained_dynamics", r, contacts, tau=2.0 * r.tau)
    assert_close(a, a_ref, f"{name} a after another call")
    assert not np.array_equal(a, a2)


def test_a_changed_contact_is_honoured():
    """Every assignment to a contact after a first call (frame, kind, reference, kp, other, the list's
    members) gives Pinocchio's answer for the contact as it now is."""
    r = robot("panda")
    c = dc.Contact("panda_link5", "point", "local")
    contacts = [c]

    def check(what):
        a, lam = dc.constrained_dynamics(r.model, r.data, r.q, r.v, r.tau, contacts)
        a_ref, lam_ref = pin_forward(r, contacts)
        assert_close(a, a_ref, f"{what}: a")
        assert_close(lam, lam_ref, f"{what}: lambda")
        return a, lam

    first = check("first call")
    check("second call")
    c.frame = "panda_hand"
    moved = check("frame changed")
    assert not np.allclose(moved[0], first[0])
    c.kind = "frame"
    assert c.dim == 6 and c.kp.shape == (6,) and c.kd.shape == (6,)
    a, lam = check("kind changed")
    assert lam.shape == (6,)
    # impulse dynamics and the derivatives see the 6 rows too
    v_plus, impulses = dc.impulse_dynamics(r.model, r.data, r.q, r.v, contacts, RESTITUTION)
    assert impulses.shape == (6,)
    models, datas = r.pin_constraints(contacts)
    v_ref = pin.impulseDynamics(r.pm, r.pd, pin_q(r.pm, r.q), r.v, models, datas, RESTITUTION)
    assert_close(v_plus, v_ref, "kind changed: v_plus")
    assert dc.constrained_dynamics_derivatives(r.model, r.data, r.q, r.v, r.tau, contacts)[3].shape == (6, r.model.nv)
    c.reference = "local_world_aligned"
    check("reference changed")
    c.kind = "point"
    c.kp = 10.0
    c.kd = 3.0
    check("Baumgarte gains set")
    with pytest.raises(ValueError, match="needs zero Baumgarte gains"):
        dc.constrained_dynamics_derivatives(r.model, r.data, r.q, r.v, r.tau, contacts)
    c.kp = 0.0
    c.kd = 0.0
    check("gains back to zero")
    contacts[0] = dc.Contact("panda_link6", "point", "local")
    check("list member replaced")
    contacts.append(dc.Contact("panda_leftfinger", "point", "local_world_aligned"))
    a, lam = dc.constrained_dynamics(r.model, r.data, r.q, r.v, r.tau, contacts)
    assert lam.shape == (6,)
    check("list member appended")
    contacts[1].frame = "nowhere"
    with pytest.raises(ValueError, match=r"contacts\[1\]\.frame: unknown frame 'nowhere'"):
        dc.constrained_dynamics(r.model, r.data, r.q, r.v, r.tau, contacts)
    contacts[1].frame = "panda_leftfinger"
    contacts[1].other = "panda_link3"
    a, lam = dc.constrained_dynamics(r.model, r.data, r.q, r.v, r.tau, contacts)
    # a loop closure against panda_link3: the finger's origin held still relative to it
    models, datas = r.pin_constraints(contacts)
    a_ref = pin.constraintDynamics(r.pm, r.pd, pin_q(r.pm, r.q), r.v, r.tau, models, datas)
    assert_close(a, a_ref, "other changed: a")


def test_kind_change_keeps_gains_per_row():
    c = dc.Contact("panda_hand", "point", kp=2.0, kd=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="kd must be a number or 6 numbers"):
        c.kind = "frame"
    assert c.kind == "point" and c.dim == 3 and c.kd.tolist() == [1.0, 2.0, 3.0]  # unchanged
    c.kd = 1.0
    c.kind = "frame"
    assert c.kp.tolist() == [2.0] * 6 and c.kd.tolist() == [1.0] * 6 and c.baumgarte
    with pytest.raises(ValueError, match="kind must be 'point' or 'frame'"):
        c.kind = "line"
    with pytest.raises(ValueError, match="reference must be 'local' or 'local_world_aligned'"):
        c.reference = "world"


def error_of(fn):
    with pytest.raises(ValueError) as info:
        fn()
    return str(info.value)


def test_odd_inputs_take_the_checked_path_with_its_results_and_errors():
    """With the contacts validated on one data (warm) and not on another (cold, a new Data), inputs of
    another form give the same results, and bad inputs the same error, on both."""
    r = robot("panda")
    contacts = [dc.Contact("panda_hand", "point", "local")]
    cold_model_data = r.model.create_data
    for f in CALLS:
        call(f, r, contacts)  # warm: validated on r.data
    nv = r.model.nv
    odd_forms = {"strided": strided, "float32": lambda x: x.astype(np.float32), "list": list,
                 "read-only": lambda x: np.frombuffer(x.tobytes()), "big-endian": lambda x: x.astype(">f8"),
                 "column": lambda x: x.reshape(nv, 1)[:, 0]}
    for f in CALLS:
        reference = call(f, r, contacts, data=cold_model_data())
        for form, make in odd_forms.items():
            args = dict(q=make(r.q), v=make(r.v))
            if f.startswith("constrained"):
                args["tau"] = make(r.tau)
            tolerance = 1e-5 if form == "float32" else 0.0
            ours = call(f, r, contacts, **args)
            expected = call(f, r, contacts, data=cold_model_data(), **args) if tolerance else reference
            for x, y in zip(ours, expected):
                np.testing.assert_array_equal(x, y, err_msg=f"{f} with {form} inputs")
        if f.startswith("impulse"):  # restitution of other types
            for e in (0, np.float64(RESTITUTION), np.float32(0.5)):
                np.testing.assert_array_equal(call(f, r, contacts, restitution=e)[0],
                                              call(f, r, contacts, restitution=e, data=cold_model_data())[0])
    bad_v = r.v.copy()
    bad_v[1] = np.nan
    bad = {"short q": dict(q=r.q[:3]), "long v": dict(v=np.zeros(nv + 1)), "2-D v": dict(v=np.zeros((nv, 1))),
           "non-finite v": dict(v=bad_v), "text q": dict(q="q"), "short tau": dict(tau=r.tau[:2]),
           "restitution 1.5": dict(restitution=1.5), "restitution nan": dict(restitution=float("nan")),
           "contacts not Contact": dict(contacts=["panda_hand"]), "no contacts": dict(contacts=[])}
    for f in CALLS:
        for what, args in bad.items():
            args = dict(args)
            given = args.pop("contacts", contacts)
            if "tau" in args and not f.startswith("constrained"):
                continue
            if "restitution" in args and not f.startswith("impulse"):
                continue
            warm = error_of(lambda: call(f, r, given, **args))
            cold = error_of(lambda: call(f, r, given, **{"data": cold_model_data(), **args}))
            assert warm == cold, f"{f} with {what}: {warm!r} != {cold!r}"


def test_a_data_of_another_model_is_not_served_from_the_cache():
    """The cache entry is the model's: the same contacts with another model's data re-validate (its
    frames may differ) and a Data of another size is refused by name."""
    r = robot("panda")
    contacts = [dc.Contact("panda_hand", "point", "local")]
    dc.constrained_dynamics(r.model, r.data, r.q, r.v, r.tau, contacts)
    heavier = r.model.with_gravity([0.0, 0.0, -20.0])
    a, _ = dc.constrained_dynamics(heavier, r.data, r.q, r.v, r.tau, contacts)
    a_cold, _ = dc.constrained_dynamics(heavier, heavier.create_data(), r.q, r.v, r.tau, contacts)
    np.testing.assert_array_equal(a, a_cold)
    ur5 = robot("ur5_robot")
    with pytest.raises(ValueError, match="data must come from model.create_data"):
        dc.constrained_dynamics(ur5.model, r.data, ur5.q, ur5.v, ur5.tau, contacts)


def test_the_validated_cache_stays_bounded():
    """Contacts built anew every call leave a bounded number of cache entries on the Data."""
    r = robot("panda")
    data = r.model.create_data()
    for _ in range(3 * _contact._VALIDATED_LISTS):
        dc.impulse_dynamics(r.model, data, r.q, r.v, [dc.Contact("panda_hand")])
    assert len(data._contact_validated) <= _contact._VALIDATED_LISTS
