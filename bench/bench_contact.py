"""Contacts per call, side by side with Pinocchio from Python: constrained (KKT) dynamics, impulse
dynamics and their derivatives, on panda (one 3D point contact on the hand) and talos_reduced (both
feet held, 6D frame contacts). Pinocchio: constraintDynamics, impulseDynamics and their derivatives
with the same constraints (initConstraintDynamics once)."""
import numpy as np

import dyn_control as dc
from common import Case, Row, pin_q

ROBOTS = {"panda": [("panda_hand", "point")],
          "talos_reduced": [("left_sole_link", "frame"), ("right_sole_link", "frame")]}
RESTITUTION = 0.0


def _pinocchio_constraints(pm, pd, contacts):
    import pinocchio as pin
    models = pin.StdVec_RigidConstraintModel()
    for c in contacts:
        kind = pin.ContactType.CONTACT_3D if c.kind == "point" else pin.ContactType.CONTACT_6D
        frame = pm.frames[pm.getFrameId(c.frame)]
        models.append(pin.RigidConstraintModel(kind, pm, frame.parentJoint, frame.placement, 0, pin.SE3.Identity(),
                                               pin.ReferenceFrame.LOCAL))
    datas = pin.StdVec_RigidConstraintData()
    for cm in models:
        datas.append(cm.createData())
    pin.initConstraintDynamics(pm, pd, models, datas)
    return models, datas


def run():
    import pinocchio as pin
    rows = []
    rng = np.random.default_rng(0)
    for name, frames in ROBOTS.items():
        c = Case(name, rng)
        model, data, pm, pd, q, v = c.model, c.data, c.pm, c.pd, c.q, c.v
        tau = 5.0 * rng.normal(size=model.nv)
        contacts = [dc.Contact(frame, kind) for frame, kind in frames]
        models, datas = _pinocchio_constraints(pm, pd, contacts)
        qp = pin_q(pm, q)

        def pin_cd_derivatives():
            pin.constraintDynamics(pm, pd, qp, v, tau, models, datas)
            return pin.computeConstraintDynamicsDerivatives(pm, pd, models, datas)

        def pin_impulse_derivatives():
            pin.impulseDynamics(pm, pd, qp, v, models, datas, RESTITUTION)
            return pin.computeImpulseDynamicsDerivatives(pm, pd, models, datas, RESTITUTION)

        cases = [
            ("constrained_dynamics", lambda: dc.constrained_dynamics(model, data, q, v, tau, contacts),
             lambda: pin.constraintDynamics(pm, pd, qp, v, tau, models, datas)),
            ("constrained_dynamics_derivatives",
             lambda: dc.constrained_dynamics_derivatives(model, data, q, v, tau, contacts), pin_cd_derivatives),
            ("impulse_dynamics", lambda: dc.impulse_dynamics(model, data, q, v, contacts, RESTITUTION),
             lambda: pin.impulseDynamics(pm, pd, qp, v, models, datas, RESTITUTION)),
            ("impulse_dynamics_derivatives",
             lambda: dc.impulse_dynamics_derivatives(model, data, q, v, contacts, RESTITUTION),
             pin_impulse_derivatives),
        ]
        for case, ours, ref in cases:
            rows.append(Row.versus(f"{case} {name} (nv={model.nv})", name, ours, ref,
                                   note=f"({len(contacts)} {frames[0][1]})"))
    return rows
