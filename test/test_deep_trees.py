"""Issue 15, item 4: trees deeper than Python's recursion limit load (the walk is iterative).

A 1,000-joint chain and a 1,100-deep tree with branches and fixed joints agree with Pinocchio's
model, and rnea on the chain with Pinocchio's rnea (run on segments of the chain: Pinocchio's Data
for 1,000 joints would take tens of GB). At 10,000 joints Pinocchio's own loader overflows the C
stack, so there the oracle is the chain's definition written out in the test (Pinocchio's rpy
convention, the parallel-axis theorem).
"""
import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from oracles import pin_phi_to_ours, random_state

pytestmark = pytest.mark.kernels

MASS, COM, INERTIA = 0.5, np.array([0.01, 0.02, 0.05]), np.array([0.002, 0.003, 0.004])


def body(name, mass=MASS):
    return (f'<link name="{name}"><inertial><origin xyz="{COM[0]} {COM[1]} {COM[2]}"/><mass value="{mass}"/>'
            f'<inertia ixx="{INERTIA[0]}" iyy="{INERTIA[1]}" izz="{INERTIA[2]}" ixy="0" ixz="0" iyz="0"/>'
            "</inertial></link>")


def hinge(name, parent, child, xyz, rpy, axis, kind="revolute", extra=""):
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>'
            f'<axis xyz="{axis[0]} {axis[1]} {axis[2]}"/><limit lower="-3" upper="3" effort="5" velocity="2"/>'
            f"{extra}</joint>")


def random_chain(n, seed):
    """Origins (xyz, rpy) and axes (x, y or z) of n joints."""
    rng = np.random.default_rng(seed)
    return (np.round(rng.uniform(-0.05, 0.1, size=(n, 3)), 4), np.round(rng.uniform(-0.3, 0.3, size=(n, 3)), 4),
            np.eye(3)[rng.integers(0, 3, size=n)])


def chain_xml(xyz, rpy, axes, first=0, last=None, mimic=""):
    """Links l<first> (massless) -c<first+1>-> l<first+1> ... l<last>, joint c<i> placed by row i - 1.
    With `mimic` (attributes of <mimic>) each joint but c00001 mimics the one before."""
    last = len(xyz) if last is None else last
    parts = [f'<robot name="chain"><link name="l{first}"/>']
    for i in range(first + 1, last + 1):
        extra = f'<mimic joint="c{i - 1:05d}" {mimic}/>' if mimic and i > 1 else ""
        parts += [body(f"l{i}"),
                  hinge(f"c{i:05d}", f"l{i - 1}", f"l{i}", xyz[i - 1], rpy[i - 1], axes[i - 1], extra=extra)]
    return "".join(parts) + "</robot>"


def pinocchio_rnea_by_segments(xyz, rpy, axes, q, v, a, size=50):
    """Pinocchio's rnea of the chain and its tip's pose, computed on segments of `size` joints
    (Pinocchio's Data holds nv^3 tensors: tens of GB at 1,000 joints). A segment's root link, the
    previous segment's last link, is massless and free-floating, moved as that link moves; the
    wrench its free-flyer transmits loads that link, in its own frame."""
    segments, base = [], None  # base: (pose, velocity, acceleration) of the segment's root link
    for first in range(0, len(q), size):
        last = min(first + size, len(q))
        xml = chain_xml(xyz, rpy, axes, first, last)
        model = pin.buildModelFromXML(xml) if base is None else pin.buildModelFromXML(xml, pin.JointModelFreeFlyer())
        x = [q[first:last], v[first:last], a[first:last]]
        if base is not None:
            x = [np.concatenate([pin.SE3ToXYZQUAT(base[0]), x[0]]), np.concatenate([base[1].vector, x[1]]),
                 np.concatenate([base[2].vector, x[2]])]
        data = model.createData()
        pin.forwardKinematics(model, data, *x)
        base = (data.oMi[model.njoints - 1].copy(), data.v[model.njoints - 1].copy(), data.a[model.njoints - 1].copy())
        segments.append((first, model, data, x))
    tau, wrench = np.zeros(len(q)), np.zeros(6)
    for first, model, data, x in reversed(segments):
        f_ext = [pin.Force.Zero() for _ in range(model.njoints)]
        f_ext[-1] = pin.Force(-wrench)
        out = pin.rnea(model, data, *x, f_ext)
        if first > 0:
            wrench, out = out[:6].copy(), out[6:]
        tau[first:first + len(out)] = out
    return tau, base[0].homogeneous


def assert_close(ours, expected, what, tolerance=1e-9):
    scale = max(1.0, float(np.abs(expected).max()))
    error = float(np.abs(np.asarray(ours) - expected).max())
    assert error <= tolerance * scale, f"{what}: max error {error:.3e} (scale {scale:.3e})"


def assert_tree_matches_pinocchio(model, pin_model):
    """Joint order, parents, home poses and inertias (fixed links merged) against Pinocchio's model."""
    assert list(model.joint_names) == list(pin_model.names[1:])
    np.testing.assert_array_equal(model.parents, np.array(pin_model.parents[1:]) - 1)
    for i in range(model.nbodies):
        placement = pin_model.jointPlacements[i + 1]
        assert_close(model.home_R[i], placement.rotation, f"home rotation of {model.joint_names[i]}", 1e-14)
        assert_close(model.home_p[i], placement.translation, f"home position of {model.joint_names[i]}", 1e-14)
        phi = pin_phi_to_ours(pin_model.inertias[i + 1].toDynamicParameters())
        assert_close(model.phi[i], phi, f"inertia of {model.body_names[i]}", 1e-14)


def test_rnea_by_segments_is_pinocchios_rnea():
    """The oracle itself, on a chain short enough for Pinocchio's Data."""
    xyz, rpy, axes = random_chain(130, seed=6)
    pin_model = pin.buildModelFromXML(chain_xml(xyz, rpy, axes))
    q, v, a = np.random.default_rng(7).normal(size=(3, 130))
    tau, tip = pinocchio_rnea_by_segments(xyz, rpy, axes, q, v, a, size=50)
    pin_data = pin_model.createData()
    assert_close(tau, pin.rnea(pin_model, pin_data, q, v, a), "rnea", 1e-12)
    pin.forwardKinematics(pin_model, pin_data, q)
    assert_close(tip, pin_data.oMi[130].homogeneous, "tip pose", 1e-12)


def test_1000_joint_chain_agrees_with_pinocchio():
    xyz, rpy, axes = random_chain(1000, seed=0)
    model = dc.load_urdf(chain_xml(xyz, rpy, axes))
    assert model.nbodies == 1000 and model.warnings == ()
    assert_tree_matches_pinocchio(model, pin.buildModelFromXML(chain_xml(xyz, rpy, axes)))
    q, v, a = random_state(model, np.random.default_rng(1))
    data = model.create_data()
    expected_tau, expected_tip = pinocchio_rnea_by_segments(xyz, rpy, axes, q, v, a)
    assert_close(dc.rnea(model, data, q, v, a), expected_tau, "rnea")
    assert_close(dc.frame_pose(model, data, q, "l1000"), expected_tip, "pose of l1000")


def test_deep_tree_with_branches_and_fixed_joints_agrees_with_pinocchio():
    """A 1,100-deep chain; every 100th link carries a two-joint side branch, named to come before
    the chain's next joint, and a massive sensor fixed to it (merged into the body)."""
    xml = chain_xml(*random_chain(1100, seed=2))
    branches = []
    for i in range(100, 1101, 100):
        branches += [body(f"b{i}a"), body(f"b{i}b"), body(f"s{i}", mass=0.3),
                     hinge(f"b{i:05d}a", f"l{i}", f"b{i}a", (0.1, 0, 0), (0, 0.2, 0), (0, 0, 1)),
                     hinge(f"b{i:05d}b", f"b{i}a", f"b{i}b", (0.1, 0, 0), (0.1, 0, 0), (1, 0, 0), kind="prismatic"),
                     hinge(f"s{i:05d}", f"l{i}", f"s{i}", (0, 0.05, 0), (0, 0, 0.5), (1, 0, 0), kind="fixed")]
    xml = xml.replace("</robot>", "".join(branches) + "</robot>")
    model = dc.load_urdf(xml)
    assert model.nbodies == 1100 + 2 * 11 and model.warnings == ()
    assert model.joint_names.index("b00100a") == 100  # the branch before the chain's joint c00101
    assert_tree_matches_pinocchio(model, pin.buildModelFromXML(xml))


def test_10000_joint_chain_loads():
    n = 10_000
    xyz, rpy, axes = random_chain(n, seed=4)
    model = dc.load_urdf(chain_xml(xyz, rpy, axes))
    assert model.nbodies == n and model.warnings == ()
    assert model.joint_names == tuple(f"c{i + 1:05d}" for i in range(n))
    np.testing.assert_array_equal(model.parents, np.arange(n) - 1)
    np.testing.assert_array_equal(model.home_p, xyz)
    np.testing.assert_allclose(model.home_R, [pin.rpy.rpyToMatrix(*r) for r in rpy], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(model.screw_axes[:, :3], axes)
    I_origin = np.diag(INERTIA) + MASS * (COM @ COM * np.eye(3) - np.outer(COM, COM))  # parallel axis
    phi = [MASS, *(MASS * COM), I_origin[0, 0], I_origin[1, 1], I_origin[2, 2], I_origin[0, 1], I_origin[0, 2],
           I_origin[1, 2]]
    np.testing.assert_allclose(model.phi, np.tile(phi, (n, 1)), rtol=1e-15, atol=1e-18)


def test_long_chain_of_mimic_joints():
    """Joint k mimics joint k - 1 (multiplier 1, offset 0.001): q_k = q_0 + 0.001 k, one coordinate."""
    n = 1500
    xml = chain_xml(*random_chain(n, seed=5), mimic='offset="0.001"')
    model = dc.load_urdf(xml, mimic=True)
    assert model.nv == 1 and model.actuated_joints == ("c00001",)
    np.testing.assert_array_equal(model.coupling, np.ones((n, 1)))
    np.testing.assert_allclose(model.coupling_offset, 0.001 * np.arange(n), rtol=1e-12, atol=1e-15)
    cycle = xml.replace('<joint name="c00001" type="revolute">',
                        f'<joint name="c00001" type="revolute"><mimic joint="c{n:05d}"/>')
    with pytest.raises(dc.URDFError, match="mimic joints form a cycle"):
        dc.load_urdf(cycle, mimic=True)
