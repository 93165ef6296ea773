"""Multi-DoF joints (dyn_control/multi_dof.py) per call, side by side with Pinocchio from Python: panda on
a planar base (a mobile manipulator: a URDF planar joint from a world link, nv 12), both read from the
same XML (Pinocchio's JointModelPlanar orders its velocity [v_x, v_y, w_z], ours [w_z; v_x; v_y])."""
import numpy as np

import dyn_control as dc
from common import Row, robot_urdf

PLANAR_ORDER = np.r_[2, 0, 1]   # ours from Pinocchio's planar velocity


def mobile_panda_xml():
    """panda's URDF with a world link and a planar joint from it to panda_link0."""
    xml = open(robot_urdf("panda")).read()
    first = xml.index("<link ")
    return (xml[:first] + '<link name="world"/><joint name="base" type="planar"><parent link="world"/>'
            '<child link="panda_link0"/></joint>' + xml[first:])


def run():
    import pinocchio as pin
    xml = mobile_panda_xml()
    model = dc.load_urdf(xml)
    data = model.create_data()
    pm = pin.buildModelFromXML(xml)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    v, a, tau = rng.normal(size=(3, model.nv))
    back = np.argsort(np.r_[PLANAR_ORDER, np.arange(3, model.nv)])
    vp, ap, taup = v[back], a[back], tau[back]
    frame = model.frame_names[-1]
    fid = pm.getFrameId(frame)
    robot = "panda (planar base)"
    cases = [
        ("rnea", lambda: dc.rnea(model, data, q, v, a), lambda: pin.rnea(pm, pd, q, vp, ap)),
        ("aba", lambda: dc.aba(model, data, q, v, tau), lambda: pin.aba(pm, pd, q, vp, taup)),
        ("crba", lambda: dc.crba(model, data, q), lambda: pin.crba(pm, pd, q)),
        ("jacobian (world)", lambda: dc.jacobian(model, data, q, frame),
         lambda: pin.computeFrameJacobian(pm, pd, q, fid, pin.WORLD)),
        ("forward_kinematics", lambda: dc.forward_kinematics(model, data, q),
         lambda: pin.framesForwardKinematics(pm, pd, q)),
        ("rnea_derivatives", lambda: dc.rnea_derivatives(model, data, q, v, a),
         lambda: pin.computeRNEADerivatives(pm, pd, q, vp, ap)),
        ("aba_derivatives", lambda: dc.aba_derivatives(model, data, q, v, tau),
         lambda: pin.computeABADerivatives(pm, pd, q, vp, taup)),
        ("integrate", lambda: dc.integrate(model, q, v), lambda: pin.integrate(pm, q, vp)),
    ]
    return [Row.versus(f"{case} {robot} (nv={model.nv})", robot, ours, ref) for case, ours, ref in cases]
