"""Floating-base models (root_joint "free_flyer") per call, side by side with Pinocchio's
JointModelFreeFlyer from Python, on solo12 (quadruped, nv 18) and talos_full_v2 (humanoid, nv 50)."""
import numpy as np

import dyn_control as dc
from common import Row, robot_urdf

ROBOTS = ("solo12", "talos_full_v2")
PINOCCHIO_ORDER = np.r_[3, 4, 5, 0, 1, 2]   # ours (angular first) from Pinocchio's free-flyer velocity


def _cases(model, data, pm, pd, q, v, a, tau):
    import pinocchio as pin
    back = np.argsort(np.r_[PINOCCHIO_ORDER, np.arange(6, model.nv)])
    vp, ap, taup = v[back], a[back], tau[back]
    frame = model.frame_names[-1]
    fid = pm.getFrameId(frame)
    return [
        ("rnea", lambda: dc.rnea(model, data, q, v, a), lambda: pin.rnea(pm, pd, q, vp, ap)),
        ("aba", lambda: dc.aba(model, data, q, v, tau), lambda: pin.aba(pm, pd, q, vp, taup)),
        ("crba", lambda: dc.crba(model, data, q), lambda: pin.crba(pm, pd, q)),
        ("nonlinear_effects", lambda: dc.nonlinear_effects(model, data, q, v),
         lambda: pin.nonLinearEffects(pm, pd, q, vp)),
        ("gravity", lambda: dc.gravity(model, data, q), lambda: pin.computeGeneralizedGravity(pm, pd, q)),
        ("jacobian (world)", lambda: dc.jacobian(model, data, q, frame),
         lambda: pin.computeFrameJacobian(pm, pd, q, fid, pin.WORLD)),
        ("forward_kinematics", lambda: dc.forward_kinematics(model, data, q),
         lambda: pin.framesForwardKinematics(pm, pd, q)),
        ("rnea_derivatives", lambda: dc.rnea_derivatives(model, data, q, v, a),
         lambda: pin.computeRNEADerivatives(pm, pd, q, vp, ap)),
        ("aba_derivatives", lambda: dc.aba_derivatives(model, data, q, v, tau),
         lambda: pin.computeABADerivatives(pm, pd, q, vp, taup)),
        ("minverse", lambda: dc.minverse(model, data, q), lambda: pin.computeMinverse(pm, pd, q)),
        ("center_of_mass", lambda: dc.center_of_mass(model, data, q), lambda: pin.centerOfMass(pm, pd, q)),
        ("centroidal_momentum_matrix", lambda: dc.centroidal_momentum_matrix(model, data, q),
         lambda: pin.ccrba(pm, pd, q, vp)),
        ("integrate", lambda: dc.integrate(model, q, v), lambda: pin.integrate(pm, q, vp)),
    ]


def run():
    import pinocchio as pin
    rows = []
    rng = np.random.default_rng(0)
    for name in ROBOTS:
        path = robot_urdf(name)
        model = dc.load_urdf(path, root_joint="free_flyer")
        data = model.create_data()
        pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
        pd = pm.createData()
        q = dc.random_configuration(model, rng)
        v, a, tau = rng.normal(size=(3, model.nv))
        robot = f"{name} (free flyer)"
        for case, ours, ref in _cases(model, data, pm, pd, q, v, a, tau):
            rows.append(Row.versus(f"{case} {robot} (nv={model.nv})", robot, ours, ref))
    return rows
