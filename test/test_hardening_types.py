"""Issue 15, class 5: the wrong kind of value for an argument is a ValueError naming the argument.

Hypothesis puts one junk value (None, strings, bytes, dicts, sets, complex numbers, integers too large
for a double, NaN and inf, ragged or mixed lists, object arrays holding None, arrays of the wrong
shape, ...) in one argument of a public function whose other arguments are valid. The call raises a
ValueError whose message names that argument (never a TypeError, an OverflowError or a Numba typing
error), or, where the junk happens to be a valid value (a list of 7 numbers for q), returns what the
same call with a float64 array of those values returns. The valid calls themselves are checked
against Pinocchio and trimesh in the other test modules.
"""
import functools
import os
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dyn_control as dc
from oracles import JIT_DISABLED, robot_urdf, robots_dir

EXAMPLES = settings(max_examples=10 if JIT_DISABLED else 40, deadline=None)

SCALARS = st.one_of(st.none(), st.text(max_size=4), st.binary(max_size=4), st.booleans(),
                    st.complex_numbers(allow_nan=False, allow_infinity=False, max_magnitude=1e3),
                    st.integers(min_value=10**400, max_value=10**401), st.sampled_from([np.nan, np.inf, -np.inf]),
                    st.floats(allow_nan=False, allow_infinity=False, width=64),
                    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
                    st.frozensets(st.integers(), max_size=3))
JUNK = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=8),
    st.lists(st.lists(st.floats(-1, 1), max_size=7), min_size=1, max_size=8),     # ragged or wrong shape
    st.integers(0, 12).map(lambda n: np.array([None] * n, dtype=object)),
    st.integers(0, 12).map(lambda n: np.full(n, 0.5 + 1j)),
    st.tuples(st.integers(0, 8), st.integers(0, 8)).map(lambda s: np.zeros(s)),
    st.integers(0, 12).map(lambda n: np.array(["0.1"] * n)),
)


@functools.lru_cache(maxsize=None)
def arm():
    model = dc.load_urdf(dc.bundled_urdf("arm7"))
    return model, model.create_data()


@functools.lru_cache(maxsize=None)
def five_bar():
    return dc.load_urdf(dc.bundled_urdf("five_bar"))


@functools.lru_cache(maxsize=None)
def ur5_mesh_link():
    """The UR5 (its meshes found through package_dirs) and a link whose collision meshes are closed."""
    model = dc.load_urdf(robot_urdf("ur5_robot"), package_dirs=[os.path.dirname(os.path.dirname(robots_dir()))])
    for link in model.link_geometry:
        try:
            dc.inertia_from_link_meshes(model, link, 1000.0)
            return model, link
        except ValueError:
            continue
    raise AssertionError("no UR5 link with closed meshes")


def box():
    vertices = np.array([[x, y, z] for x in (0.0, 1.0) for y in (0.0, 2.0) for z in (0.0, 3.0)])
    faces = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                      [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    return vertices, faces


def signatures():
    """function: (call taking keyword arguments, their valid values)."""
    model, data = arm()
    nv, nb = model.nv, model.nbodies
    rng = np.random.default_rng(0)
    q, v, a = rng.normal(size=(3, nv))
    Q, V, A = rng.normal(size=(3, 2, nv))
    frame = model.body_names[-1]
    vertices, faces = box()
    state = dict(model=model, data=data, q=q, v=v)
    f = dict(f_ext=np.zeros((nb, 6)))
    return {
        "rnea": (dc.rnea, dict(state, a=a, **f)),
        "aba": (dc.aba, dict(state, tau=a, **f)),
        "crba": (dc.crba, dict(model=model, data=data, q=q)),
        "nonlinear_effects": (dc.nonlinear_effects, state),
        "gravity": (dc.gravity, dict(model=model, data=data, q=q)),
        "coriolis_matrix": (dc.coriolis_matrix, state),
        "forward_kinematics": (dc.forward_kinematics, dict(model=model, data=data, q=q)),
        "frame_pose": (dc.frame_pose, dict(model=model, data=data, q=q, frame=frame)),
        "jacobian": (dc.jacobian, dict(model=model, data=data, q=q, frame=frame, reference="local")),
        "rnea_derivatives": (dc.rnea_derivatives, dict(state, a=a, **f)),
        "aba_derivatives": (dc.aba_derivatives, dict(state, tau=a, **f)),
        "minverse": (dc.minverse, dict(model=model, data=data, q=q)),
        "regressor": (dc.regressor, dict(state, a=a)),
        "twist_derivatives": (dc.twist_derivatives, dict(state, a=a, **f)),
        "rnea_second_derivatives": (dc.rnea_second_derivatives, dict(state, a=a, **f)),
        "aba_second_derivatives": (dc.aba_second_derivatives, dict(state, tau=a, **f)),
        "rnea_batch": (dc.rnea_batch, dict(model=model, q=Q, v=V, a=A)),
        "rnea_derivatives_batch": (dc.rnea_derivatives_batch, dict(model=model, q=Q, v=V, a=A)),
        "regressor_batch": (dc.regressor_batch, dict(model=model, q=Q, v=V, a=A, out=None)),
        "constrained_dynamics": (dc.constrained_dynamics, dict(state, tau=a, contacts=[dc.Contact(frame)])),
        "impulse_dynamics": (dc.impulse_dynamics, dict(model=model, data=data, q=q, v_minus=v,
                                                       contacts=[dc.Contact(frame)], restitution=0.5)),
        "Contact": (lambda **contact: dc.constrained_dynamics(model, data, q, v, a, [dc.Contact(**contact)]),
                    dict(frame=frame, kind="frame", reference="local", other=None, anchor=np.eye(4), kp=1.0,
                         kd=np.ones(6))),
        "mesh_inertia": (dc.mesh_inertia, dict(vertices=vertices, faces=faces, density=1000.0)),
        "mesh_inertia_derivatives": (dc.mesh_inertia_derivatives, dict(vertices=vertices, faces=faces,
                                                                       density=1000.0)),
        "inertia_from_link_meshes": (dc.inertia_from_link_meshes, dict(zip(("model", "link"), ur5_mesh_link()),
                                                                       density=1000.0)),
        "with_inertial_parameters": (lambda phi: model.with_inertial_parameters(phi),
                                     dict(phi=model.inertial_parameters())),
        "with_twist_perturbation": (lambda eta: model.with_twist_perturbation(eta), dict(eta=np.zeros(6 * nb))),
        "with_gravity": (lambda gravity: model.with_gravity(gravity), dict(gravity=np.array([0.0, 0.0, -9.81]))),
        "load_mapping": (lambda name: dc.load_mapping(name, five_bar()), dict(name="five_bar")),
    }


CASES = [(function, argument) for function, (_, valid) in signatures().items() for argument in valid]
# a valid value that junk may equal: float64 arrays of those values stand for it
NUMERIC = ("q", "v", "a", "tau", "v_minus", "f_ext", "anchor", "kp", "kd", "vertices", "faces", "phi", "eta",
           "gravity", "restitution", "density")
OPTIONAL = ("f_ext", "other", "anchor", "out")  # None is valid


def as_results(result):
    if isinstance(result, dc.Model):  # the with_* functions: the new model's arrays
        result = (result.base_accel, result.parameters(), result.screw_axes, result.home_p)
    return [np.array(x, dtype=float) for x in (result if isinstance(result, tuple) else (result,))]


@pytest.mark.parametrize("function, argument", CASES)
@EXAMPLES
@given(junk=JUNK)
def test_junk_in_one_argument_is_a_value_error_naming_it(function, argument, junk):
    call, valid = signatures()[function]
    arguments = dict(valid, **{argument: junk})
    try:
        result = call(**arguments)
    except ValueError as error:
        name = {"name": "mapping"}.get(argument, argument)
        assert re.search(rf"\b({name})\b", str(error)), f"{function}({argument}=...): {error}"
        return
    # the junk was a valid value: the result is that of a float64 array of it (or of None)
    assert argument in NUMERIC or junk is None and argument in OPTIONAL, f"{function} took {argument}={junk!r}"
    expected = call(**dict(valid, **{argument: None if junk is None else np.array(junk, dtype=float)}))
    for x, y in zip(as_results(result), as_results(expected)):
        np.testing.assert_array_equal(x, y)


def test_the_issue_cases():
    model, data = arm()
    vertices, faces = box()
    q_none = np.array([None] * model.nv, dtype=object)
    for call, name in [(lambda: dc.forward_kinematics(model, data, q_none), "q"),
                       (lambda: dc.jacobian(model, data, q_none, model.body_names[-1]), "q"),
                       (lambda: dc.mesh_inertia(vertices * 1e150, faces, 1000.0), "vertices"),
                       (lambda: dc.constrained_dynamics(model, data, np.zeros(model.nv), np.full(model.nv, 1e154),
                                                        np.zeros(model.nv), [dc.Contact(model.body_names[-1])]),
                        "v")]:
        with pytest.raises(ValueError, match=rf"\b{name}\b"):
            call()
