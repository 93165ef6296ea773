"""rnea, aba, crba (and friends) per call, side by side with Pinocchio from Python, on panda
(7-DoF arm + 2 fingers) and talos_reduced (32-DoF tree); first-call compile times with an empty
and a warm Numba cache."""
import os
import subprocess
import sys
import tempfile

import numpy as np

import dyn_control as dc
from common import Case, Row, pin_q

ROBOTS = ("panda", "talos_reduced")


def _cases(model, data, pm, pd, q, v, a):
    import pinocchio as pin
    qp = pin_q(pm, q)
    tau = dc.rnea(model, data, q, v, a).copy()
    frame = model.frame_names[-1]
    fid = pm.getFrameId(frame)
    return [
        ("rnea", lambda: dc.rnea(model, data, q, v, a), lambda: pin.rnea(pm, pd, qp, v, a)),
        ("aba", lambda: dc.aba(model, data, q, v, tau), lambda: pin.aba(pm, pd, qp, v, tau)),
        ("crba", lambda: dc.crba(model, data, q), lambda: pin.crba(pm, pd, qp)),
        ("nonlinear_effects", lambda: dc.nonlinear_effects(model, data, q, v),
         lambda: pin.nonLinearEffects(pm, pd, qp, v)),
        ("gravity", lambda: dc.gravity(model, data, q), lambda: pin.computeGeneralizedGravity(pm, pd, qp)),
        ("coriolis_matrix", lambda: dc.coriolis_matrix(model, data, q, v),
         lambda: pin.computeCoriolisMatrix(pm, pd, qp, v)),
        ("jacobian (world)", lambda: dc.jacobian(model, data, q, frame),
         lambda: pin.computeFrameJacobian(pm, pd, qp, fid, pin.WORLD)),
        ("forward_kinematics", lambda: dc.forward_kinematics(model, data, q),
         lambda: pin.framesForwardKinematics(pm, pd, qp)),
    ]


def _compile_time(cache_dir):
    """Seconds from import to the first rnea/aba/crba results in a fresh interpreter."""
    code = ("import time; t = time.perf_counter(); import numpy as np, dyn_control as dc; "
            "m = dc.load_urdf(dc.bundled_urdf('arm7')); d = m.create_data(); z = np.zeros(m.nv); "
            "dc.rnea(m, d, z, z, z); dc.aba(m, d, z, z, z); dc.crba(m, d, z); "
            "print(time.perf_counter() - t)")
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def run():
    rows = []
    rng = np.random.default_rng(0)
    for name in ROBOTS:
        c = Case(name, rng)
        model, data, pm, pd, q, v, a = c.model, c.data, c.pm, c.pd, c.q, c.v, c.a
        for case, ours, ref in _cases(model, data, pm, pd, q, v, a):
            rows.append(Row.versus(f"{case} {name} (nv={model.nv})", name, ours, ref))
    with tempfile.TemporaryDirectory() as empty_cache:
        cold = _compile_time(empty_cache)
        warm = _compile_time(empty_cache)
    rows.append(Row.value("import to first rnea+aba+crba, empty cache", cold, "s (compile)"))
    rows.append(Row.value("import to first rnea+aba+crba, warm cache", warm, "s (cache load)"))
    return rows
