"""Floating-base models (root_joint "free_flyer") per call, side by side with Pinocchio's
JointModelFreeFlyer from Python, on solo12 (quadruped, nv 18) and talos_full_v2 (humanoid, nv 50):
the dynamics, kinematics and derivatives, contacts of the feet, and batches of SAMPLES samples in
compiled loops on every core against a Python loop over Pinocchio (us per sample, best of REPEATS)."""
import time

import numpy as np

import dyn_control as dc
from common import Row, pinocchio_cases, robot_urdf

ROBOTS = ("solo12", "talos_full_v2")
FEET = {"solo12": [("FL_FOOT", "point"), ("FR_FOOT", "point"), ("HL_FOOT", "point"), ("HR_FOOT", "point")],
        "talos_full_v2": [("left_sole_link", "frame"), ("right_sole_link", "frame")]}
SAMPLES = 2000
REPEATS = 5
PINOCCHIO_ORDER = np.r_[3, 4, 5, 0, 1, 2]   # ours (angular first) from Pinocchio's free-flyer velocity


def _cases(name, model, data, pm, pd, q, v, a, tau):
    import pinocchio as pin
    back = np.argsort(np.r_[PINOCCHIO_ORDER, np.arange(6, model.nv)])
    vp, ap, taup = v[back], a[back], tau[back]

    def momentum_rate():
        pin.computeCentroidalMomentumTimeVariation(pm, pd, q, vp, ap)

    return pinocchio_cases(model, data, pm, pd, q, v, a, tau, lambda x: x[back]) + [
        ("nonlinear_effects", lambda: dc.nonlinear_effects(model, data, q, v),
         lambda: pin.nonLinearEffects(pm, pd, q, vp)),
        ("gravity", lambda: dc.gravity(model, data, q), lambda: pin.computeGeneralizedGravity(pm, pd, q)),
        ("minverse", lambda: dc.minverse(model, data, q), lambda: pin.computeMinverse(pm, pd, q)),
        ("center_of_mass", lambda: dc.center_of_mass(model, data, q), lambda: pin.centerOfMass(pm, pd, q)),
        ("centroidal_momentum_matrix", lambda: dc.centroidal_momentum_matrix(model, data, q),
         lambda: pin.ccrba(pm, pd, q, vp)),
        ("centroidal_momentum_time_variation",
         lambda: dc.centroidal_momentum_time_variation(model, data, q, v, a), momentum_rate),
    ] + _contact_cases(name, model, data, pm, pd, q, v, tau, vp, taup)


def _contact_cases(name, model, data, pm, pd, q, v, tau, vp, taup):
    """constrained_dynamics (and its derivatives) with the robot's feet held, world-aligned."""
    import pinocchio as pin
    contacts = [dc.Contact(frame, kind, "local_world_aligned") for frame, kind in FEET[name]]
    models = pin.StdVec_RigidConstraintModel()
    for c in contacts:
        frame = pm.frames[pm.getFrameId(c.frame)]
        kind = pin.ContactType.CONTACT_3D if c.kind == "point" else pin.ContactType.CONTACT_6D
        models.append(pin.RigidConstraintModel(kind, pm, frame.parentJoint, frame.placement, 0, pin.SE3.Identity(),
                                               pin.ReferenceFrame.LOCAL_WORLD_ALIGNED))
    datas = pin.StdVec_RigidConstraintData()
    for cm in models:
        datas.append(cm.createData())
    pin.initConstraintDynamics(pm, pd, models, datas)

    def pin_derivatives():
        pin.constraintDynamics(pm, pd, q, vp, taup, models, datas)
        pin.computeConstraintDynamicsDerivatives(pm, pd, models, datas)

    return [
        ("constrained_dynamics", lambda: dc.constrained_dynamics(model, data, q, v, tau, contacts),
         lambda: pin.constraintDynamics(pm, pd, q, vp, taup, models, datas)),
        ("constrained_dynamics_derivatives",
         lambda: dc.constrained_dynamics_derivatives(model, data, q, v, tau, contacts), pin_derivatives),
    ]


def _best_us(function):
    best = np.inf
    for _ in range(REPEATS):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best / SAMPLES * 1e6


def _batch_rows(model, pm, pd, rng, robot):
    """rnea_batch and regressor_batch per sample against a Python loop over Pinocchio."""
    import pinocchio as pin
    Q = np.stack([dc.random_configuration(model, rng) for _ in range(SAMPLES)])
    V, A = rng.normal(size=(2, SAMPLES, model.nv))
    back = np.argsort(np.r_[PINOCCHIO_ORDER, np.arange(6, model.nv)])
    Vp, Ap = V[:, back], A[:, back]
    rows = []
    for case, ours, ref in (
            ("rnea_batch", lambda: dc.rnea_batch(model, Q, V, A),
             lambda: [pin.rnea(pm, pd, Q[t], Vp[t], Ap[t]) for t in range(SAMPLES)]),
            ("regressor_batch", lambda: dc.regressor_batch(model, Q, V, A),
             lambda: [pin.computeJointTorqueRegressor(pm, pd, Q[t], Vp[t], Ap[t]) for t in range(SAMPLES)])):
        ours()
        ours_us, ref_us = _best_us(ours), _best_us(ref)
        rows.append(Row(f"{case} {robot}, us/sample", ours_us, ref_us, ref_name="pinocchio loop",
                        note=f"({SAMPLES} samples, every core)"))
    return rows


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
        for case, ours, ref in _cases(name, model, data, pm, pd, q, v, a, tau):
            rows.append(Row.versus(f"{case} {robot} (nv={model.nv})", robot, ours, ref))
        rows += _batch_rows(model, pm, pd, rng, robot)
    return rows
