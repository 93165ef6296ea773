"""Batches over many samples (rnea_batch, aba_batch, rnea_derivatives_batch, regressor_batch) and the
reductions identification needs (regressor_normal_equations, residual_gradient_batch), with `workers`.

Oracles: Pinocchio on example-robot-data URDFs (aba per sample; computeJointTorqueRegressor per sample,
its columns [m, mc, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] mapped to ours with OURS_FROM_PIN_PARAM, summed in
NumPy; the joint-term block [a_i, v_i, sgn_s(v_i)] is ours, built here from its definition), the
single-sample calls (bit for bit for the batches), the identities grad = YtY phi - Ytau and the
quadratic's central difference for the residual, and workers=1 against workers=2 (bit for bit).
"""
import functools

import numba
import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from oracles import (JIT_DISABLED, OURS_FROM_PIN_PARAM, pin_q, pinocchio_model, random_state,
                     robot_urdf)

pytestmark = pytest.mark.kernels

ROBOTS = ["panda", "tiago"] if JIT_DISABLED else ["panda", "ur5_robot", "talos_reduced", "tiago", "solo12"]
REDUCTION_ROBOTS = ["panda"] if JIT_DISABLED else ["panda", "talos_reduced", "tiago"]
# more than one group of lanes (64) and than one block of the reductions (256), with a short last one
T_BATCH = 9 if JIT_DISABLED else 70
T_REDUCTION = 11 if JIT_DISABLED else 300
# reductions against a serial NumPy sum: the order of the additions differs, nothing else
SUM_TOLERANCE = 1e-12
# against Pinocchio's regressor (another algorithm: its own round-off per entry)
PINOCCHIO_TOLERANCE = 1e-10
TWO_WORKERS = numba.config.NUMBA_NUM_THREADS >= 2


@functools.lru_cache(maxsize=None)
def robot(name, mimic=False, joint_terms=False):
    """(model, Pinocchio model); with joint_terms, our model carries armature and friction."""
    path = robot_urdf(name)
    model = dc.load_urdf(path, mimic=mimic)
    if joint_terms:
        rng = np.random.default_rng(5)
        model = model.with_joint_dynamics(armature=rng.uniform(0.01, 0.2, model.nbodies),
                                          viscous=rng.uniform(0.0, 0.5, model.nbodies),
                                          coulomb=rng.uniform(0.0, 0.5, model.nbodies))
    return model, pinocchio_model(path)


def samples(model, T, seed):
    """(q, v, a, tau), each (T, nv): random states inside the joint limits, random torques."""
    rng = np.random.default_rng(seed)
    q, v, a = (np.array(x) for x in zip(*(random_state(model, rng) for _ in range(T))))
    return q, v, a, 10.0 * rng.normal(size=(T, model.nv))


def close(ours, ref, tolerance):
    scale = max(1.0, float(np.abs(ref).max(initial=0.0)))
    error = float(np.abs(np.asarray(ours) - ref).max(initial=0.0))
    assert error <= tolerance * scale, f"error {error:.3g} at scale {scale:.3g}"


def pinocchio_regressor(model, pm, pd, q, v, a, joint_terms):
    """Pinocchio's regressor in our column order, plus our joint-term block [a_i, v_i, sgn_s(v_i)]."""
    nv, nb = model.nv, model.nbodies
    Y = pin.computeJointTorqueRegressor(pm, pd, pin_q(pm, q), v, a)
    Y = Y.reshape(nv, nb, 10)[:, :, OURS_FROM_PIN_PARAM].reshape(nv, 10 * nb)
    if not joint_terms:
        return Y
    J = np.zeros((nv, 3 * nb))
    for i in range(nv):
        J[i, 3 * i:3 * i + 3] = a[i], v[i], np.tanh(v[i] / dc.COULOMB_VELOCITY_SCALE)
    return np.hstack([Y, J])


# ----------------------------------------------------------------------------------------------
# rnea and aba batches: every row the single call's, bit for bit


@pytest.mark.parametrize("joint_terms", [False, True])
@pytest.mark.parametrize("name", ROBOTS)
def test_rnea_aba_and_regressor_batches_are_the_single_calls_bit_for_bit(name, joint_terms):
    model, _ = robot(name, joint_terms=joint_terms)
    data = model.create_data()
    q, v, a, tau = samples(model, T_BATCH, 1)
    tau_batch = dc.rnea_batch(model, q, v, a)
    ddq_batch = dc.aba_batch(model, q, v, tau)
    Y_batch = dc.regressor_batch(model, q, v, a, joint_terms=joint_terms)
    assert tau_batch.shape == ddq_batch.shape == (T_BATCH, model.nv)
    assert Y_batch.shape == (T_BATCH, model.nv, (13 if joint_terms else 10) * model.nbodies)
    for t in range(T_BATCH):
        assert np.array_equal(tau_batch[t], dc.rnea(model, data, q[t], v[t], a[t])), t
        assert np.array_equal(ddq_batch[t], dc.aba(model, data, q[t], v[t], tau[t])), t
        assert np.array_equal(Y_batch[t], dc.regressor(model, data, q[t], v[t], a[t], joint_terms=joint_terms)), t


@pytest.mark.parametrize("mimic", [False, True])
def test_regressor_batch_into_out_is_the_single_calls(mimic):
    """out= is written and returned, call after call on other samples, each row the single call's;
    a mimic-coupled model's contraction lands in it too."""
    model, _ = robot("panda", mimic=mimic)
    data = model.create_data()
    out = np.full((T_BATCH, model.nv, 13 * model.nbodies), np.nan)
    for seed in (21, 22):
        q, v, a, _ = samples(model, T_BATCH, seed)
        assert dc.regressor_batch(model, q, v, a, joint_terms=True, out=out) is out
        for t in range(T_BATCH):
            assert np.array_equal(out[t], dc.regressor(model, data, q[t], v[t], a[t], joint_terms=True)), t


def test_regressor_batch_refuses_a_wrong_out():
    model, _ = robot("panda")
    q, v, a, _ = samples(model, 4, 23)
    shape = (4, model.nv, 10 * model.nbodies)
    for out, message in ((np.zeros(shape[:2]), r"\bout must have shape"),
                         (np.zeros(shape, dtype=np.float32), r"\bout must be a C-contiguous"),
                         (np.zeros(shape[::-1]).T, r"\bout must be a C-contiguous"),
                         (np.zeros(shape).tolist(), r"\bout must be None or a numpy array")):
        with pytest.raises(ValueError, match=message):
            dc.regressor_batch(model, q, v, a, out=out)
    read_only = np.zeros(shape)
    read_only.setflags(write=False)
    with pytest.raises(ValueError, match=r"\bout must be a C-contiguous"):
        dc.regressor_batch(model, q, v, a, out=read_only)
    out = np.zeros(shape)
    q_in_out = out.reshape(-1)[:q.size].reshape(q.shape)  # the samples stored in out's first rows
    q_in_out[:] = q
    with pytest.raises(ValueError, match=r"\bout shares memory with q"):
        dc.regressor_batch(model, q_in_out, v, a, out=out)


@pytest.mark.parametrize("name", ROBOTS)
def test_aba_batch_matches_pinocchio(name):
    model, pm = robot(name)
    pd = pm.createData()
    q, v, _, tau = samples(model, T_BATCH, 2)
    ddq = dc.aba_batch(model, q, v, tau)
    for t in range(T_BATCH):
        close(ddq[t], pin.aba(pm, pd, pin_q(pm, q[t]), v[t], tau[t]), 1e-8)


def test_aba_batch_inverts_rnea_batch_with_joint_terms():
    model, _ = robot("panda", joint_terms=True)
    q, v, a, _ = samples(model, T_BATCH, 3)
    close(dc.aba_batch(model, q, v, dc.rnea_batch(model, q, v, a)), a, 1e-9)


def test_aba_batch_with_mimic_coupling_is_the_single_calls():
    model, _ = robot("panda", mimic=True)
    assert model.coupling is not None
    data = model.create_data()
    q, v, _, tau = samples(model, 5, 4)
    ddq = dc.aba_batch(model, q, v, tau)
    for t in range(5):
        assert np.array_equal(ddq[t], dc.aba(model, data, q[t], v[t], tau[t]))


def test_aba_batch_names_singular_samples():
    model, _ = robot("panda")
    phi = model.phi.copy()
    phi[-1] = 0.0  # the last finger without inertia: its joint moves nothing
    singular = model.with_inertial_parameters(phi)
    q, v, _, tau = samples(singular, 3, 5)
    with pytest.raises(ValueError, match=r"singular.*at samples \[0, 1, 2\]"):
        dc.aba_batch(singular, q, v, tau)


# ----------------------------------------------------------------------------------------------
# workers


def all_batches(model, q, v, a, tau, workers):
    """Every batch function's results at these samples, as a list of arrays."""
    out = [dc.rnea_batch(model, q, v, a, workers=workers), dc.aba_batch(model, q, v, tau, workers=workers)]
    out += list(dc.rnea_derivatives_batch(model, q, v, a, workers=workers))
    out.append(dc.regressor_batch(model, q, v, a, joint_terms=True, workers=workers))
    out += list(dc.regressor_normal_equations(model, q, v, a, tau, workers=workers))
    value, grad = dc.residual_gradient_batch(model, q, v, a, tau, workers=workers)
    return out + [np.array(value), grad]


@pytest.mark.skipif(not TWO_WORKERS, reason="Numba launched one thread")
@pytest.mark.parametrize("name", REDUCTION_ROBOTS[:2])
def test_one_or_two_workers_give_the_same_bits(name):
    model, _ = robot(name, joint_terms=True)
    q, v, a, tau = samples(model, T_REDUCTION, 6)
    one = all_batches(model, q, v, a, tau, 1)
    two = all_batches(model, q, v, a, tau, 2)
    default = all_batches(model, q, v, a, tau, None)
    for x, y, z in zip(one, two, default):
        assert np.array_equal(x, y) and np.array_equal(x, z)


@pytest.mark.parametrize("workers", [0, -1, 1.0, 1.5, "2", True, np.float64(2.0),
                                     numba.config.NUMBA_NUM_THREADS + 1])
def test_workers_must_be_an_integer_within_the_threads(workers):
    model, _ = robot("panda")
    q, v, a, tau = samples(model, 2, 7)
    before = numba.get_num_threads()
    calls = [lambda: dc.rnea_batch(model, q, v, a, workers=workers),
             lambda: dc.aba_batch(model, q, v, tau, workers=workers),
             lambda: dc.rnea_derivatives_batch(model, q, v, a, workers=workers),
             lambda: dc.regressor_batch(model, q, v, a, workers=workers),
             lambda: dc.regressor_normal_equations(model, q, v, a, tau, workers=workers),
             lambda: dc.residual_gradient_batch(model, q, v, a, tau, workers=workers)]
    for call in calls:
        with pytest.raises(ValueError, match=r"\bworkers\b"):
            call()
    assert numba.get_num_threads() == before


def test_workers_setting_is_restored():
    model, _ = robot("panda")
    q, v, a, tau = samples(model, 3, 8)
    before = numba.get_num_threads()
    chunksize = numba.get_parallel_chunksize()
    dc.rnea_batch(model, q, v, a, workers=1)
    dc.regressor_normal_equations(model, q, v, a, tau, workers=np.int64(1))
    assert numba.get_num_threads() == before and numba.get_parallel_chunksize() == chunksize


# ----------------------------------------------------------------------------------------------
# normal equations and the residual's gradient


@pytest.mark.parametrize("joint_terms", [True, False])
@pytest.mark.parametrize("name", REDUCTION_ROBOTS)
def test_normal_equations_match_pinocchio_regressors_summed(name, joint_terms):
    model, pm = robot(name)
    pd = pm.createData()
    q, v, a, tau = samples(model, T_REDUCTION, 9)
    YtY, Ytau = dc.regressor_normal_equations(model, q, v, a, tau, joint_terms=joint_terms)
    P = (13 if joint_terms else 10) * model.nbodies
    assert YtY.shape == (P, P) and Ytau.shape == (P,)
    assert np.array_equal(YtY, YtY.T)
    ref_A, ref_b = np.zeros((P, P)), np.zeros(P)
    for t in range(T_REDUCTION):
        Y = pinocchio_regressor(model, pm, pd, q[t], v[t], a[t], joint_terms)
        ref_A += Y.T @ Y
        ref_b += Y.T @ tau[t]
    close(YtY, ref_A, PINOCCHIO_TOLERANCE)
    close(Ytau, ref_b, PINOCCHIO_TOLERANCE)


@pytest.mark.parametrize("name, mimic", [("panda", False), ("panda", True)] +
                         ([] if JIT_DISABLED else [("talos_reduced", False)]))
def test_reductions_are_the_serial_sums(name, mimic):
    """Against dc.regressor's single calls summed in NumPy (also for a mimic-coupled model, whose rows
    are G^T Y_tree): the same regressors, only the order of the additions differs."""
    model, _ = robot(name, mimic=mimic, joint_terms=True)
    data = model.create_data()
    q, v, a, tau = samples(model, T_REDUCTION, 10)
    YtY, Ytau = dc.regressor_normal_equations(model, q, v, a, tau)
    Y = np.array([dc.regressor(model, data, q[t], v[t], a[t], joint_terms=True).copy() for t in range(T_REDUCTION)])
    close(YtY, np.einsum("tki,tkj->ij", Y, Y), SUM_TOLERANCE)
    close(Ytau, np.einsum("tki,tk->i", Y, tau), SUM_TOLERANCE)
    phi = 1.1 * model.parameters()
    value, grad = dc.residual_gradient_batch(model, q, v, a, tau, phi=phi)
    r = np.einsum("tki,i->tk", Y, phi) - tau
    close(value / (0.5 * np.sum(r ** 2)), 1.0, SUM_TOLERANCE)
    close(grad, np.einsum("tki,tk->i", Y, r), SUM_TOLERANCE)


@pytest.mark.parametrize("joint_terms", [True, False])
@pytest.mark.parametrize("name", REDUCTION_ROBOTS)
def test_residual_gradient_matches_pinocchio_and_the_normal_equations(name, joint_terms):
    model, pm = robot(name, joint_terms=True)
    pd = pm.createData()
    q, v, a, tau = samples(model, T_REDUCTION, 11)
    phi = model.parameters() if joint_terms else model.inertial_parameters()
    phi = phi * np.random.default_rng(12).uniform(0.8, 1.2, phi.size)
    value, grad = dc.residual_gradient_batch(model, q, v, a, tau, phi=phi, joint_terms=joint_terms)
    ref_value, ref_grad = 0.0, np.zeros(phi.size)
    for t in range(T_REDUCTION):
        Y = pinocchio_regressor(model, pm, pd, q[t], v[t], a[t], joint_terms)
        r = Y @ phi - tau[t]
        ref_value += 0.5 * r @ r
        ref_grad += Y.T @ r
    assert isinstance(value, float)
    close(value / ref_value, 1.0, PINOCCHIO_TOLERANCE)
    close(grad, ref_grad, PINOCCHIO_TOLERANCE)
    # the same sums as the normal equations: grad = YtY phi - Ytau
    YtY, Ytau = dc.regressor_normal_equations(model, q, v, a, tau, joint_terms=joint_terms)
    close(grad, YtY @ phi - Ytau, 1e-9)


def test_residual_gradient_is_the_derivative_of_the_value():
    """f is quadratic in phi: its central difference along any direction is its derivative up to
    round-off, whatever the step."""
    model, _ = robot("panda", joint_terms=True)
    q, v, a, tau = samples(model, T_REDUCTION, 13)
    rng = np.random.default_rng(14)
    phi = model.parameters() + 0.1 * rng.normal(size=13 * model.nbodies)
    direction = rng.normal(size=phi.size)
    _, grad = dc.residual_gradient_batch(model, q, v, a, tau, phi=phi)
    step = 1e-3
    plus, _ = dc.residual_gradient_batch(model, q, v, a, tau, phi=phi + step * direction)
    minus, _ = dc.residual_gradient_batch(model, q, v, a, tau, phi=phi - step * direction)
    close((plus - minus) / (2 * step) / (grad @ direction), 1.0, 1e-6)
    # phi defaults to the model's own parameters
    default = dc.residual_gradient_batch(model, q, v, a, tau)
    given = dc.residual_gradient_batch(model, q, v, a, tau, phi=model.parameters())
    assert default[0] == given[0] and np.array_equal(default[1], given[1])


def test_residual_vanishes_at_the_model_that_made_the_torques():
    model, _ = robot("panda", joint_terms=True)
    q, v, a, _ = samples(model, T_REDUCTION, 15)
    tau = dc.rnea_batch(model, q, v, a)
    value, grad = dc.residual_gradient_batch(model, q, v, a, tau)
    YtY, _ = dc.regressor_normal_equations(model, q, v, a, tau)
    assert value <= 1e-20 * np.sum(tau ** 2)
    close(grad, np.zeros_like(grad), 1e-10 * np.abs(YtY).max())


# ----------------------------------------------------------------------------------------------
# inputs


def test_reductions_bad_input():
    model, _ = robot("panda")
    q, v, a, tau = samples(model, 6, 16)
    nv, nb = model.nv, model.nbodies
    for reduction in (dc.regressor_normal_equations, dc.residual_gradient_batch):
        with pytest.raises(ValueError, match=rf"\btau must have shape \(6, {nv}\)"):
            reduction(model, q, v, a, tau[:4])
        bad = tau.copy()
        bad[3, 2] = np.inf
        with pytest.raises(ValueError, match=r"non-finite.*\btau\b.*samples \[3\]"):
            reduction(model, q, v, a, bad)
        bad = q.copy()
        bad[5, 0] = np.nan
        with pytest.raises(ValueError, match=r"non-finite.*in q at samples \[5\]"):
            reduction(model, bad, v, a, tau)
        with pytest.raises(ValueError, match="model"):
            reduction(None, q, v, a, tau)
    with pytest.raises(ValueError, match=rf"\bphi must have shape \({13 * nb},\)"):
        dc.residual_gradient_batch(model, q, v, a, tau, phi=np.zeros(10 * nb))
    with pytest.raises(ValueError, match=r"\bphi\b.*non-finite"):
        dc.residual_gradient_batch(model, q, v, a, tau, phi=np.full(13 * nb, np.nan))
    bad = tau.copy()
    bad[1, 1] = np.nan
    with pytest.raises(ValueError, match=r"non-finite.*in tau at samples \[1\]"):
        dc.aba_batch(model, q, v, bad)


def test_no_samples():
    model, _ = robot("panda")
    q, v, a, tau = (x[:0] for x in samples(model, 1, 17))
    P = 13 * model.nbodies
    assert dc.aba_batch(model, q, v, tau).shape == (0, model.nv)
    YtY, Ytau = dc.regressor_normal_equations(model, q, v, a, tau)
    assert np.array_equal(YtY, np.zeros((P, P))) and np.array_equal(Ytau, np.zeros(P))
    value, grad = dc.residual_gradient_batch(model, q, v, a, tau)
    assert value == 0.0 and np.array_equal(grad, np.zeros(P))
