"""First-order derivatives, M^-1 and the regressor per call, side by side with Pinocchio from
Python, on panda (7-DoF arm + 2 fingers) and talos_reduced (32-DoF tree); then batch throughput
over 10,000 samples (numba.prange over samples) against a Python loop of Pinocchio calls, in
microseconds per sample."""
import timeit

import numba
import numpy as np

import dyn_control as dc
from common import Case, Row, pin_q, pinocchio_model, robot_urdf

ROBOTS = ("panda", "talos_reduced")
SAMPLES = 10_000


def _per_call_cases(model, data, pm, pd, q, v, a, tau):
    import pinocchio as pin
    qp = pin_q(pm, q)
    return [
        ("rnea_derivatives", lambda: dc.rnea_derivatives(model, data, q, v, a),
         lambda: pin.computeRNEADerivatives(pm, pd, qp, v, a)),
        ("aba_derivatives", lambda: dc.aba_derivatives(model, data, q, v, tau),
         lambda: pin.computeABADerivatives(pm, pd, qp, v, tau)),
        ("minverse", lambda: dc.minverse(model, data, q), lambda: pin.computeMinverse(pm, pd, qp)),
        ("regressor", lambda: dc.regressor(model, data, q, v, a),
         lambda: pin.computeJointTorqueRegressor(pm, pd, qp, v, a)),
    ]


def _batch_cases(model, pm, pd, Q, V, A):
    """(name, ours over all samples, Pinocchio's Python loop over all samples, keeping results)."""
    import pinocchio as pin
    Qp = [pin_q(pm, q) for q in Q]
    n = len(Qp)

    def pin_rnea():
        return [pin.rnea(pm, pd, Qp[t], V[t], A[t]).copy() for t in range(n)]

    def pin_rnea_derivatives():
        return [tuple(x.copy() for x in pin.computeRNEADerivatives(pm, pd, Qp[t], V[t], A[t]))
                for t in range(n)]

    def pin_regressor():
        return [pin.computeJointTorqueRegressor(pm, pd, Qp[t], V[t], A[t]).copy() for t in range(n)]

    return [
        ("rnea_batch", lambda: dc.rnea_batch(model, Q, V, A), pin_rnea),
        ("rnea_derivatives_batch", lambda: dc.rnea_derivatives_batch(model, Q, V, A), pin_rnea_derivatives),
        ("regressor_batch", lambda: dc.regressor_batch(model, Q, V, A), pin_regressor),
    ]


def _best_us_per_sample(fn, samples, repeat=3):
    fn()
    return min(timeit.repeat(fn, number=1, repeat=repeat)) / samples * 1e6


def run():
    rows = []
    rng = np.random.default_rng(0)
    for name in ROBOTS:
        c = Case(name, rng)
        model, data, pm, pd, q, v, a, tau = c.model, c.data, c.pm, c.pd, c.q, c.v, c.a, c.tau
        for case, ours, ref in _per_call_cases(model, data, pm, pd, q, v, a, tau):
            rows.append(Row.versus(f"{case} {name} (nv={model.nv})", name, ours, ref))
    threads = numba.get_num_threads()
    for name in ROBOTS:
        path = robot_urdf(name)
        model = dc.load_urdf(path)
        pm = pinocchio_model(path)
        pd = pm.createData()
        Q = rng.uniform(-1, 1, (SAMPLES, model.nv))
        V = rng.normal(size=(SAMPLES, model.nv))
        A = rng.normal(size=(SAMPLES, model.nv))
        for case, ours, ref in _batch_cases(model, pm, pd, Q, V, A):
            ours_us = _best_us_per_sample(ours, SAMPLES)
            ref_us = _best_us_per_sample(ref, SAMPLES)
            rows.append(Row(f"{case} {name}, us/sample", ours_us, ref_us, ref_name="pinocchio loop",
                            note=f"({ref_us / ours_us:.1f}x, {SAMPLES} samples, {threads} threads)"))
    return rows
