"""Batches over 10,000 samples on every core against a Python loop over Pinocchio, on panda (7-DoF
arm + 2 fingers) and talos_reduced (32-DoF tree): rnea, aba and the regressor per sample, and the
regressor's normal equations (sum Y^T Y, sum Y^T tau) and the torque residual's gradient, computed in
the batch kernel, against the Pinocchio loop plus NumPy sums over chunks of stacked regressors.

Each line: our time and Pinocchio's in microseconds per sample (best of REPEATS, ours and the loop
interleaved; the reductions with IDLE s and an untimed call before each timed run), the ratio, then samples per second, the speed-up, the run's spread ((max - min) / min
over the repeats, ours / Pinocchio's) and the memory of our result. The regressor twice: into a new
array (its first touch of fresh memory included) and into one reused (`out=`).
"""
import time

import numba
import numpy as np

import dyn_control as dc
from common import Row, pin_q, pinocchio_model, robot_urdf

ROBOTS = ("panda", "talos_reduced")
SAMPLES = 10_000
REPEATS = 7
CHUNK = 256  # samples of Pinocchio regressors stacked per NumPy product in the reference sums
# [s] of idle machine before each timed run of the reductions: OpenBLAS's workers spin for ~0.1 s
# after their reference's NumPy products and took a core from the batch run after them (the normal
# equations on panda up to 2.5x slower; none with OPENBLAS_NUM_THREADS=1). Not for the other cases,
# whose references use no BLAS: a 1-2 ms batch run after an idle 0.3 s took 1.5x as long (rnea_batch
# panda 0.15 against 0.106 us/sample), the threads and the core waking up.
IDLE = 0.3
REDUCTIONS = ("regressor_normal_equations", "residual_gradient_batch")


def _pinocchio_cases(pm, pd, Qp, V, A, TAU, phi_pin):
    import pinocchio as pin
    n = len(Qp)

    def rnea():
        return [pin.rnea(pm, pd, Qp[t], V[t], A[t]).copy() for t in range(n)]

    def aba():
        return [pin.aba(pm, pd, Qp[t], V[t], TAU[t]).copy() for t in range(n)]

    def regressor():
        return [pin.computeJointTorqueRegressor(pm, pd, Qp[t], V[t], A[t]).copy() for t in range(n)]

    def stacked(t0, t1):
        return np.vstack([pin.computeJointTorqueRegressor(pm, pd, Qp[t], V[t], A[t]) for t in range(t0, t1)])

    def normal_equations():
        P = phi_pin.size
        YtY, Ytau = np.zeros((P, P)), np.zeros(P)
        for t0 in range(0, n, CHUNK):
            W = stacked(t0, min(n, t0 + CHUNK))
            YtY += W.T @ W
            Ytau += W.T @ TAU[t0:t0 + CHUNK].reshape(-1)
        return YtY, Ytau

    def residual_gradient():
        value, grad = 0.0, np.zeros(phi_pin.size)
        for t0 in range(0, n, CHUNK):
            W = stacked(t0, min(n, t0 + CHUNK))
            r = W @ phi_pin - TAU[t0:t0 + CHUNK].reshape(-1)
            value += 0.5 * r @ r
            grad += W.T @ r
        return value, grad

    return rnea, aba, regressor, normal_equations, residual_gradient


def _cases(model, pm, pd, Q, V, A, TAU):
    Qp = [pin_q(pm, q) for q in Q]
    phi = model.inertial_parameters()
    phi_pin = np.concatenate([pm.inertias[j].toDynamicParameters() for j in range(1, pm.njoints)])
    rnea, aba, regressor, normal_equations, residual_gradient = _pinocchio_cases(pm, pd, Qp, V, A, TAU, phi_pin)
    Y_out = np.empty((len(Q), model.nv, 10 * model.nbodies))
    return [
        ("rnea_batch", lambda: dc.rnea_batch(model, Q, V, A), rnea),
        ("aba_batch", lambda: dc.aba_batch(model, Q, V, TAU), aba),
        ("regressor_batch", lambda: dc.regressor_batch(model, Q, V, A), regressor),
        ("regressor_batch into a reused out", lambda: dc.regressor_batch(model, Q, V, A, out=Y_out), regressor),
        ("regressor_normal_equations", lambda: dc.regressor_normal_equations(model, Q, V, A, TAU, joint_terms=False),
         normal_equations),
        ("residual_gradient_batch",
         lambda: dc.residual_gradient_batch(model, Q, V, A, TAU, phi=phi, joint_terms=False), residual_gradient),
    ]


def _nbytes(result):
    if isinstance(result, tuple):
        return sum(_nbytes(x) for x in result)
    return np.asarray(result).nbytes


def _timed(fn, idle):
    """Seconds of one call of fn(), after `idle` seconds of sleep and, when there was one, an untimed
    call: the threads and the core that the idle let sleep wake up in it (the first run after 0.3 s
    idle took 1.1-1.3x as long as the next: the normal equations on panda 0.64-0.74 against 0.57 us/sample)."""
    if idle:
        time.sleep(idle)
        fn()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def _interleaved(ours, ref, idle, repeats=REPEATS):
    """Best and worst seconds of each over `repeats` alternating runs (after one warm-up of each;
    `idle` seconds before each timed run), and the bytes of our result."""
    ours()
    ref()
    mine, theirs = [], []
    nbytes = 0
    for _ in range(repeats):
        t, result = _timed(ours, idle)
        nbytes = _nbytes(result)
        del result
        mine.append(t)
        t, result = _timed(ref, idle)
        del result
        theirs.append(t)
    return min(mine), max(mine), min(theirs), max(theirs), nbytes


def run():
    rows = []
    rng = np.random.default_rng(0)
    threads = numba.config.NUMBA_NUM_THREADS
    for name in ROBOTS:
        path = robot_urdf(name)
        model = dc.load_urdf(path)
        pm = pinocchio_model(path)
        pd = pm.createData()
        nv = model.nv
        Q = rng.uniform(-1, 1, (SAMPLES, nv))
        V = rng.normal(size=(SAMPLES, nv))
        A = rng.normal(size=(SAMPLES, nv))
        TAU = dc.rnea_batch(model, Q, V, A) + rng.normal(size=(SAMPLES, nv))
        for case, ours, ref in _cases(model, pm, pd, Q, V, A, TAU):
            idle = IDLE if case in REDUCTIONS else 0.0
            best, worst, ref_best, ref_worst, nbytes = _interleaved(ours, ref, idle)
            us, ref_us = best / SAMPLES * 1e6, ref_best / SAMPLES * 1e6
            note = (f"({ref_best / best:.1f}x, {SAMPLES / best:,.0f} samples/s, spread {worst / best - 1:.0%} / "
                    f"{ref_worst / ref_best - 1:.0%}, result {nbytes / 1e6:.3g} MB, {threads} threads)")
            rows.append(Row(f"{case} {name}, us/sample", us, ref_us, ref_name="pinocchio loop", note=note))
    return rows
