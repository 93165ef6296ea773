"""Issue 15, class 8: an input that is (a view of) a buffer of the same data.

Results are read-only views of data's buffers, and the API boundary copies read-only inputs, so a
buffer passed back as an input (rnea(model, data, data.tau, v, a), f_ext=data.F, q=data.M[0], ...)
is copied before the call writes anything: the result is that of the values the buffer held. Hypothesis
fills data's buffers by a round of calls at a random state, then passes to a function, as each of its
array arguments, either a fresh array or a view of one of data's buffers (whole, a leading index, or
a contiguous run of its entries); the oracle is Pinocchio at copies of those values (central
differences of Pinocchio's first-order derivatives for the second order).
"""
import functools

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dyn_control as dc
from oracles import JIT_DISABLED, swap_halves

pytestmark = pytest.mark.kernels

TOLERANCE = 1e-9
EXAMPLES = settings(max_examples=5 if JIT_DISABLED else 40, deadline=None)
EPS = 1e-3


@functools.lru_cache(maxsize=None)
def arm():
    path = dc.bundled_urdf("arm7")
    model = dc.load_urdf(path)
    pm = pin.buildModelFromUrdf(path)
    return model, pm, pm.createData(), model.body_names[-1]


def fill(model, data, rng):
    """Every buffer of data holds values of a call at a random state."""
    q, v, a = rng.normal(size=(3, model.nv))
    f_ext = rng.normal(size=(model.nbodies, 6))
    for call in (dc.rnea, dc.aba, dc.rnea_derivatives, dc.aba_derivatives, dc.twist_derivatives,
                 dc.rnea_second_derivatives, dc.aba_second_derivatives):
        call(model, data, q, v, a, f_ext)
    dc.regressor(model, data, q, v, a)
    dc.coriolis_matrix(model, data, q, v)
    dc.nonlinear_effects(model, data, q, v)
    dc.gravity(model, data, q)
    dc.minverse(model, data, q)
    dc.jacobian(model, data, q, model.body_names[-1])
    dc.forward_kinematics(model, data, q)
    dc.constrained_dynamics(model, data, q, v, a, [dc.Contact(model.body_names[-1])])


def views(data, shape):
    """Views of data's float64 buffers with `shape`: the buffer, its first leading entry, or the
    first entries of the whole buffer in order."""
    size = int(np.prod(shape))
    out = []
    for name, buffer in sorted(vars(data).items()):
        if name.startswith("_") or not isinstance(buffer, np.ndarray) or buffer.dtype != np.float64:
            continue
        if buffer.shape == shape:
            out.append((name, buffer))
        elif buffer.shape[-len(shape):] == shape:
            out.append((f"{name}[0]", buffer[(0,) * (buffer.ndim - len(shape))]))
        if buffer.size >= size and buffer.flags.c_contiguous:
            out.append((f"{name} flat", buffer.reshape(-1)[:size].reshape(shape)))
    return out


def pin_forces(f_ext):
    return [pin.Force.Zero()] + [pin.Force(swap_halves(f)) for f in f_ext]


def symmetric(upper):
    return np.triu(upper) + np.triu(upper, 1).T


def second_order_differences(pm, pd, first_order, q, v, x):
    """d/dq and d/dv of Pinocchio's first-order derivatives (d/dq, d/dv, M or Minv), as the four
    tensors [i, j, k] (qq, vv, qv, dM or dMinv / dq_k): central differences of steps EPS and EPS / 2
    combined by Richardson extrapolation (error O(EPS^4)), so that EPS can be large enough to keep
    the rounding error small when the first-order derivatives are large (ABA's reach 1e4 here)."""
    n = pm.nv

    def central(h):
        out = [np.zeros((n, n, n)) for _ in range(4)]
        for k in range(n):
            step = np.zeros(n)
            step[k] = h
            plus, minus = first_order(q + step, v, x), first_order(q - step, v, x)
            out[0][:, :, k] = (plus[0] - minus[0]) / (2 * h)
            out[3][:, :, k] = (plus[2] - minus[2]) / (2 * h)
            plus, minus = first_order(q, v + step, x), first_order(q, v - step, x)
            out[1][:, :, k] = (plus[1] - minus[1]) / (2 * h)
            out[2][:, :, k] = (plus[0] - minus[0]) / (2 * h)
        return out

    return [(4.0 * fine - coarse) / 3.0 for coarse, fine in zip(central(EPS), central(EPS / 2))]


def oracles(pm, pd, frame):
    """name: (argument shapes, ours(model, data, *args), Pinocchio's(*args)); nv, nb filled in."""
    fid = pm.getFrameId(frame)

    def rnea_first(q, v, a, f):
        return [x.copy() for x in pin.computeRNEADerivatives(pm, pd, q, v, a, pin_forces(f))][:2] + [
            symmetric(pd.M)]

    def aba_first(q, v, tau, f):
        out = [x.copy() for x in pin.computeABADerivatives(pm, pd, q, v, tau, pin_forces(f))]
        return out[:2] + [symmetric(out[2])]

    def constrained(q, v, tau):
        model = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, pm.frames[fid].parentJoint,
                                         pm.frames[fid].placement, 0, pin.SE3.Identity(), pin.ReferenceFrame.LOCAL)
        models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
        models.append(model)
        datas.append(model.createData())
        pin.initConstraintDynamics(pm, pd, models, datas)
        return [pin.constraintDynamics(pm, pd, q, v, tau, models, datas).copy(), pd.lambda_c.copy()]

    return {
        "rnea": (("nv", "nv", "nv", "f"), lambda m, d, q, v, a, f: [dc.rnea(m, d, q, v, a, f)],
                 lambda q, v, a, f: [pin.rnea(pm, pd, q, v, a, pin_forces(f))]),
        "aba": (("nv", "nv", "nv", "f"), lambda m, d, q, v, tau, f: [dc.aba(m, d, q, v, tau, f)],
                lambda q, v, tau, f: [pin.aba(pm, pd, q, v, tau, pin_forces(f))]),
        "crba": (("nv",), lambda m, d, q: [dc.crba(m, d, q)], lambda q: [symmetric(pin.crba(pm, pd, q))]),
        "minverse": (("nv",), lambda m, d, q: [dc.minverse(m, d, q)],
                     lambda q: [symmetric(pin.computeMinverse(pm, pd, q))]),
        "jacobian": (("nv",), lambda m, d, q: [dc.jacobian(m, d, q, frame, "local")],
                     lambda q: [swap_halves(pin.computeFrameJacobian(pm, pd, q, fid, pin.LOCAL))]),
        "coriolis_matrix": (("nv", "nv"), lambda m, d, q, v: [dc.coriolis_matrix(m, d, q, v)],
                            lambda q, v: [pin.computeCoriolisMatrix(pm, pd, q, v)]),
        "rnea_derivatives": (("nv", "nv", "nv", "f"), lambda m, d, q, v, a, f: dc.rnea_derivatives(m, d, q, v, a, f),
                             rnea_first),
        "aba_derivatives": (("nv", "nv", "nv", "f"), lambda m, d, q, v, tau, f: dc.aba_derivatives(m, d, q, v, tau, f),
                            aba_first),
        "rnea_second_derivatives": (("nv", "nv", "nv"),
                                    lambda m, d, q, v, a: dc.rnea_second_derivatives(m, d, q, v, a),
                                    lambda q, v, a: second_order_differences(
                                        pm, pd, lambda q_, v_, a_: rnea_first(q_, v_, a_, np.zeros((pm.nv, 6))),
                                        q, v, a)),
        "aba_second_derivatives": (("nv", "nv", "nv"),
                                   lambda m, d, q, v, tau: dc.aba_second_derivatives(m, d, q, v, tau),
                                   lambda q, v, tau: second_order_differences(
                                       pm, pd, lambda q_, v_, t_: aba_first(q_, v_, t_, np.zeros((pm.nv, 6))),
                                       q, v, tau)),
        "constrained_dynamics": (("nv", "nv", "nv"),
                                 lambda m, d, q, v, tau: dc.constrained_dynamics(m, d, q, v, tau, [dc.Contact(frame)]),
                                 constrained),
    }


FUNCTIONS = list(oracles(*arm()[1:]))
DIFFERENCED = ("rnea_second_derivatives", "aba_second_derivatives")


@pytest.mark.parametrize("function", FUNCTIONS)
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), picks=st.lists(st.integers(0, 10**6), min_size=4, max_size=4))
def test_a_buffer_of_data_as_input_gives_the_result_of_its_values(function, seed, picks):
    model, pm, pd, frame = arm()
    data = model.create_data()
    rng = np.random.default_rng(seed)
    fill(model, data, rng)
    kinds, ours, reference = oracles(pm, pd, frame)[function]
    shapes = {"nv": (model.nv,), "f": (model.nbodies, 6)}
    args, names = [], []
    for kind, pick in zip(kinds, picks):
        candidates = [("fresh", rng.normal(size=shapes[kind]))] + views(data, shapes[kind])
        name, x = candidates[pick % len(candidates)]
        args.append(x)
        names.append(name)
    values = [np.array(x) for x in args]  # the values the buffers hold before the call
    expected = reference(*values)
    got = [np.array(x) for x in ours(model, data, *args)]
    tolerance = 1e-5 if function in DIFFERENCED else TOLERANCE
    for k, (x, ref) in enumerate(zip(got, expected)):
        scale = max(1.0, float(np.abs(ref).max()))
        error = float(np.abs(x - ref).max())
        assert error <= tolerance * scale, f"{function}[{k}] with inputs {names}: error {error:.3g}"


def test_the_issue_case():
    """rnea(model, data, data.tau, v, a) was off by 8 N m on the arm; and a result is read-only."""
    model, pm, pd, _ = arm()
    data = model.create_data()
    v, a = np.ones(model.nv), np.linspace(-1.0, 1.0, model.nv)
    tau = dc.rnea(model, data, np.full(model.nv, 0.3), v, a)
    assert tau is data.tau or np.shares_memory(tau, data.tau)
    with pytest.raises(ValueError, match="read-only"):
        tau[0] = 1.0
    q = data.tau.copy()
    np.testing.assert_allclose(dc.rnea(model, data, data.tau, v, a), pin.rnea(pm, pd, q, v, a), rtol=1e-12, atol=1e-12)
