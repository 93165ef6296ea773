"""Joint-twist derivatives d tau / d eta and Model.with_twist_perturbation.

Oracles: central differences of dc.rnea on model.with_twist_perturbation(+-eps e_k), and, for
with_twist_perturbation itself, Pinocchio's rnea on the same perturbation written into the URDF
text (joint origin M exp(eta), the child link's inertial origin and its child joints' origins
premultiplied by exp(-eta)), built independently of our exp/Ad with scipy's matrix exponential.
"""
import functools
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
from scipy.linalg import expm
from scipy.spatial.transform import Rotation

import dyn_control as dc
from oracles import JIT_DISABLED, central_difference, pin_q, random_state, robot_urdf

pytestmark = pytest.mark.kernels

ROBOTS = ["panda", "arm7"] if JIT_DISABLED else ["panda", "ur5_robot", "talos_reduced", "tiago", "arm7"]
N_STATES = 1 if JIT_DISABLED else 2


def urdf_path(name):
    return dc.bundled_urdf(name) if name == "arm7" else robot_urdf(name)


@functools.lru_cache(maxsize=None)
def robot(name):
    model = dc.load_urdf(urdf_path(name))
    rng = np.random.default_rng(sum(map(ord, name)))
    states = [random_state(model, rng) for _ in range(N_STATES)]
    f_ext = rng.normal(size=(model.nbodies, 6))
    return model, states, f_ext


def finite_difference(model, q, v, a, f_ext=None):
    """d tau / d eta by central differences of rnea on perturbed models, (nv, 6 nbodies)."""
    data = model.create_data()

    def tau(eta):
        return dc.rnea(model.with_twist_perturbation(eta), data, q, v, a, f_ext).copy()

    return central_difference(tau, np.zeros(6 * model.nbodies))


def assert_relative(ours, ref, rtol=1e-6):
    scale = max(1.0, float(np.abs(ref).max()))
    err = float(np.abs(ours - ref).max())
    assert err <= rtol * scale, f"max error {err:.3e} (scale {scale:.3e})"


@pytest.mark.parametrize("name", ROBOTS)
def test_matches_central_differences(name):
    model, states, _ = robot(name)
    data = model.create_data()
    for q, v, a in states:
        ours = dc.twist_derivatives(model, data, q, v, a)
        assert ours.shape == (model.nv, 6 * model.nv)
        assert_relative(ours, finite_difference(model, q, v, a))


@pytest.mark.parametrize("name", ROBOTS)
def test_matches_central_differences_with_external_forces(name):
    model, states, f_ext = robot(name)
    data = model.create_data()
    q, v, a = states[0]
    assert_relative(dc.twist_derivatives(model, data, q, v, a, f_ext),
                    finite_difference(model, q, v, a, f_ext))


@pytest.mark.parametrize("name", ROBOTS)
def test_rotation_about_the_joint_axis_changes_nothing(name):
    """eta_i = [axis; 0] leaves Ad_{exp(eta_i)} S_i = S_i (revolute and prismatic alike); for a
    revolute joint through the origin, eta_i = S_i as well. The other directions matter."""
    model, states, _ = robot(name)
    data = model.create_data()
    q, v, a = states[0]
    dtau = dc.twist_derivatives(model, data, q, v, a).copy()
    for i in range(model.nbodies):
        S = model.screw_axes[i]
        axis = S[:3] if np.any(S[:3]) else S[3:]
        block = dtau[:, 6 * i:6 * i + 6]
        scale = max(1.0, float(np.abs(block).max()))
        assert np.abs(block[:, :3] @ axis).max() <= 1e-12 * scale, model.joint_names[i]
        if np.any(S[:3]):
            assert np.abs(block @ S).max() <= 1e-12 * scale, model.joint_names[i]
    # not vacuous: a tilt of each joint changes the torques
    assert np.all(np.abs(dtau).reshape(model.nv, model.nv, 6).max(axis=(0, 2)) > 1e-6)


def test_mimic_coupling():
    model = dc.load_urdf(robot_urdf("panda"), mimic=True)
    assert model.nv < model.nbodies
    data = model.create_data()
    q, v, a = random_state(model, np.random.default_rng(3))
    ours = dc.twist_derivatives(model, data, q, v, a)
    assert ours.shape == (model.nv, 6 * model.nbodies)
    assert_relative(ours, finite_difference(model, q, v, a))


def test_bad_inputs_name_the_argument():
    model, states, _ = robot("panda")
    data = model.create_data()
    q, v, a = states[0]
    with pytest.raises(ValueError, match="v"):
        dc.twist_derivatives(model, data, q, v[:-1], a)
    bad = a.copy()
    bad[2] = np.nan
    with pytest.raises(ValueError, match=r"a at indices \[2\]"):
        dc.twist_derivatives(model, data, q, v, bad)
    with pytest.raises(ValueError, match="f_ext"):
        dc.twist_derivatives(model, data, q, v, a, np.zeros((3, 6)))
    with pytest.raises(ValueError, match="eta"):
        model.with_twist_perturbation(np.zeros((model.nbodies, 5)))
    with pytest.raises(ValueError, match="non-finite"):
        model.with_twist_perturbation(np.full(6 * model.nbodies, np.inf))


# ----------------------------------------------------------------------------------------------
# with_twist_perturbation against the same perturbation written into the URDF


def homogeneous(eta):
    """exp([eta]) as a 4x4 matrix by scipy's expm (eta = [w; v])."""
    X = np.zeros((4, 4))
    w, u = eta[:3], eta[3:]
    X[:3, :3] = [[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]
    X[:3, 3] = u
    return expm(X)


def read_origin(element):
    T = np.eye(4)
    origin = element.find("origin")
    if origin is not None:
        xyz = [float(x) for x in origin.get("xyz", "0 0 0").split()]
        rpy = [float(x) for x in origin.get("rpy", "0 0 0").split()]
        T[:3, :3] = Rotation.from_euler("xyz", rpy).as_matrix()   # URDF: Rz(y) Ry(p) Rx(r)
        T[:3, 3] = xyz
    return T


def write_origin(element, T):
    origin = element.find("origin")
    if origin is None:
        origin = ET.SubElement(element, "origin")
    origin.set("xyz", " ".join(repr(float(x)) for x in T[:3, 3]))
    origin.set("rpy", " ".join(repr(float(x)) for x in Rotation.from_matrix(T[:3, :3]).as_euler("xyz")))


def perturbed_urdf(path, joint_name, eta):
    """The URDF with joint `joint_name` moved to M exp(eta) and everything attached to its child
    link (inertial origin, child joint origins) premultiplied by exp(-eta)."""
    root = ET.parse(path).getroot()
    E = homogeneous(eta)
    joint = next(j for j in root.findall("joint") if j.get("name") == joint_name)
    write_origin(joint, read_origin(joint) @ E)
    child = joint.find("child").get("link")
    link = next(lk for lk in root.findall("link") if lk.get("name") == child)
    inertial = link.find("inertial")
    if inertial is not None:
        write_origin(inertial, np.linalg.inv(E) @ read_origin(inertial))
    for j in root.findall("joint"):
        if j.find("parent").get("link") == child:
            write_origin(j, np.linalg.inv(E) @ read_origin(j))
    return ET.tostring(root, encoding="unicode")


@pytest.mark.parametrize("name, joint", [("panda", "panda_joint4"), ("panda", "panda_joint7"),
                                         ("ur5_robot", "shoulder_lift_joint")])
def test_perturbed_model_is_the_perturbed_urdf(name, joint):
    path = urdf_path(name)
    model, states, _ = robot(name)
    i = model.joint_index(joint)
    eta = np.zeros((model.nbodies, 6))
    eta[i] = [0.2, -0.3, 0.1, 0.05, 0.02, -0.04]
    ours = model.with_twist_perturbation(eta)
    pm = pin.buildModelFromXML(perturbed_urdf(path, joint, eta[i]))
    pd = pm.createData()
    data = ours.create_data()
    for q, v, a in states:
        ref = pin.rnea(pm, pd, pin_q(pm, q), v, a)
        assert_relative(dc.rnea(ours, data, q, v, a), ref, rtol=1e-10)
        # and the perturbation is not invisible
        assert np.abs(dc.rnea(model, data, q, v, a) - ref).max() > 1e-3
    assert np.array_equal(ours.home_R, model.home_R) and np.array_equal(ours.phi, model.phi)
