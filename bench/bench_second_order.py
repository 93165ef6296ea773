"""rnea_second_derivatives per call on panda (7-DoF arm + 2 fingers) and talos_reduced (32-DoF
tree), against the four tensors from central differences of Pinocchio's first-order derivatives
driven from Python (2 nv calls of computeRNEADerivatives perturbing q, 2 nv perturbing v); also
aba_second_derivatives, without a reference (Pinocchio 4.1 has no second-order derivatives in
Python). For context, the published C++ IDSVA-SO takes about 200 us for the second-order inverse
dynamics derivatives of the 36-DoF ATLAS humanoid and about 2.1 ms for forward dynamics (Singh,
Russell, Wensing, arXiv:2302.06001)."""
import numpy as np

import dyn_control as dc
from common import Case, Row, per_call_us, pin_q

ROBOTS = ("panda", "talos_reduced")
EPS = 1e-6


def pinocchio_central_differences(pm, pd, q, v, a):
    """(d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq) from central differences of Pinocchio's
    computeRNEADerivatives, 4 nv calls."""
    import pinocchio as pin
    n = pm.nv
    d2q, d2v, d2qv, dM = (np.empty((n, n, n)) for _ in range(4))
    for k in range(n):
        step = np.zeros(n)
        step[k] = EPS
        pin.computeRNEADerivatives(pm, pd, pin_q(pm, q + step), v, a)
        dq_plus, dv_plus, M_plus = pd.dtau_dq.copy(), pd.dtau_dv.copy(), pd.M.copy()
        pin.computeRNEADerivatives(pm, pd, pin_q(pm, q - step), v, a)
        d2q[:, :, k] = (dq_plus - pd.dtau_dq) / (2 * EPS)
        dM[:, :, k] = (M_plus - pd.M) / (2 * EPS)
        # d2 tau / dv_j dq_k = d2 tau / dq_k dv_j
        d2qv[:, k, :] = (dv_plus - pd.dtau_dv) / (2 * EPS)
        pin.computeRNEADerivatives(pm, pd, pin_q(pm, q), v + step, a)
        dv_plus = pd.dtau_dv.copy()
        pin.computeRNEADerivatives(pm, pd, pin_q(pm, q), v - step, a)
        d2v[:, :, k] = (dv_plus - pd.dtau_dv) / (2 * EPS)
    return d2q, d2v, d2qv, dM


def run():
    rows = []
    rng = np.random.default_rng(0)
    for name in ROBOTS:
        c = Case(name, rng)
        model, data, pm, pd, q, v, a, tau = c.model, c.data, c.pm, c.pd, c.q, c.v, c.a, c.tau
        ours = per_call_us(lambda: dc.rnea_second_derivatives(model, data, q, v, a))
        ref = per_call_us(lambda: pinocchio_central_differences(pm, pd, q, v, a), repeat=3)
        rows.append(Row(f"rnea_second_derivatives {name} (nv={model.nv})", ours, ref,
                        ref_name="pinocchio central differences",
                        note=f"({ref / ours:.0f}x faster); IDSVA-SO C++: ~200 us, 36-DoF ATLAS"))
        rows.append(Row(f"aba_second_derivatives {name}",
                        per_call_us(lambda: dc.aba_second_derivatives(model, data, q, v, tau)),
                        note="IDSVA-SO C++: ~2.1 ms, 36-DoF ATLAS"))
    return rows
