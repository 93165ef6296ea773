"""Acceptance: second-order derivatives of inverse and forward dynamics against central differences
of Pinocchio's first-order derivatives (computeRNEADerivatives, computeABADerivatives; dM/dq from
its M) on example-robot-data URDFs, with body-frame external forces, and the Hessian symmetries.

Tolerance 1e-5 relative to max(1, |reference|): a central difference of exact first-order
derivatives with step 1e-6 is good to about 1e-9 of the scale.
"""
import functools

import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from oracles import JIT_DISABLED, central_difference, pin_q, random_state, robot_urdf, swap_halves

pytestmark = pytest.mark.kernels

TOLERANCE = 1e-5
EPS = 1e-6
# a serial arm with a branching gripper, a plain serial arm, two branching trees (tiago has
# continuous joints)
ROBOTS = ("panda", "talos_reduced") if JIT_DISABLED else ("panda", "ur5_robot", "talos_reduced", "tiago")
NAMES = ("d2_dq2", "d2_dv2", "d2_dqdv", "dM_dq")


def assert_close(ours, reference, what, tolerance=TOLERANCE):
    ours, reference = np.asarray(ours), np.asarray(reference)
    assert ours.shape == reference.shape, f"{what}: shape {ours.shape} != {reference.shape}"
    scale = max(1.0, float(np.abs(reference).max(initial=0.0)))
    error = float(np.abs(ours - reference).max(initial=0.0))
    assert error <= tolerance * scale, f"{what}: max error {error:.3e} (reference scale {scale:.3e})"


def differences(first_order, q, v, n):
    """The four tensors [i, j, k] from central differences of first_order(q, v) -> (d/dq, d/dv, M):
    d/dq of d/dq, d/dv of d/dv, d/dv_k of d/dq and d/dq of M."""
    d2q, d2v, d2qv, dM = (np.zeros((n, n, n)) for _ in range(4))
    for k in range(n):
        step = np.zeros(n)
        step[k] = EPS
        plus, minus = first_order(q + step, v), first_order(q - step, v)
        d2q[:, :, k] = (plus[0] - minus[0]) / (2 * EPS)
        dM[:, :, k] = (plus[2] - minus[2]) / (2 * EPS)
        plus, minus = first_order(q, v + step), first_order(q, v - step)
        d2v[:, :, k] = (plus[1] - minus[1]) / (2 * EPS)
        d2qv[:, :, k] = (plus[0] - minus[0]) / (2 * EPS)
    return d2q, d2v, d2qv, dM


class Robot:
    def __init__(self, name):
        path = robot_urdf(name)
        self.model = dc.load_urdf(path)
        self.data = self.model.create_data()
        self.pin_model = pin.buildModelFromUrdf(path)
        self.pin_data = self.pin_model.createData()
        rng = np.random.default_rng(sum(map(ord, name)))
        self.q, self.v, self.a = random_state(self.model, rng)
        self.tau = 10.0 * rng.normal(size=self.model.nv)
        self.f_ext = rng.normal(size=(self.model.nbodies, 6))
        self.pin_f_ext = [pin.Force.Zero()] + [pin.Force(swap_halves(f)) for f in self.f_ext]

    def pin_rnea_derivatives(self, q, v):
        pm, pd = self.pin_model, self.pin_data
        pin.computeRNEADerivatives(pm, pd, pin_q(pm, q), v, self.a, self.pin_f_ext)
        M = np.triu(pd.M) + np.triu(pd.M, 1).T
        return pd.dtau_dq.copy(), pd.dtau_dv.copy(), M

    def pin_aba_derivatives(self, q, v):
        pm, pd = self.pin_model, self.pin_data
        pin.computeABADerivatives(pm, pd, pin_q(pm, q), v, self.tau, self.pin_f_ext)
        Minv = np.triu(pd.Minv) + np.triu(pd.Minv, 1).T
        return pd.ddq_dq.copy(), pd.ddq_dv.copy(), Minv


@functools.lru_cache(maxsize=None)
def robot(name):
    return Robot(name)


@pytest.mark.parametrize("name", ROBOTS)
def test_rnea_second_derivatives_against_pinocchio(name):
    r = robot(name)
    ours = [x.copy() for x in dc.rnea_second_derivatives(r.model, r.data, r.q, r.v, r.a, r.f_ext)]
    reference = differences(r.pin_rnea_derivatives, r.q, r.v, r.model.nv)
    for what, x, ref in zip(NAMES, ours, reference):
        assert_close(x, ref, f"{name} {what}")


@pytest.mark.parametrize("name", ROBOTS)
def test_aba_second_derivatives_against_pinocchio(name):
    r = robot(name)
    ours = [x.copy() for x in dc.aba_second_derivatives(r.model, r.data, r.q, r.v, r.tau, r.f_ext)]
    reference = differences(r.pin_aba_derivatives, r.q, r.v, r.model.nv)
    for what, x, ref in zip(("d2ddq_dq2", "d2ddq_dv2", "d2ddq_dqdv", "dMinv_dq"), ours, reference):
        assert_close(x, ref, f"{name} {what}")


@pytest.mark.parametrize("name", ROBOTS[:2])
def test_hessian_symmetries_and_identities(name):
    r = robot(name)
    model, data = r.model, r.data
    d2q, d2v, d2qv, dM = (x.copy() for x in dc.rnea_second_derivatives(model, data, r.q, r.v, r.a))
    assert np.abs(d2q - d2q.transpose(0, 2, 1)).max() <= 1e-12 * np.abs(d2q).max()
    assert np.abs(d2v - d2v.transpose(0, 2, 1)).max() <= 1e-12 * np.abs(d2v).max()
    assert np.abs(dM - dM.transpose(1, 0, 2)).max() <= 1e-12 * np.abs(dM).max()
    # tau is quadratic in v: d2tau/dv2 depends on neither v nor a
    other_v = 3.0 * r.v[::-1].copy()
    d2v_again = dc.rnea_second_derivatives(model, data, r.q, other_v, 0.0 * r.a)[1]
    assert_close(d2v_again, d2v, f"{name} d2tau_dv2 at another v", 1e-12)
    # d2tau/dv2 = d/dv of dtau/dv with dtau/dv from Pinocchio (linear in v: exact differences)
    pm, pd = r.pin_model, r.pin_data

    def dtau_dv(v):
        pin.computeRNEADerivatives(pm, pd, pin_q(pm, r.q), v, r.a)
        return pd.dtau_dv.copy()
    assert_close(d2v, central_difference(dtau_dv, r.v, eps=1.0), f"{name} d2tau_dv2 exact", 1e-9)


def test_mimic_coupling_against_coupled_first_order_derivatives():
    """Coupled fingers (panda, mimic=True): every index goes through the coupling matrix."""
    model = dc.load_urdf(robot_urdf("panda"), mimic=True)
    assert model.coupling is not None and model.nv < model.nbodies
    data = model.create_data()
    q, v, a = random_state(model, np.random.default_rng(7))
    ours = [x.copy() for x in dc.rnea_second_derivatives(model, data, q, v, a)]

    def first_order(q_, v_):
        return [x.copy() for x in dc.rnea_derivatives(model, data, q_, v_, a)]
    for what, x, ref in zip(NAMES, ours, differences(first_order, q, v, model.nv)):
        assert_close(x, ref, f"coupled panda {what}")


def test_bad_input_is_named():
    r = robot("panda")
    model, data = r.model, r.data
    with pytest.raises(ValueError, match=r"\bv\b.*shape"):
        dc.rnea_second_derivatives(model, data, r.q, r.v[:3], r.a)
    with pytest.raises(ValueError, match=r"f_ext.*shape"):
        dc.rnea_second_derivatives(model, data, r.q, r.v, r.a, r.f_ext[:, :3])
    bad = r.q.copy()
    bad[2] = np.nan
    with pytest.raises(ValueError, match=r"non-finite.*\bq at indices \[2\]"):
        dc.rnea_second_derivatives(model, data, bad, r.v, r.a)
    with pytest.raises(ValueError, match=r"\btau\b.*shape"):
        dc.aba_second_derivatives(model, data, r.q, r.v, r.tau[:-1])
