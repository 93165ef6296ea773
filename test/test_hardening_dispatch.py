"""Issue 15, class 2: no hidden compilation in a call because of an input's form.

A read-only array (what np.frombuffer gives from a message buffer), a Fortran-ordered, strided,
unaligned, big-endian, float32, integer or object array, a list or a tuple: every public function
takes each as the float64 array of the same values, gives the same result, and no Numba dispatcher
of the package gains a signature (a new one would mean a compilation of seconds in that call).
Numba reuses a compiled signature for a read-only array once one exists, so the first calls in a
fresh interpreter are what a new form would compile for: there the odd forms must leave exactly the
signatures that plain float64 arrays leave. In this process, hypothesis picks a form for every array
argument of a call. The oracle of each result is the same call with plain float64 arrays of the same
values (the values themselves are checked against Pinocchio and trimesh in the other test modules).
"""
import functools
import importlib
import json
import os
import pkgutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dyn_control as dc
from oracles import JIT_DISABLED

pytestmark = pytest.mark.skipif(JIT_DISABLED, reason="no dispatchers without the JIT")


def _unaligned(x):
    buffer = bytearray(x.nbytes + 1)
    out = np.frombuffer(buffer, dtype=np.float64, count=x.size, offset=1).reshape(x.shape)
    out[...] = x
    return out


def _strided(x):
    out = np.zeros(x.shape + (2,))[..., 0]
    out[...] = x
    return out


def _read_only(x):
    out = x.copy()
    out.flags.writeable = False
    return out


# form: (the odd input for float64 values x, the float64 values it stands for)
FORMS = {
    "float64": (lambda x: x.copy(), lambda x: x),
    "read-only": (_read_only, lambda x: x),
    "frombuffer": (lambda x: np.frombuffer(x.tobytes()).reshape(x.shape), lambda x: x),
    "unaligned": (_unaligned, lambda x: x),
    "strided": (_strided, lambda x: x),
    "fortran": (np.asfortranarray, lambda x: x),
    "big-endian": (lambda x: x.astype(">f8"), lambda x: x),
    "float32": (lambda x: x.astype(np.float32), lambda x: x.astype(np.float32).astype(np.float64)),
    "integer": (lambda x: np.round(x).astype(np.int32), lambda x: np.round(x)),
    "object": (lambda x: np.array(x.tolist(), dtype=object), lambda x: x),
    "list": (lambda x: x.tolist(), lambda x: x),
    "tuple": (lambda x: tuple(map(tuple, x)) if x.ndim == 2 else tuple(x), lambda x: x),
}


def dispatchers():
    """Every Numba dispatcher of the library: kernels, spatial algebra, mesh inertia."""
    names = [f"dyn_control.kernels.{m.name}" for m in pkgutil.iter_modules(dc.kernels.__path__)]
    found = {}
    for name in names + ["dyn_control.spatial", "dyn_control.inertia.mesh"]:
        for value in vars(importlib.import_module(name)).values():
            if hasattr(value, "signatures") and hasattr(value, "py_func"):
                found[id(value)] = value
    return list(found.values())


def signature_count():
    return sum(len(d.signatures) for d in dispatchers())


@functools.lru_cache(maxsize=None)
def arm():
    return dc.load_urdf(dc.bundled_urdf("arm7"))


def box():
    vertices = np.array([[x, y, z] for x in (0.0, 1.0) for y in (0.0, 2.0) for z in (0.0, 3.0)])
    faces = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                      [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    return vertices, faces


def calls(model):
    """name: (function of the array arguments, their float64 values)."""
    data = model.create_data()
    rng = np.random.default_rng(0)
    nv, nb = model.nv, model.nbodies
    q, v, a = 2.0 * rng.normal(size=(3, nv))
    f_ext = rng.normal(size=(nb, 6))
    Q, V, A = rng.normal(size=(3, 4, nv))
    frame = model.body_names[-1]
    contact = [dc.Contact(frame)]
    vertices, faces = box()
    return {
        "rnea": (lambda q, v, a, f: dc.rnea(model, data, q, v, a, f), (q, v, a, f_ext)),
        "aba": (lambda q, v, tau, f: dc.aba(model, data, q, v, tau, f), (q, v, a, f_ext)),
        "crba": (lambda q: dc.crba(model, data, q), (q,)),
        "nonlinear_effects": (lambda q, v: dc.nonlinear_effects(model, data, q, v), (q, v)),
        "gravity": (lambda q: dc.gravity(model, data, q), (q,)),
        "coriolis_matrix": (lambda q, v: dc.coriolis_matrix(model, data, q, v), (q, v)),
        "forward_kinematics": (lambda q: dc.forward_kinematics(model, data, q), (q,)),
        "jacobian": (lambda q: dc.jacobian(model, data, q, frame, "local"), (q,)),
        "rnea_derivatives": (lambda q, v, a, f: dc.rnea_derivatives(model, data, q, v, a, f), (q, v, a, f_ext)),
        "aba_derivatives": (lambda q, v, tau, f: dc.aba_derivatives(model, data, q, v, tau, f),
                            (q, v, a, f_ext)),
        "minverse": (lambda q: dc.minverse(model, data, q), (q,)),
        "regressor": (lambda q, v, a: dc.regressor(model, data, q, v, a), (q, v, a)),
        "twist_derivatives": (lambda q, v, a, f: dc.twist_derivatives(model, data, q, v, a, f),
                              (q, v, a, f_ext)),
        "rnea_second_derivatives": (lambda q, v, a, f: dc.rnea_second_derivatives(model, data, q, v, a, f),
                                    (q, v, a, f_ext)),
        "aba_second_derivatives": (lambda q, v, tau, f: dc.aba_second_derivatives(model, data, q, v, tau, f),
                                   (q, v, a, f_ext)),
        "rnea_batch": (lambda q, v, a: dc.rnea_batch(model, q, v, a), (Q, V, A)),
        "rnea_derivatives_batch": (lambda q, v, a: dc.rnea_derivatives_batch(model, q, v, a), (Q, V, A)),
        "regressor_batch": (lambda q, v, a: dc.regressor_batch(model, q, v, a), (Q, V, A)),
        "constrained_dynamics": (lambda q, v, tau: dc.constrained_dynamics(model, data, q, v, tau, contact),
                                 (q, v, a)),
        "impulse_dynamics": (lambda q, v: dc.impulse_dynamics(model, data, q, v, contact), (q, v)),
        "mesh_inertia": (lambda V, F: dc.mesh_inertia(V, F, 1000.0), (vertices, faces.astype(float))),
        "mesh_inertia_derivatives": (lambda V, F: dc.mesh_inertia_derivatives(V, F, 1000.0),
                                     (vertices, faces.astype(float))),
    }


def as_arrays(result):
    return [np.array(x) for x in (result if isinstance(result, tuple) else (result,))]


@functools.lru_cache(maxsize=None)
def warmed_up():
    """The calls, each run once with float64 inputs (loading what the Numba cache holds)."""
    table = calls(arm())
    for function, args in table.values():
        function(*args)
    return table


@pytest.mark.parametrize("name", list(calls(arm())))
@settings(max_examples=15, deadline=None)
@given(forms=st.lists(st.sampled_from(list(FORMS)), min_size=4, max_size=4))
def test_any_input_form_is_one_signature(name, forms):
    function, args = warmed_up()[name]
    before = signature_count()
    odd = [FORMS[form][0](x) for form, x in zip(forms, args)]
    plain = [FORMS[form][1](x) for form, x in zip(forms, args)]
    expected = as_arrays(function(*plain))
    got = as_arrays(function(*odd))
    assert signature_count() == before, f"{name} with {forms[:len(args)]} compiled a new signature"
    for x, y in zip(got, expected):
        np.testing.assert_array_equal(x, y)


def first_calls(forms):
    """Every call of calls() with all its arrays in each of `forms` in turn; the signatures of every
    dispatcher afterwards (run in a fresh interpreter by signatures_after_first_calls)."""
    for form in forms:
        for function, args in calls(arm()).values():
            function(*[FORMS[form][0](x) for x in args])
    return sorted(f"{d.py_func.__module__}.{d.__name__}{s}" for d in dispatchers() for s in d.signatures)


def signatures_after_first_calls(forms):
    code = (f"import json, sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); "
            f"import test_hardening_dispatch as t; print(json.dumps(t.first_calls({forms!r})))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def test_first_calls_in_any_form_compile_what_float64_compiles():
    odd = [form for form in FORMS if form != "float64"]
    assert signatures_after_first_calls(odd) == signatures_after_first_calls(["float64"])


def test_the_issue_case():
    """rnea_second_derivatives and aba_second_derivatives with q and v from np.frombuffer (read-only)
    compiled a specialization of about 20 s on their first call."""
    warmed_up()
    model = arm()
    data = model.create_data()
    before = signature_count()
    q = np.frombuffer(np.linspace(-1.0, 1.0, model.nv).tobytes())
    assert not q.flags.writeable
    dc.rnea_second_derivatives(model, data, q, q, q)
    dc.aba_second_derivatives(model, data, q, q, q)
    assert signature_count() == before


def test_a_fast_call_refused_by_a_compile_in_another_thread_takes_the_checked_path(monkeypatch):
    """Another thread compiling an entry kernel's signature turns its compile flag on for a moment;
    a fast call then tries to compile and meets the flag off again (Numba's RuntimeError
    "compilation disabled": seen when a node's kernel preload and its configure met). The public
    function goes the checked way and gives the same result."""
    from dyn_control import dynamics
    model = dc.load_urdf(dc.bundled_urdf("arm7"))
    data = model.create_data()
    rng = np.random.default_rng(0)
    q, v, a = rng.normal(size=(3, model.nv))
    expected = dc.rnea(model, data, q, v, a).copy()

    def compiling_elsewhere(*args):
        raise RuntimeError("compilation disabled")
    monkeypatch.setattr(dynamics, "_fast_rnea", compiling_elsewhere)
    np.testing.assert_array_equal(dc.rnea(model, data, q, v, a), expected)
