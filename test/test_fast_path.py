"""Issue 12: the fast path (one strict compiled call on packed buffers, kernels/entry.py) and the
checked path give Pinocchio's results, whatever form the inputs take.

Every public per-call function is called with canonical inputs (C-contiguous float64 arrays: the fast
path) and with each odd form (strided, float32, list, read-only, big-endian, Fortran-ordered: the
checked path); each result is compared with Pinocchio. Non-finite inputs raise a ValueError naming
the argument on either path; a data of another model is refused. The layout of the packed buffers
is checked against the named attributes (they must be views of one buffer, in the entry kernels'
field order).
"""
import functools

import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from dyn_control.kernels import entry
from oracles import pin_q, pinocchio_model, robot_urdf, swap_halves

pytestmark = pytest.mark.kernels

TOLERANCE = 1e-9
ROBOTS = ("panda", "talos_reduced")


@functools.lru_cache(maxsize=None)
def robot(name):
    path = robot_urdf(name)
    model = dc.load_urdf(path)
    pm = pinocchio_model(path)
    return model, pm, pm.createData()


def assert_close(ours, expected, what):
    ours, expected = np.asarray(ours), np.asarray(expected)
    scale = max(1.0, float(np.abs(expected).max()))
    error = float(np.abs(ours - expected).max())
    assert error <= TOLERANCE * scale, f"{what}: max error {error:.3g} (scale {scale:.3g})"


def symmetric(upper):
    return np.triu(upper) + np.triu(upper, 1).T


def cases(model, pm, pd):
    """name: (our call on (q, v, a), Pinocchio's on (its q, v, a), how many vector inputs)."""
    frame = model.frame_names[-1]
    fid = pm.getFrameId(frame)

    def pin_jacobian(qp, v, a):
        return swap_halves(pin.computeFrameJacobian(pm, pd, qp, fid, pin.LOCAL))

    def pin_aba_derivatives(qp, v, tau):
        pin.computeABADerivatives(pm, pd, qp, v, tau)
        return pd.ddq_dq.copy(), pd.ddq_dv.copy(), symmetric(pd.Minv)

    def pin_rnea_derivatives(qp, v, a):
        pin.computeRNEADerivatives(pm, pd, qp, v, a)
        return pd.dtau_dq.copy(), pd.dtau_dv.copy(), symmetric(pd.M)

    def pin_coriolis(qp, v, a):
        return pin.computeCoriolisMatrix(pm, pd, qp, v).copy()

    def pin_time_variation(qp, v, a):
        pin.computeJointJacobiansTimeVariation(pm, pd, qp, v)
        pin.updateFramePlacements(pm, pd)
        return swap_halves(pin.getFrameJacobianTimeVariation(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED))

    return {
        "rnea": (lambda m, d, q, v, a: dc.rnea(m, d, q, v, a), lambda qp, v, a: pin.rnea(pm, pd, qp, v, a), 3),
        "aba": (lambda m, d, q, v, a: dc.aba(m, d, q, v, a), lambda qp, v, a: pin.aba(pm, pd, qp, v, a), 3),
        "crba": (lambda m, d, q, v, a: dc.crba(m, d, q), lambda qp, v, a: symmetric(pin.crba(pm, pd, qp)), 1),
        "nonlinear_effects": (lambda m, d, q, v, a: dc.nonlinear_effects(m, d, q, v),
                              lambda qp, v, a: pin.nonLinearEffects(pm, pd, qp, v), 2),
        "gravity": (lambda m, d, q, v, a: dc.gravity(m, d, q),
                    lambda qp, v, a: pin.computeGeneralizedGravity(pm, pd, qp), 1),
        "coriolis_matrix": (lambda m, d, q, v, a: dc.coriolis_matrix(m, d, q, v), pin_coriolis, 2),
        "jacobian": (lambda m, d, q, v, a: dc.jacobian(m, d, q, frame, "local"), pin_jacobian, 1),
        "minverse": (lambda m, d, q, v, a: dc.minverse(m, d, q),
                     lambda qp, v, a: symmetric(pin.computeMinverse(pm, pd, qp)), 1),
        "rnea_derivatives": (lambda m, d, q, v, a: dc.rnea_derivatives(m, d, q, v, a), pin_rnea_derivatives, 3),
        "aba_derivatives": (lambda m, d, q, v, a: dc.aba_derivatives(m, d, q, v, a), pin_aba_derivatives, 3),
        "frame_jacobian_time_variation": (lambda m, d, q, v, a: dc.frame_jacobian_time_variation(m, d, q, v, frame),
                                          pin_time_variation, 2),
        # the regressor through its defining identity: Y phi = tau of Pinocchio
        "regressor": (lambda m, d, q, v, a: dc.regressor(m, d, q, v, a) @ m.inertial_parameters(),
                      lambda qp, v, a: pin.rnea(pm, pd, qp, v, a), 3),
    }


def _read_only(x):
    x = x.copy()
    x.flags.writeable = False
    return x


FORMS = {
    "canonical": lambda x: x.copy(),
    "strided": lambda x: np.repeat(x, 2)[::2],
    "float32 values": lambda x: x.astype(np.float32).astype(np.float64),  # canonical, rounded values
    "float32": lambda x: x.astype(np.float32),
    "list": lambda x: x.tolist(),
    "read-only": _read_only,
    "big-endian": lambda x: x.astype(">f8"),
    "fortran 2-D column": lambda x: np.asfortranarray(x[:, None])[:, 0],
}


def as_tuple(result):
    return tuple(np.array(x) for x in (result if isinstance(result, tuple) else (result,)))


@pytest.mark.parametrize("name", ROBOTS)
@pytest.mark.parametrize("form", list(FORMS))
def test_every_function_agrees_with_pinocchio_whatever_the_input_form(name, form):
    model, pm, pd = robot(name)
    data = model.create_data()
    rng = np.random.default_rng(12)
    for function, (ours, theirs, n_inputs) in cases(model, pm, pd).items():
        q, v, a = rng.uniform(-1.0, 1.0, model.nv), rng.normal(size=model.nv), rng.normal(size=model.nv)
        if form.startswith("float32"):  # the values float32 can hold, on both sides
            q, v, a = (x.astype(np.float32).astype(np.float64) for x in (q, v, a))
        args = [FORMS[form](x) for x in (q, v, a)]
        got = as_tuple(ours(model, data, *args))
        expected = as_tuple(theirs(pin_q(pm, q), v, a))
        for k, (x, y) in enumerate(zip(got, expected)):
            assert_close(x, y, f"{function}[{k}] on {name}, {form} inputs")
        for x, before in zip(args, (q, v, a)):  # inputs untouched
            np.testing.assert_array_equal(np.asarray(x, dtype=np.float64), before)


@pytest.mark.parametrize("name", ROBOTS)
def test_fast_and_checked_paths_give_the_same_bits(name):
    """The checked path runs the same entry kernel: a strided copy gives bit for bit the result."""
    model, pm, pd = robot(name)
    data = model.create_data()
    rng = np.random.default_rng(5)
    q, v, a = rng.uniform(-1.0, 1.0, model.nv), rng.normal(size=model.nv), rng.normal(size=model.nv)
    for function, (ours, _, _) in cases(model, pm, pd).items():
        fast = as_tuple(ours(model, data, q, v, a))
        checked = as_tuple(ours(model, data, *(np.repeat(x, 2)[::2] for x in (q, v, a))))
        for x, y in zip(fast, checked):
            np.testing.assert_array_equal(x, y, err_msg=function)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_is_a_value_error_naming_it(bad):
    model, pm, pd = robot("panda")
    data = model.create_data()
    rng = np.random.default_rng(1)
    names = ("q", "v", "a")
    for function, (ours, _, n_inputs) in cases(model, pm, pd).items():
        for k in range(n_inputs):
            args = [rng.normal(size=model.nv) for _ in range(3)]
            args[k][2] = bad
            name = "tau" if function in ("aba", "aba_derivatives") and k == 2 else names[k]
            with pytest.raises(ValueError, match=rf"\b{name}\b at indices \[2\]"):
                ours(model, data, *args)
        # the next valid call is right again (nothing left behind by the refusal)
        q, v, a = rng.uniform(-1.0, 1.0, model.nv), rng.normal(size=model.nv), rng.normal(size=model.nv)
        _, theirs, _ = cases(model, pm, pd)[function]
        for x, y in zip(as_tuple(ours(model, data, q, v, a)), as_tuple(theirs(pin_q(pm, q), v, a))):
            assert_close(x, y, f"{function} after a refusal")


def test_wrong_sizes_and_foreign_data_are_value_errors():
    model, pm, pd = robot("panda")
    other = dc.load_urdf(dc.bundled_urdf("arm7"))
    data = model.create_data()
    q = np.zeros(model.nv)
    with pytest.raises(ValueError, match=r"q must have shape \(9,\)"):
        dc.rnea(model, data, np.zeros(7), q, q)
    with pytest.raises(ValueError, match=r"a must have shape \(9,\)"):
        dc.rnea(model, data, q, q, np.zeros((9, 1)))
    with pytest.raises(ValueError, match="data must come from model.create_data"):
        dc.crba(model, other.create_data(), q)
    with pytest.raises(ValueError, match="model must be a dyn_control.Model"):
        dc.gravity(None, data, q)
    dc.rnea(model, data, q, q, q, np.zeros((9, 6)))  # the fast path's f_ext variant compiled
    for bad in (np.zeros((9, 3)), np.zeros((9, 7)), np.zeros((8, 6))):
        with pytest.raises(ValueError, match=r"f_ext must have shape \(9, 6\)"):
            dc.rnea(model, data, q, q, q, bad)
        with pytest.raises(ValueError, match=r"f_ext must have shape \(9, 6\)"):
            dc.aba(model, data, q, q, q, bad)


def test_external_forces_on_the_fast_path_agree_with_pinocchio():
    model, pm, pd = robot("talos_reduced")
    data = model.create_data()
    rng = np.random.default_rng(3)
    q, v, a = rng.uniform(-1.0, 1.0, model.nv), rng.normal(size=model.nv), rng.normal(size=model.nv)
    f_ext = rng.normal(size=(model.nbodies, 6))
    forces = pin.StdVec_Force()
    forces.append(pin.Force.Zero())
    for f in f_ext:
        forces.append(pin.Force(swap_halves(f)))
    qp = pin_q(pm, q)
    assert_close(dc.rnea(model, data, q, v, a, f_ext), pin.rnea(pm, pd, qp, v, a, forces), "rnea f_ext")
    tau = rng.normal(size=model.nv)
    assert_close(dc.aba(model, data, q, v, tau, f_ext), pin.aba(pm, pd, qp, v, tau, forces), "aba f_ext")
    f_ext[4, 1] = np.nan
    with pytest.raises(ValueError, match="f_ext"):
        dc.rnea(model, data, q, v, a, f_ext)


def test_packed_buffers_hold_the_named_arrays_in_the_entry_kernels_order():
    model, _, _ = robot("talos_reduced")
    data = model.create_data()
    for owner, fields in ((model, entry.MODEL_FIELDS), (data, entry.DATA_FIELDS)):
        buf = owner._buf
        assert buf.dtype == np.float64 and buf.flags.c_contiguous
        assert tuple(buf[:entry.HEADER]) == (model.nbodies, model.nv, len(model.frame_names), 0.0)
        for k, name in enumerate(fields):
            array = getattr(owner, "_" + name)
            start = int(buf[entry.HEADER + k])
            assert start >= entry.HEADER + len(fields), name
            flat = buf[start:start + array.size]
            np.testing.assert_array_equal(flat.view(array.dtype).reshape(array.shape), array, err_msg=name)
            assert np.shares_memory(array, buf) and np.shares_memory(getattr(owner, name), buf), name
            assert not getattr(owner, name).flags.writeable, name
    # views of one stack stay views of it (Minv is a page of derivatives_tree, M_tree is M)
    assert np.shares_memory(data._Minv, data._derivatives_tree) and np.shares_memory(data._M_tree, data._M)
