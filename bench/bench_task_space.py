"""Task-space quantities per call (Cartesian impedance), side by side with Pinocchio from Python, on
panda (hand, nv = 9) and talos_reduced (left gripper on a 32-DoF tree): the frame Jacobian's time variation
and the operational-space inertia, through the public API and as the bare kernels a compiled tick
calls (no Python checks: the cost inside the tick, plus one call's overhead)."""
import numpy as np

import dyn_control as dc
from common import Case, Row, per_call_us, pin_q
from dyn_control.kernels import crba as crba_kernels
from dyn_control.kernels import kinematics as kin
from dyn_control.kernels import task_space as ts

FRAMES = {"panda": "panda_hand", "talos_reduced": "gripper_left_base_link"}


def _kernel_calls(model, data, q, v, frame):
    """(time variation, crba + Jacobian + Lambda) as the tick would call them, on their own buffers."""
    nb, nv = model.nbodies, model.nv
    f = model.frame_id(frame)
    body, frame_R, frame_p = model._frame_body[f], model._frame_R[f], model._frame_p[f]
    path = np.zeros(nb, dtype=np.int64)
    oV = np.zeros((nb, 6))
    J, dJ, velocity, drift = np.zeros((6, nb)), np.zeros((6, nb)), np.zeros(6), np.zeros(6)
    M, L, J_Minv, A, Lambda, J_bar = (np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros((6, nv)), np.zeros((6, 6)),
                                      np.zeros((6, 6)), np.zeros((nv, 6)))
    m = model

    def time_variation():
        ts.frame_jacobian_time_variation(m._parents, m._screw_axes, m._home_R, m._home_p, q, v, path, data._R,
                                         data._p, data._oR, data._op, oV, body, frame_R, frame_p,
                                         ts.LOCAL_WORLD_ALIGNED, J, dJ, velocity, drift)

    def inertia():
        crba_kernels.crba(m._parents, m._screw_axes, m._home_R, m._home_p, m._phi, q, data._R, data._p, data._oR,
                          data._op, data._oS, data._phi_composite, data._F, M)
        kin.frame_jacobian(m._parents, m._screw_axes, m._home_R, m._home_p, q, path, data._R, data._p, data._oR,
                           data._op, body, frame_R, frame_p, kin.LOCAL_WORLD_ALIGNED, J)
        ts.operational_space_inertia(M, J, 0.0, L, J_Minv, A, Lambda, J_bar)

    return time_variation, inertia


def run():
    import pinocchio as pin
    rows = []
    rng = np.random.default_rng(0)
    for name, frame in FRAMES.items():
        c = Case(name, rng)
        model, data, pm, pd, q, v = c.model, c.data, c.pm, c.pd, c.q, c.v
        qp = pin_q(pm, q)
        fid = pm.getFrameId(frame)
        lwa = pin.LOCAL_WORLD_ALIGNED

        def pin_time_variation():
            pin.computeJointJacobiansTimeVariation(pm, pd, qp, v)
            pin.updateFramePlacement(pm, pd, fid)
            return pin.getFrameJacobianTimeVariation(pm, pd, fid, lwa)

        def pin_inertia():
            Minv = pin.computeMinverse(pm, pd, qp)
            Minv = np.triu(Minv) + np.triu(Minv, 1).T
            J = pin.computeFrameJacobian(pm, pd, qp, fid, lwa)
            return np.linalg.inv(J @ Minv @ J.T)

        kernel_time_variation, kernel_inertia = _kernel_calls(model, data, q, v, frame)
        label = name
        t_pin = per_call_us(pin_time_variation)
        rows.append(Row(f"frame dJ/dt (lwa) {label}",
                        per_call_us(lambda: dc.frame_jacobian_time_variation(model, data, q, v, frame)), t_pin))
        rows.append(Row(f"  its kernel (tick) {label}", per_call_us(kernel_time_variation), t_pin))
        t_pin = per_call_us(pin_inertia)
        rows.append(Row(f"operational_space_inertia {label}",
                        per_call_us(lambda: dc.operational_space_inertia(model, data, q, frame)), t_pin,
                        note="(computeMinverse + J + numpy inv)"))
        rows.append(Row(f"  crba+J+Lambda kernels {label}", per_call_us(kernel_inertia), t_pin))
    return rows
