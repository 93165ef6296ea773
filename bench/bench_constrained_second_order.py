"""Second-order derivatives of the constrained (KKT) and impulse dynamics per call, against
what a user does today with Pinocchio: central differences of its first order
(constraintDynamics + computeConstraintDynamicsDerivatives at q +- h e_k and v +- h e_k: 4 nv calls,
which give all eight tensors, d2/dtau dq included; impulseDynamics + computeImpulseDynamicsDerivatives
at q +- h e_k: 2 nv calls, the v- columns being linear). The goal: a ratio <= 0.1.
panda: one 3D point contact on the hand; talos_reduced: both feet, 6D frame contacts (LOCAL).
The rows are reported under "<robot>/second-order" so that run.py's per-robot means of the first-order
functions stay apart."""
import numpy as np

import dyn_control as dc
from bench_contact import ROBOTS, _pinocchio_constraints
from common import Case, Row, pin_q

RESTITUTION = 0.0
STEP = 1e-6


def run():
    import pinocchio as pin
    rows = []
    rng = np.random.default_rng(0)
    for name, frames in ROBOTS.items():
        c = Case(name, rng)
        model, data, pm, pd, q, v = c.model, c.data, c.pm, c.pd, c.q, c.v
        nv = model.nv
        tau = 5.0 * rng.normal(size=nv)
        contacts = [dc.Contact(frame, kind) for frame, kind in frames]
        models, datas = _pinocchio_constraints(pm, pd, contacts)
        qp = pin_q(pm, q)
        steps = [STEP * e for e in np.eye(nv)]

        def pin_first(q_, v_):
            pin.constraintDynamics(pm, pd, q_, v_, tau, models, datas)
            pin.computeConstraintDynamicsDerivatives(pm, pd, models, datas)
            return pd.ddq_dq.copy(), pd.ddq_dv.copy(), pd.ddq_dtau.copy()

        def pin_central_differences():
            out = np.empty((3, nv, nv, 2 * nv))
            for k, dq in enumerate(steps):
                plus = pin_first(pin.integrate(pm, qp, dq), v)
                minus = pin_first(pin.integrate(pm, qp, -dq), v)
                out[:, :, :, k] = (np.array(plus) - np.array(minus)) / (2 * STEP)
                plus = pin_first(qp, v + dq)
                minus = pin_first(qp, v - dq)
                out[:, :, :, nv + k] = (np.array(plus) - np.array(minus)) / (2 * STEP)
            return out

        def pin_impulse_first(q_):
            pin.impulseDynamics(pm, pd, q_, v, models, datas, RESTITUTION)
            pin.computeImpulseDynamicsDerivatives(pm, pd, models, datas, RESTITUTION)
            return pd.ddq_dq.copy(), pd.ddq_dv.copy()

        def pin_impulse_central_differences():
            out = np.empty((2, nv, nv, nv))
            for k, dq in enumerate(steps):
                plus = pin_impulse_first(pin.integrate(pm, qp, dq))
                minus = pin_impulse_first(pin.integrate(pm, qp, -dq))
                out[:, :, :, k] = (np.array(plus) - np.array(minus)) / (2 * STEP)
            return out

        cases = [
            ("constrained_dynamics_second_derivatives",
             lambda: dc.constrained_dynamics_second_derivatives(model, data, q, v, tau, contacts),
             pin_central_differences),
            ("impulse_dynamics_second_derivatives",
             lambda: dc.impulse_dynamics_second_derivatives(model, data, q, v, contacts, RESTITUTION),
             pin_impulse_central_differences),
        ]
        for case, ours, ref in cases:
            rows.append(Row.versus(f"{case} {name} (nv={nv})", f"{name}/second-order", ours, ref,
                                   note=f"({len(contacts)} {frames[0][1]}; ref: central differences of "
                                        f"Pinocchio's first order)"))
    return rows
