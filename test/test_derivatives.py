"""First-order derivatives of inverse and forward dynamics, M^-1, and the batch variants.

Oracles: Pinocchio (computeRNEADerivatives, computeABADerivatives, computeMinverse,
computeGeneralizedGravityDerivatives, rnea), central differences of our own rnea/aba (q is joint
angles here, no manifold: Pinocchio's derivatives of continuous joints are per tangent dimension,
which is our angle), and the identities d tau / d a = M, d FD / d tau = M^-1.
"""
import functools

import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from oracles import (JIT_DISABLED, central_difference, pin_q, pinocchio_model, random_state,
                     robot_urdf, swap_halves)

pytestmark = pytest.mark.kernels

ROBOTS = ["panda", "tiago"] if JIT_DISABLED else ["panda", "ur5_robot", "talos_reduced", "tiago",
                                                   "kinova", "solo12", "z1"]
N_STATES = 1 if JIT_DISABLED else 3


class Robot:
    def __init__(self, name):
        path = robot_urdf(name)
        self.model = dc.load_urdf(path)
        self.data = self.model.create_data()
        self.pin_model = pinocchio_model(path)
        self.pin_data = self.pin_model.createData()
        rng = np.random.default_rng(sum(map(ord, name)))
        self.states = []
        for _ in range(N_STATES):
            q, v, a = random_state(self.model, rng)
            tau = 10.0 * rng.normal(size=self.model.nv)
            f_ext = rng.normal(size=(self.model.nbodies, 6))
            self.states.append((q, v, a, tau, f_ext))

    def pin_forces(self, f_ext):
        """Our body-frame forces [n; f] as Pinocchio's per-joint LOCAL forces [f; n]."""
        return [pin.Force.Zero()] + [pin.Force(swap_halves(f)) for f in f_ext]


@functools.lru_cache(maxsize=None)
def robot(name):
    return Robot(name)


def assert_close(ours, ref, what, rtol=1e-9):
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape} != {ref.shape}"
    scale = max(1.0, float(np.abs(ref).max()))
    error = float(np.abs(ours - ref).max())
    assert error <= rtol * scale, f"{what}: max error {error:.3e} (scale {scale:.3e})"


def symmetric_from_upper(A):
    return np.triu(A) + np.triu(A, 1).T


# ----------------------------------------------------------------------------------------------
# rnea_derivatives


@pytest.mark.parametrize("with_forces", [False, True], ids=["no_fext", "fext"])
@pytest.mark.parametrize("name", ROBOTS)
def test_rnea_derivatives_match_pinocchio(name, with_forces):
    r = robot(name)
    for q, v, a, _, f_ext in r.states:
        args = (r.pin_model, r.pin_data, pin_q(r.pin_model, q), v, a)
        if with_forces:
            dq, dv, M = dc.rnea_derivatives(r.model, r.data, q, v, a, f_ext)
            pin.computeRNEADerivatives(*args, r.pin_forces(f_ext))
        else:
            dq, dv, M = dc.rnea_derivatives(r.model, r.data, q, v, a)
            pin.computeRNEADerivatives(*args)
        assert_close(dq, r.pin_data.dtau_dq, "dtau_dq")
        assert_close(dv, r.pin_data.dtau_dv, "dtau_dv")
        assert_close(M, symmetric_from_upper(r.pin_data.M), "M")


@pytest.mark.parametrize("name", ROBOTS[:4])
def test_rnea_derivatives_match_central_differences(name):
    r = robot(name)
    model, data = r.model, r.data
    q, v, a, _, f_ext = r.states[0]

    def tau(q_, v_, a_):
        return dc.rnea(model, data, q_, v_, a_, f_ext).copy()

    dq, dv, M = (x.copy() for x in dc.rnea_derivatives(model, data, q, v, a, f_ext))
    assert_close(dq, central_difference(lambda x: tau(x, v, a), q), "dtau_dq", 1e-7)
    assert_close(dv, central_difference(lambda x: tau(q, x, a), v), "dtau_dv", 1e-7)
    assert_close(M, central_difference(lambda x: tau(q, v, x), a), "dtau_da", 1e-7)


@pytest.mark.parametrize("name", ROBOTS[:4])
def test_rnea_derivatives_identities(name):
    r = robot(name)
    model, data = r.model, r.data
    q, v, a, _, _ = r.states[0]
    _, _, M = dc.rnea_derivatives(model, data, q, v, a)
    assert_close(M.copy(), dc.crba(model, data, q).copy(), "d tau / d a = M (crba)")
    # at v = a = 0 only gravity is left: dtau_dq = dg/dq, dtau_dv = 0
    zero = np.zeros(model.nv)
    dq, dv, _ = dc.rnea_derivatives(model, data, q, zero, zero)
    dg_dq = pin.computeGeneralizedGravityDerivatives(r.pin_model, r.pin_data, pin_q(r.pin_model, q))
    assert_close(dq, dg_dq, "gravity derivatives")
    assert np.abs(dv).max() == 0.0


def test_rnea_derivatives_with_mimic_coupling():
    model = dc.load_urdf(robot_urdf("panda"), mimic=True)
    assert model.coupling is not None
    data = model.create_data()
    q, v, a = random_state(model, np.random.default_rng(5))

    def tau(q_, v_):
        return dc.rnea(model, data, q_, v_, a).copy()

    dq, dv, M = (x.copy() for x in dc.rnea_derivatives(model, data, q, v, a))
    assert dq.shape == (model.nv, model.nv)
    assert_close(dq, central_difference(lambda x: tau(x, v), q), "coupled dtau_dq", 1e-7)
    assert_close(dv, central_difference(lambda x: tau(q, x), v), "coupled dtau_dv", 1e-7)
    assert_close(M, dc.crba(model, data, q), "coupled M")


def test_rnea_derivatives_bad_input():
    r = robot("panda")
    model, data = r.model, r.data
    q, v, a, _, f_ext = r.states[0]
    with pytest.raises(ValueError, match=r"\bv\b.*shape"):
        dc.rnea_derivatives(model, data, q, v[:3], a)
    with pytest.raises(ValueError, match=r"f_ext.*shape"):
        dc.rnea_derivatives(model, data, q, v, a, f_ext[:, :3])
    bad = q.copy()
    bad[0] = np.inf
    with pytest.raises(ValueError, match=r"non-finite.*\bq at indices \[0\]"):
        dc.rnea_derivatives(model, data, bad, v, a)
    bad_f = f_ext.copy()
    bad_f[1, 1] = np.nan
    with pytest.raises(ValueError, match="f_ext.*non-finite"):
        dc.rnea_derivatives(model, data, q, v, a, bad_f)
    with pytest.raises(ValueError, match="model"):
        dc.rnea_derivatives("panda", data, q, v, a)
    with pytest.raises(ValueError, match="data"):
        dc.rnea_derivatives(model, robot("tiago").data, q, v, a)


# ----------------------------------------------------------------------------------------------
# minverse, aba_derivatives


@pytest.mark.parametrize("name", ROBOTS)
def test_minverse_matches_pinocchio(name):
    r = robot(name)
    for q, *_ in r.states:
        Minv = dc.minverse(r.model, r.data, q)
        pin.computeMinverse(r.pin_model, r.pin_data, pin_q(r.pin_model, q))
        assert_close(Minv, symmetric_from_upper(r.pin_data.Minv), "Minv")
        # and it is the inverse of our own crba
        M = dc.crba(r.model, r.data, q)
        assert_close(Minv @ M, np.eye(r.model.nv), "Minv M", 1e-8)


@pytest.mark.parametrize("with_forces", [False, True], ids=["no_fext", "fext"])
@pytest.mark.parametrize("name", ROBOTS)
def test_aba_derivatives_match_pinocchio(name, with_forces):
    r = robot(name)
    for q, v, _, tau, f_ext in r.states:
        args = (r.pin_model, r.pin_data, pin_q(r.pin_model, q), v, tau)
        if with_forces:
            da_dq, da_dv, Minv = dc.aba_derivatives(r.model, r.data, q, v, tau, f_ext)
            pin.computeABADerivatives(*args, r.pin_forces(f_ext))
        else:
            da_dq, da_dv, Minv = dc.aba_derivatives(r.model, r.data, q, v, tau)
            pin.computeABADerivatives(*args)
        assert_close(da_dq, r.pin_data.ddq_dq, "ddq_dq")
        assert_close(da_dv, r.pin_data.ddq_dv, "ddq_dv")
        assert_close(Minv, symmetric_from_upper(r.pin_data.Minv), "Minv")
        assert_close(r.data.ddq, r.pin_data.ddq, "ddq")


@pytest.mark.parametrize("name", ROBOTS[:4])
def test_aba_derivatives_match_central_differences(name):
    r = robot(name)
    model, data = r.model, r.data
    q, v, _, tau, f_ext = r.states[0]

    def acc(q_, v_, tau_):
        return dc.aba(model, data, q_, v_, tau_, f_ext).copy()

    # M(q) of these robots is ill-conditioned (light fingers, |a| up to 1e4 or more): the round-off
    # of aba itself over the step dominates at the usual 1e-6. Larger steps: 1e-5 in q, and 1e-3 in
    # v and tau, in which a is quadratic and linear (central differences are exact there)
    da_dq, da_dv, Minv = (x.copy() for x in dc.aba_derivatives(model, data, q, v, tau, f_ext))
    assert_close(da_dq, central_difference(lambda x: acc(x, v, tau), q, 1e-5), "ddq_dq", 1e-7)
    assert_close(da_dv, central_difference(lambda x: acc(q, x, tau), v, 1e-3), "ddq_dv", 1e-7)
    assert_close(Minv, central_difference(lambda x: acc(q, v, x), tau, 1e-3), "ddq_dtau", 1e-7)


def test_aba_derivatives_and_minverse_with_mimic_coupling():
    model = dc.load_urdf(robot_urdf("panda"), mimic=True)
    data = model.create_data()
    q, v, _ = random_state(model, np.random.default_rng(6))
    tau = np.random.default_rng(7).normal(size=model.nv)

    def acc(q_, v_):
        return dc.aba(model, data, q_, v_, tau).copy()

    da_dq, da_dv, Minv = (x.copy() for x in dc.aba_derivatives(model, data, q, v, tau))
    assert_close(da_dq, central_difference(lambda x: acc(x, v), q, 1e-5), "coupled ddq_dq", 1e-7)
    assert_close(da_dv, central_difference(lambda x: acc(q, x), v, 1e-3), "coupled ddq_dv", 1e-7)
    assert_close(Minv, np.linalg.inv(dc.crba(model, data, q)), "coupled Minv")
    assert_close(dc.minverse(model, data, q), Minv, "coupled minverse")


def test_minverse_and_aba_derivatives_bad_input():
    r = robot("panda")
    model, data = r.model, r.data
    q, v, _, tau, _ = r.states[0]
    with pytest.raises(ValueError, match=r"\bq\b.*shape"):
        dc.minverse(model, data, q[:2])
    bad = q.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match=r"non-finite.*\bq at indices \[3\]"):
        dc.minverse(model, data, bad)
    with pytest.raises(ValueError, match=r"\btau\b.*shape"):
        dc.aba_derivatives(model, data, q, v, tau[:-1])
    bad_tau = tau.copy()
    bad_tau[1] = -np.inf
    with pytest.raises(ValueError, match=r"non-finite.*\btau at indices \[1\]"):
        dc.aba_derivatives(model, data, q, v, bad_tau)


def test_singular_mass_matrix_names_the_joint():
    # a massless leaf: the joint carries no inertia about its axis, M(q) is singular
    model = robot("ur5_robot").model
    phi = model.phi.copy()
    phi[-1] = 0.0
    massless = model.with_inertial_parameters(phi)
    data = massless.create_data()
    q = np.zeros(model.nv)
    for call in (lambda: dc.minverse(massless, data, q),
                 lambda: dc.aba_derivatives(massless, data, q, q, q)):
        with pytest.raises(ValueError, match=f"singular.*{model.joint_names[-1]}"):
            call()


# ----------------------------------------------------------------------------------------------
# batches: every row as the single call gives it (and Pinocchio for tau)


def batch_states(model, T, seed):
    rng = np.random.default_rng(seed)
    return (np.array(x) for x in zip(*(random_state(model, rng) for _ in range(T))))


@pytest.mark.parametrize("name, mimic", [("panda", False), ("tiago", False), ("panda", True)])
def test_batches_equal_single_calls(name, mimic):
    model = dc.load_urdf(robot_urdf(name), mimic=mimic)
    data = model.create_data()
    T = 5 if JIT_DISABLED else 37  # more than one chunk of samples
    Q, V, A = batch_states(model, T, 1)
    tau = dc.rnea_batch(model, Q, V, A)
    dq, dv, M = dc.rnea_derivatives_batch(model, Q, V, A)
    Y = dc.regressor_batch(model, Q, V, A)
    assert tau.shape == (T, model.nv) and dq.shape == dv.shape == M.shape == (T, model.nv, model.nv)
    assert Y.shape == (T, model.nv, 10 * model.nbodies)
    for t in range(T):
        assert_close(tau[t], dc.rnea(model, data, Q[t], V[t], A[t]), "rnea_batch", 1e-14)
        for batch, single in zip((dq[t], dv[t], M[t]), dc.rnea_derivatives(model, data, Q[t], V[t], A[t])):
            assert_close(batch, single, "rnea_derivatives_batch", 1e-14)
        assert_close(Y[t], dc.regressor(model, data, Q[t], V[t], A[t]), "regressor_batch", 1e-14)


def test_rnea_batch_matches_pinocchio():
    r = robot("tiago")
    Q, V, A = batch_states(r.model, 4, 2)
    tau = dc.rnea_batch(r.model, Q, V, A)
    for t in range(4):
        assert_close(tau[t], pin.rnea(r.pin_model, r.pin_data, pin_q(r.pin_model, Q[t]), V[t], A[t]),
                     "rnea_batch vs Pinocchio")


def test_batches_bad_input():
    model = robot("panda").model
    Q, V, A = batch_states(model, 6, 3)
    for batch in (dc.rnea_batch, dc.rnea_derivatives_batch, dc.regressor_batch):
        with pytest.raises(ValueError, match=rf"\bv must have shape \(6, {model.nv}\)"):
            batch(model, Q, V[:4], A)
        with pytest.raises(ValueError, match=rf"\bq must have shape \(T, {model.nv}\)"):
            batch(model, Q[0], V, A)
        with pytest.raises(ValueError, match=r"\ba\b.*real"):
            batch(model, Q, V, None)
        bad = A.copy()
        bad[4, 1] = np.nan
        with pytest.raises(ValueError, match=r"non-finite.*in a at samples \[4\]"):
            batch(model, Q, V, bad)
        with pytest.raises(ValueError, match="model"):
            batch(None, Q, V, A)
    # no samples: empty results
    assert dc.rnea_batch(model, Q[:0], V[:0], A[:0]).shape == (0, model.nv)
