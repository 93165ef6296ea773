"""Issue 15, class 3: memory that scales with what is used.

model.create_data() of a model of more than LAZY_BODIES bodies allocates the buffers of O(nbodies)
and the joint-space matrices every per-call function writes (M, C); the larger families (regressor,
first-order derivatives and M^-1, joint-twist derivatives, second-order tensors of inverse and
forward dynamics) on their first use with that data, once, then reused. Measured with tracemalloc
(NumPy reports its allocations there) on chains of hypothesis-drawn length: create_data() of a
1,000-joint chain stays under 100 MB, calls allocate nothing on their second use, and a family's
first use allocates about its own size. The results of the lazily allocated families are checked against
Pinocchio (first order, regressor) and central differences of Pinocchio's first-order derivatives
(second order); rnea on the 1,000-joint chain against Pinocchio is test_deep_trees.py's.
"""
import functools
import tracemalloc

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dyn_control as dc
from dyn_control.model import LAZY_BODIES
from oracles import OURS_FROM_PIN_PARAM

MB = 1e6
EPS = 1e-6


def chain_xml(n, seed=0):
    """A chain of n revolute joints about x, y or z, each link with an off-centre inertia."""
    rng = np.random.default_rng(seed)
    parts = ['<robot name="chain"><link name="l0"/>']
    for i in range(1, n + 1):
        x, y, z = rng.uniform(-0.05, 0.1, size=3).round(4)
        axis = ("1 0 0", "0 1 0", "0 0 1")[rng.integers(0, 3)]
        parts.append(f'<link name="l{i}"><inertial><origin xyz="0.01 0.02 0.05"/><mass value="0.5"/>'
                     '<inertia ixx="0.002" iyy="0.003" izz="0.004" ixy="0" ixz="0" iyz="0"/></inertial></link>'
                     f'<joint name="j{i:05d}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
                     f'<origin xyz="{x} {y} {z}"/><axis xyz="{axis}"/>'
                     '<limit lower="-3" upper="3" effort="5" velocity="2"/></joint>')
    return "".join(parts) + "</robot>"


@functools.lru_cache(maxsize=None)
def chain(n):
    xml = chain_xml(n)
    return dc.load_urdf(xml), xml


def allocated(call):
    """(result, bytes allocated and kept, peak bytes) of call() under tracemalloc."""
    tracemalloc.start()
    try:
        result = call()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, current, peak


def test_create_data_of_a_1000_joint_chain_is_small():
    model, _ = chain(1000)
    data, kept, peak = allocated(model.create_data)
    assert peak < 100 * MB, f"create_data() peaked at {peak / MB:.0f} MB"
    q, v, a = np.random.default_rng(0).normal(size=(3, 1000))
    per_call = [lambda: dc.rnea(model, data, q, v, a), lambda: dc.aba(model, data, q, v, a),
                lambda: dc.crba(model, data, q), lambda: dc.coriolis_matrix(model, data, q, v),
                lambda: dc.jacobian(model, data, q, "l1000"), lambda: dc.forward_kinematics(model, data, q)]
    for call in per_call:
        _, kept, _ = allocated(call)
        assert kept < 1 * MB, f"a per-call function kept {kept / MB:.1f} MB"
    # the first-order family of 1,000 joints: M^-1's bias forces and six (nv, nv) matrices, ~100 MB
    _, kept, _ = allocated(lambda: dc.rnea_derivatives(model, data, q, v, a))
    assert 90 * MB < kept < 110 * MB, f"first use of the first-order family kept {kept / MB:.0f} MB"
    _, kept, _ = allocated(lambda: dc.aba_derivatives(model, data, q, v, a))
    assert kept < 1 * MB, f"aba_derivatives after rnea_derivatives kept {kept / MB:.1f} MB"


def family_sizes(nb):
    """Bytes of each family allocated on first use, for a chain of nb joints (nv = nb)."""
    return {"regressor": 8 * 10 * nb * nb, "first order": 8 * 12 * nb * nb,
            "joint twists": 8 * 6 * nb * nb, "second order": 8 * (4 * nb**3 + 3 * nb * nb),
            "forward second order": 8 * 7 * nb**3}


def family_calls(model, data, q, v, a):
    """family: a call that uses it first (in this order: aba_second_derivatives uses the second order)."""
    return {"regressor": lambda: dc.regressor(model, data, q, v, a),
            "first order": lambda: dc.minverse(model, data, q),
            "joint twists": lambda: dc.twist_derivatives(model, data, q, v, a),
            "second order": lambda: dc.rnea_second_derivatives(model, data, q, v, a),
            "forward second order": lambda: dc.aba_second_derivatives(model, data, q, v, a)}


@settings(max_examples=6, deadline=None)
@given(n=st.integers(LAZY_BODIES + 1, LAZY_BODIES + 25))
def test_each_family_is_allocated_on_first_use_then_reused(n):
    model, _ = chain(n)
    q, v, a = np.random.default_rng(n).normal(size=(3, n))
    for call in family_calls(model, model.create_data(), q, v, a).values():
        call()  # Numba loads the kernels from its cache (memory it keeps) before the measurement
    for family, call in family_calls(model, model.create_data(), q, v, a).items():
        size = family_sizes(n)[family]
        _, kept, _ = allocated(call)
        assert size <= kept < size + 0.1 * MB, f"{family}: first use kept {kept} bytes for {size}"
        _, kept, _ = allocated(call)
        assert kept < 0.1 * MB, f"{family}: second use kept {kept} bytes"


def test_up_to_lazy_bodies_every_family_comes_with_create_data():
    """Small models keep plain attribute reads (no first-use machinery): nothing is left to allocate."""
    model, _ = chain(LAZY_BODIES)
    q, v, a = np.random.default_rng(1).normal(size=(3, LAZY_BODIES))
    for call in family_calls(model, model.create_data(), q, v, a).values():
        call()  # Numba loads the kernels from its cache before the measurement
    data, kept, _ = allocated(model.create_data)
    sizes = family_sizes(LAZY_BODIES)
    assert kept > sum(sizes.values())
    for family, call in family_calls(model, data, q, v, a).items():
        _, kept, _ = allocated(call)
        assert kept < 0.1 * MB, f"{family}: first use kept {kept} bytes"


@pytest.fixture(scope="module")
def medium():
    """A chain just above LAZY_BODIES joints, ours and Pinocchio's (the tests take a fresh data each,
    its families not allocated yet)."""
    model, xml = chain(LAZY_BODIES + 1)
    pm = pin.buildModelFromXML(xml)
    q, v, a = np.random.default_rng(3).normal(size=(3, LAZY_BODIES + 1))
    return model, pm, pm.createData(), q, v, a


def assert_close(ours, expected, what, tolerance=1e-9):
    scale = max(1.0, float(np.abs(expected).max()))
    error = float(np.abs(np.asarray(ours) - expected).max())
    assert error <= tolerance * scale, f"{what}: max error {error:.3e} (scale {scale:.3e})"


def test_first_use_results_agree_with_pinocchio(medium):
    model, pm, pd, q, v, a = medium
    data = model.create_data()
    Y = dc.regressor(model, data, q, v, a)
    Y_pin = pin.computeJointTorqueRegressor(pm, pd, q, v, a)
    n = model.nv
    assert_close(Y, Y_pin.reshape(n, n, 10)[:, :, OURS_FROM_PIN_PARAM].reshape(n, -1), "regressor")
    dq, dv, M = dc.rnea_derivatives(model, data, q, v, a)
    expected = pin.computeRNEADerivatives(pm, pd, q, v, a)
    for what, x, ref in zip(("dtau_dq", "dtau_dv"), (dq, dv), expected):
        assert_close(x, ref, what)
    assert_close(M, np.triu(expected[2]) + np.triu(expected[2], 1).T, "M")
    Minv = dc.minverse(model, data, q)
    upper = pin.computeMinverse(pm, pd, q)
    assert_close(Minv, np.triu(upper) + np.triu(upper, 1).T, "Minv", 1e-8)


def test_second_order_first_use_agrees_with_differences_of_pinocchio(medium):
    model, pm, pd, q, v, a = medium
    data = model.create_data()
    d2q, d2v, d2qv, dM = (x.copy() for x in dc.rnea_second_derivatives(model, data, q, v, a))
    for k in (0, 17, model.nv - 1):
        step = np.zeros(model.nv)
        step[k] = EPS
        plus = [x.copy() for x in pin.computeRNEADerivatives(pm, pd, q + step, v, a)]
        minus = [x.copy() for x in pin.computeRNEADerivatives(pm, pd, q - step, v, a)]
        assert_close(d2q[:, :, k], (plus[0] - minus[0]) / (2 * EPS), f"d2tau/dq dq_{k}", 1e-5)
        assert_close(dM[:, :, k], (np.triu(plus[2]) - np.triu(minus[2])) / (2 * EPS)
                     + (np.triu(plus[2], 1) - np.triu(minus[2], 1)).T / (2 * EPS), f"dM/dq_{k}", 1e-5)
        plus = [x.copy() for x in pin.computeRNEADerivatives(pm, pd, q, v + step, a)]
        minus = [x.copy() for x in pin.computeRNEADerivatives(pm, pd, q, v - step, a)]
        assert_close(d2v[:, :, k], (plus[1] - minus[1]) / (2 * EPS), f"d2tau/dv dv_{k}", 1e-5)
        assert_close(d2qv[:, :, k], (plus[0] - minus[0]) / (2 * EPS), f"d2tau/dq dv_{k}", 1e-5)
