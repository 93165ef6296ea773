"""The controller's compiled tick and its pieces, per call, against the number of joints.

Standalone (no ROS): a ControllerTick on the bundled arm7 (7 DoF), talos_reduced (fixed base, 32) and
tiago (48, example-robot-data), window 200 (the controller's default), filled with random samples;
then each piece of a tick called in a loop on the tick's own buffers (the median of batches): the
whole tick on a new sample with the gradients on (and with the gradient requested), and the
pieces it is made of. Ratios between pieces and robots are what to read: the machine is shared.

Run alone: .venv/bin/python bench/run.py tick   (or python bench/bench_tick.py)
"""
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from common import Row, robot_urdf  # noqa: E402

WINDOW = 200
ROBOTS = (("arm7", None), ("talos_reduced", "talos_reduced"), ("tiago", "tiago"))


def median_us(fn, calls=2000, batches=10):
    """Median over `batches` of the mean time of fn() over calls / batches calls, in microseconds."""
    fn()
    per_batch = max(1, calls // batches)
    times = []
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(per_batch):
            fn()
        times.append((time.perf_counter() - start) / per_batch)
    return float(np.median(times)) * 1e6


def filled_tick(model, rng):
    """A ControllerTick with the gradients and the twist gradient on, its window full of random
    samples (WINDOW + 7 ticks, so it has wrapped)."""
    from dyn_control.control import tick as T
    tick = T.ControllerTick(model, np.arange(model.nv), model.frame_names[-1], WINDOW)
    tick.warm_up()
    s, f = tick.s, tick.f
    f.kp[:], f.kd[:], f.observer_gain[:] = 100.0, 20.0, 50.0
    s[T.S_ESTIMATE] = s[T.S_GRADIENTS] = s[T.S_TWIST] = 1.0
    s[T.S_DT] = 1e-3
    s[T.S_RESET] = 1.0
    tick.tick()
    s[T.S_RESET] = 0.0
    for _ in range(WINDOW + 7):
        f.q[:] = rng.uniform(-1, 1, model.nv)
        f.v[:] = rng.normal(size=model.nv)
        s[T.S_NEW_SAMPLE] = 1.0
        tick.tick()
    return tick


def pieces(tick):
    """{name: a no-argument call of one piece on the tick's buffers}."""
    from dyn_control.control import parameter_gradient as G
    from dyn_control.control import tick as T
    from dyn_control.kernels.coriolis import coriolis_matrix
    from dyn_control.kernels.crba import crba
    from dyn_control.kernels.regressor import regressor
    from dyn_control.kernels.rnea import rnea
    from dyn_control.kernels.twist_derivatives import twist_derivatives
    f, i, s = tick.f, tick.i, tick.s
    args = (f.flat, f.offsets, i.flat, i.offsets)
    npar = 10 * tick.nb
    tau_ring = f.samples[:, 3]
    par = (i.parents, f.screw_axes, f.home_R, f.home_p)
    a = f.acceleration
    slot = int(s[T.S_NEXT])

    def whole(want, twist=1.0):
        def call():
            s[T.S_NEW_SAMPLE] = 1.0
            s[T.S_WANT_GRADIENT] = want
            s[T.S_TWIST] = twist
            tick.tick()
            s[T.S_TWIST] = 1.0
        return call

    def window():
        G.window_push(f.Y_ring, tau_ring, i.columns, i.row_starts, slot, WINDOW, f.phi.reshape(npar), f.phi_window, f.in_sum,
                      f.sum_YYphi, f.sum_Yt)
        G.window_pushed(f.Y_ring, tau_ring, i.columns, i.row_starts, slot, WINDOW - 1, f.phi_window, f.in_sum, f.sum_YYphi,
                        f.sum_Yt)

    def rebuild():
        f.phi_window[0] += 1.0
        G.window_gradient(f.Y_ring, i.columns, i.row_starts, slot, WINDOW, f.phi.reshape(npar), f.phi_window, f.in_sum,
                          f.sum_YYphi, f.sum_Yt, f.gradient)

    def momentum():
        T._momentum_terms(*args, f.scratch[3], f.scratch[2])

    calls = {
        "tick (new sample, gradients on)": whole(0.0),
        "tick + gradient requested": whole(1.0),
        "tick without the twist gradient": whole(0.0, twist=0.0),
        "rnea": lambda: rnea(*par, f.phi, f.q, f.v, a, f.base_accel, f.f_ext_zero, f.R, f.p, f.V, f.Vdot, f.F,
                             f.tmp6, f.g),
        "observer terms (coriolis, crba, C^T v, M v)": momentum,
        "coriolis_matrix": lambda: coriolis_matrix(*par, f.phi, f.q, f.v, f.R, f.p, f.oR, f.op, f.oS, f.oV, f.oPsi,
                                                   f.oIc, f.oBc, f.phi_world, f.tmp6, f.C),
        "crba": lambda: crba(*par, f.phi, f.q, f.R, f.p, f.oR, f.op, f.oS, f.phi_composite, f.F, f.M),
        "regressor": lambda: regressor(*par, f.q, f.v, a, f.base_accel, f.R, f.p, f.oR, f.op, f.oS, f.V, f.Vdot,
                                       f.tmp6, f.Y),
        "twist_derivatives": lambda: twist_derivatives(*par, f.phi, f.q, f.v, a, f.base_accel, f.f_ext_zero, f.R,
                                                       f.p, f.oR, f.op, f.ophi_c, f.vectors, f.eta_columns,
                                                       f.eta_pose, f.tmp6, f.dtau_deta),
        "regressor packed into the ring (pack_rows)": lambda: G.pack_rows(f.Y, i.columns, i.row_starts,
                                                                          f.Y_ring[slot]),
        "window in and out (window_push, window_pushed)": window,
        "window_gradient": lambda: G.window_gradient(f.Y_ring, i.columns, i.row_starts, slot, WINDOW, f.phi.reshape(npar),
                                                     f.phi_window, f.in_sum, f.sum_YYphi, f.sum_Yt, f.gradient),
        "window_gradient after phi changed (rebuild)": rebuild,
    }
    return calls


def run():
    import dyn_control as dc
    rng = np.random.default_rng(0)
    rows, totals = [], []
    for label, name in ROBOTS:
        model = dc.load_urdf(robot_urdf(name)) if name else dc.load_urdf(dc.bundled_urdf("arm7"))
        tick = filled_tick(model, rng)
        for piece, call in pieces(tick).items():
            t = median_us(call)
            rows.append(Row(f"{label} ({model.nv} DoF): {piece}", t, note="(per call, median)"))
            if piece.startswith("tick (new sample"):
                totals.append((model.nv, t))
    (n0, t0) = totals[0]
    for n, t in totals[1:]:
        rows.append(Row(f"tick growth {n0} -> {n} DoF (ratio, not us)", t / t0,
                        note=f"joints x{n / n0:.1f}; linear: x{n / n0:.1f}, cubic: x{(n / n0) ** 3:.0f}"))
    return rows


if __name__ == "__main__":
    for row in run():
        print(row.format(), flush=True)
