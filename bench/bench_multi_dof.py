"""Multi-DoF joints (dyn_control/multi_dof.py) per call, side by side with Pinocchio from Python: panda on
a planar base (a mobile manipulator: a URDF planar joint from a world link, nv 12), both read from the
same XML (Pinocchio's JointModelPlanar orders its velocity [v_x, v_y, w_z], ours [w_z; v_x; v_y])."""
import numpy as np

import dyn_control as dc
from common import Row, pinocchio_cases, robot_urdf

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
    robot = "panda (planar base)"
    cases = pinocchio_cases(model, data, pm, pd, q, v, a, tau, lambda x: x[back])
    return [Row.versus(f"{case} {robot} (nv={model.nv})", robot, ours, ref) for case, ours, ref in cases]
