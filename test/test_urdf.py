"""URDF -> Model: sources and encodings, real-world oddities, merged fixed joints, mesh URIs,
mimic joints (against Pinocchio), and the ValueErrors for bad URDFs and bad arguments."""
import os
import pathlib

import numpy as np
import pinocchio as pin
import pytest
from numba.core.errors import NumbaError

import dyn_control as dc
from oracles import central_difference, pin_q, random_state, robot_urdf, swap_halves

TOLERANCE = 1e-10


# ----------------------------------------------------------------------------------------------
# Small URDFs written for these tests


def link(name, mass=1.0, com="0.05 0.02 0.1", rpy="0.1 0.2 0.3", extra=""):
    return (f'<link name="{name}"><inertial><origin xyz="{com}" rpy="{rpy}"/><mass value="{mass}"/>'
            '<inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0.001" ixz="0.002" iyz="0.003"/>'
            f'</inertial>{extra}</link>')


def joint(name, kind, parent, child, axis="0 0 1", xyz="0.1 0 0.2", rpy="0.3 -0.2 0.1", extra=""):
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>'
            f'<limit lower="-2" upper="2" effort="10" velocity="1"/>{extra}</joint>')


def robot(*elements, name="test_robot"):
    name_attribute = f' name="{name}"' if name else ""
    return f"<robot{name_attribute}>" + "".join(elements) + "</robot>"


# base -j1-> l1 -j2-> l2 -fixed-> tool -fixed-> tip (tool and tip carry mass, merged into l2)
# l1 -j3 (prismatic)-> l3 (a branch); a massive link fixed to the base does not move.
FIXED_CHAIN = robot(
    link("base"), link("l1"), link("l2"), link("tool", mass=0.7, com="0 0.1 0.05"),
    link("tip", mass=0.3, com="0.02 0 0"), link("l3"), link("base_plate", mass=5.0),
    joint("j1", "revolute", "base", "l1"),
    joint("j2", "revolute", "l1", "l2", axis="0.6 0 0.8"),
    joint("tool_joint", "fixed", "l2", "tool", xyz="0 0 0.3", rpy="0.5 0.1 -0.4"),
    joint("tip_joint", "fixed", "tool", "tip", xyz="0.1 0.05 0", rpy="-0.2 0.7 0"),
    joint("j3", "prismatic", "l1", "l3", axis="1 0 0"),
    joint("plate_joint", "fixed", "base", "base_plate", xyz="0 0 -0.1"),
)


def assert_close(ours, expected, what=""):
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    error = float(np.abs(np.asarray(ours) - expected).max(initial=0.0))
    assert error <= TOLERANCE * scale, f"{what}: max error {error:.3e}"


def assert_matches_pinocchio(model, pin_model, n_states=2, seed=0):
    """Joint names, crba, rnea, FK of every frame, against a Pinocchio model of the same robot."""
    assert list(model.joint_names) == list(pin_model.names[1:])
    pin_data, data = pin_model.createData(), model.create_data()
    rng = np.random.default_rng(seed)
    for _ in range(n_states):
        q, v, a = random_state(model, rng)
        pq = pin_q(pin_model, q)
        upper = np.triu(pin.crba(pin_model, pin_data, pq))
        assert_close(dc.crba(model, data, q), upper + np.triu(upper, 1).T, "crba")
        assert_close(dc.rnea(model, data, q, v, a), pin.rnea(pin_model, pin_data, pq, v, a), "rnea")
        pin.framesForwardKinematics(pin_model, pin_data, pq)
        poses = dc.forward_kinematics(model, data, q)
        for name, pose in zip(model.frame_names, poses):
            assert_close(pose, pin_data.oMf[pin_model.getFrameId(name, pin.BODY)].homogeneous, name)


# ----------------------------------------------------------------------------------------------
# Sources and encodings


def test_load_from_path_str_and_pathlike():
    path = dc.bundled_urdf("arm7")
    pin_model = pin.buildModelFromUrdf(path)
    assert_matches_pinocchio(dc.load_urdf(path), pin_model)
    assert_matches_pinocchio(dc.load_urdf(pathlib.Path(path)), pin_model)


def test_load_from_xml_string():
    assert_matches_pinocchio(dc.load_urdf(FIXED_CHAIN), pin.buildModelFromXML(FIXED_CHAIN))


LATIN1_COMMENT = "<!-- Entwurf: J\u00fcrgen M\u00fcller, \u00e9quipe de Fran\u00e7ois, 20 \u00b0C -->"


def test_load_from_latin1_bytes_with_declaration():
    text = '<?xml version="1.0" encoding="ISO-8859-1"?>\n' + LATIN1_COMMENT + FIXED_CHAIN
    data = text.encode("latin-1")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")  # only the declaration makes these bytes readable
    assert_matches_pinocchio(dc.load_urdf(data), pin.buildModelFromXML(FIXED_CHAIN))


def test_load_from_str_with_encoding_declaration():
    text = '<?xml version="1.0" encoding="ISO-8859-1"?>\n' + LATIN1_COMMENT + FIXED_CHAIN
    assert_matches_pinocchio(dc.load_urdf(text), pin.buildModelFromXML(FIXED_CHAIN))
    utf8 = '<?xml version="1.0" encoding="UTF-8"?>\n' + LATIN1_COMMENT + FIXED_CHAIN
    assert_matches_pinocchio(dc.load_urdf(utf8.encode("utf-8")), pin.buildModelFromXML(FIXED_CHAIN))


def test_real_world_oddities_load():
    """Transmissions, Gazebo and ros2_control tags, textured materials, unknown attributes and
    elements, a xacro namespace and no robot name: the dynamics are those of the clean URDF."""
    odd = FIXED_CHAIN.replace('<robot name="test_robot">',
                              '<robot xmlns:xacro="http://www.ros.org/wiki/xacro" version="1.0">')
    odd = odd.replace('<link name="l1">', '<link name="l1" type="rigid" colour="red">')
    odd = odd.replace('<joint name="j1" type="revolute">', '<joint name="j1" type="revolute" hardware="x">')
    odd = odd.replace('<mass value="1.0"/>', '<mass value="1.0" unit="kg"/>', 1)
    extras = (
        '<material name="wood"><texture filename="package://nowhere/wood.png"/></material>'
        '<transmission name="t1"><type>transmission_interface/SimpleTransmission</type>'
        '<joint name="j1"><hardwareInterface>EffortJointInterface</hardwareInterface></joint>'
        '<actuator name="m1"><mechanicalReduction>50</mechanicalReduction></actuator></transmission>'
        '<gazebo reference="l1"><material>Gazebo/Orange</material><mu1>0.2</mu1></gazebo>'
        '<gazebo><plugin name="p" filename="libgazebo_ros_control.so"><robotNamespace>/</robotNamespace>'
        '</plugin></gazebo>'
        '<ros2_control name="hw" type="system"><hardware><plugin>mock_components/GenericSystem</plugin>'
        '</hardware><joint name="j1"><command_interface name="effort"/></joint></ros2_control>'
    )
    textured_visual = ('<visual><geometry><box size="0.1 0.1 0.1"/></geometry><material name="wood">'
                       '<texture filename="package://nowhere/wood.png"/></material></visual>'
                       '<sensor name="imu" type="imu"/><self_collide>false</self_collide>')
    odd = odd.replace("</inertial></link>", "</inertial>" + textured_visual + "</link>", 1)
    odd = odd.replace("</robot>", extras + "</robot>")
    model = dc.load_urdf(odd)
    assert isinstance(model.name, str) and model.name
    assert_matches_pinocchio(model, pin.buildModelFromXML(FIXED_CHAIN))


# ----------------------------------------------------------------------------------------------
# Fixed joints merged into their parent body


@pytest.mark.parametrize("source", ["fixed_chain", "arm7"])
def test_merged_links_are_frames_and_their_inertia_counts(source):
    """A fixed chain carrying mass (tool, tip; arm7_tool) is one body with the merged inertia;
    each merged link is a frame for frame_pose and jacobian; a massive link fixed to the root
    (base_plate) does not enter the dynamics. Pinocchio merges the same way."""
    if source == "arm7":
        xml = pathlib.Path(dc.bundled_urdf("arm7")).read_text()
        merged_frames, moving = ["arm7_flange", "arm7_tool"], 7
    else:
        xml, merged_frames, moving = FIXED_CHAIN, ["tool", "tip"], 3
    model, pin_model = dc.load_urdf(xml), pin.buildModelFromXML(xml)
    assert model.nbodies == moving
    assert model.total_mass() == pytest.approx(sum(i.mass for i in pin_model.inertias[1:]), rel=1e-14)
    assert_matches_pinocchio(model, pin_model)
    data, pin_data = model.create_data(), pin_model.createData()
    q, _, _ = random_state(model, np.random.default_rng(3))
    pq = pin_q(pin_model, q)
    pin.framesForwardKinematics(pin_model, pin_data, pq)
    for frame in merged_frames:
        pin_id = pin_model.getFrameId(frame, pin.BODY)
        assert_close(dc.frame_pose(model, data, q, frame), pin_data.oMf[pin_id].homogeneous, frame)
        for reference, pin_reference in (("world", pin.WORLD), ("local", pin.LOCAL),
                                         ("local_world_aligned", pin.LOCAL_WORLD_ALIGNED)):
            expected = pin.computeFrameJacobian(pin_model, pin_data, pq, pin_id, pin_reference)
            assert_close(dc.jacobian(model, data, q, frame, reference), swap_halves(expected), frame)


def test_merged_mass_changes_the_mass_matrix():
    """The merged tool's 0.7 + 0.3 kg show up in M (a model without them differs)."""
    light = FIXED_CHAIN.replace('<mass value="0.7"/>', '<mass value="0.0"/>').replace(
        '<mass value="0.3"/>', '<mass value="0.0"/>')
    q = np.array([0.3, -0.4, 0.1])
    heavy_model, light_model = dc.load_urdf(FIXED_CHAIN), dc.load_urdf(light)
    M_heavy = dc.crba(heavy_model, heavy_model.create_data(), q)
    M_light = dc.crba(light_model, light_model.create_data(), q)
    assert np.abs(M_heavy - M_light).max() > 1e-2


def test_joint_names_address_their_child_link_frames():
    path = dc.bundled_urdf("arm7")
    model, pin_model = dc.load_urdf(path), pin.buildModelFromUrdf(path)
    data, pin_data = model.create_data(), pin_model.createData()
    q, _, _ = random_state(model, np.random.default_rng(4))
    pin.framesForwardKinematics(pin_model, pin_data, q)
    for joint_name, link_name in zip(model.joint_names, model.body_names):
        assert model.frame_id(joint_name) == model.frame_id(link_name)
        pin_id = pin_model.getFrameId(joint_name, pin.JOINT)
        assert_close(dc.frame_pose(model, data, q, joint_name), pin_data.oMf[pin_id].homogeneous, joint_name)
        expected = pin.computeFrameJacobian(pin_model, pin_data, q, pin_id, pin.LOCAL)
        assert_close(dc.jacobian(model, data, q, joint_name, "local"), swap_halves(expected), joint_name)


# ----------------------------------------------------------------------------------------------
# Mesh URIs


def mesh_robot(*uris):
    visuals = "".join(f'<visual><geometry><mesh filename="{u}" scale="1 2 3"/></geometry></visual>' for u in uris)
    return robot(link("base", extra=visuals), link("l1"), joint("j1", "revolute", "base", "l1"))


def touch(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("solid empty\nendsolid empty\n")
    return str(path)


@pytest.fixture
def no_ros_paths(monkeypatch):
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    return monkeypatch


def mesh_paths(model, link_name="base"):
    return [shape["path"] for shape in model.link_geometry[link_name]]


def test_package_uris_through_package_dirs(tmp_path, no_ros_paths):
    part = touch(tmp_path / "src" / "my_robot" / "meshes" / "part.stl")
    xml = mesh_robot("package://my_robot/meshes/part.stl")
    assert mesh_paths(dc.load_urdf(xml)) == [None]  # nowhere to look
    assert mesh_paths(dc.load_urdf(xml, package_dirs=[tmp_path / "src"])) == [part]  # folder of packages
    assert mesh_paths(dc.load_urdf(xml, package_dirs=str(tmp_path / "src" / "my_robot"))) == [part]  # the package
    shape = dc.load_urdf(xml, package_dirs=[tmp_path / "src"]).link_geometry["base"][0]
    assert shape["uri"] == "package://my_robot/meshes/part.stl" and shape["type"] == "mesh"
    np.testing.assert_array_equal(shape["scale"], [1.0, 2.0, 3.0])


def test_package_uris_through_ament_prefix_path(tmp_path, no_ros_paths):
    part = touch(tmp_path / "install" / "share" / "my_robot" / "meshes" / "part.stl")
    no_ros_paths.setenv("AMENT_PREFIX_PATH", os.pathsep.join([str(tmp_path / "elsewhere"), str(tmp_path / "install")]))
    assert mesh_paths(dc.load_urdf(mesh_robot("package://my_robot/meshes/part.stl"))) == [part]


def test_package_uris_through_ros_package_path(tmp_path, no_ros_paths):
    part = touch(tmp_path / "ws" / "my_robot" / "meshes" / "part.stl")
    no_ros_paths.setenv("ROS_PACKAGE_PATH", str(tmp_path / "ws"))
    assert mesh_paths(dc.load_urdf(mesh_robot("package://my_robot/meshes/part.stl"))) == [part]


def test_package_dirs_come_before_the_environment(tmp_path, no_ros_paths):
    mine = touch(tmp_path / "mine" / "my_robot" / "part.stl")
    touch(tmp_path / "install" / "share" / "my_robot" / "part.stl")
    no_ros_paths.setenv("AMENT_PREFIX_PATH", str(tmp_path / "install"))
    model = dc.load_urdf(mesh_robot("package://my_robot/part.stl"), package_dirs=[tmp_path / "mine"])
    assert mesh_paths(model) == [mine]


def test_file_and_relative_uris(tmp_path, no_ros_paths):
    absolute = touch(tmp_path / "meshes" / "absolute.stl")
    relative = touch(tmp_path / "robot" / "meshes" / "relative.stl")
    urdf_path = tmp_path / "robot" / "robot.urdf"
    urdf_path.write_text(mesh_robot(f"file://{absolute}", "meshes/relative.stl", "file:///no/such/mesh.stl"))
    assert mesh_paths(dc.load_urdf(urdf_path)) == [absolute, relative, None]


# ----------------------------------------------------------------------------------------------
# Mimic joints (Pinocchio 3.4+ builds mimic joints with buildModelFromUrdf(..., mimic=True))

MIMIC_ROBOT = robot(
    link("base"), link("l1"), link("l2"), link("l3"), link("l4"), link("f1"), link("f2"),
    joint("j1", "revolute", "base", "l1"),
    joint("j2", "revolute", "l1", "l2", axis="0.6 0 0.8", extra='<mimic joint="j1" multiplier="-0.5" offset="0.3"/>'),
    joint("j3", "prismatic", "l2", "l3", axis="1 0 0"),
    joint("j4", "prismatic", "l3", "l4", axis="0 1 0", extra='<mimic joint="j3" multiplier="2.0" offset="-0.1"/>'),
    joint("fa", "revolute", "l4", "f1", axis="0 1 0"),
    joint("fb", "revolute", "l4", "f2", axis="0 1 0", extra='<mimic joint="fa" multiplier="-1"/>'),
)


def test_mimic_joints_are_independent_by_default():
    for source, pin_model in ((MIMIC_ROBOT, pin.buildModelFromXML(MIMIC_ROBOT)),
                              (robot_urdf("panda"), pin.buildModelFromUrdf(robot_urdf("panda")))):
        model = dc.load_urdf(source)
        assert model.nv == model.nbodies == pin_model.nv
        assert_matches_pinocchio(model, pin_model)


@pytest.mark.parametrize("source", ["mimic_robot", "panda"])
def test_mimic_true_couples_joints_like_pinocchio(source):
    """rnea, crba, gravity, nle, FK and Jacobians against Pinocchio's mimic model; aba against
    Pinocchio's M and nle (its ABA refuses mimic joints); the Coriolis matrix through C v =
    nle - g and Mdot - 2C skew with Pinocchio's quantities (Pinocchio 4.1's computeCoriolisMatrix
    does not satisfy C v = nle - g on mimic models, so it is no reference)."""
    if source == "panda":
        path = robot_urdf("panda")
        model, pin_model = dc.load_urdf(path, mimic=True), pin.buildModelFromUrdf(path, mimic=True)
    else:
        model, pin_model = dc.load_urdf(MIMIC_ROBOT, mimic=True), pin.buildModelFromXML(MIMIC_ROBOT, mimic=True)
    assert model.nv == pin_model.nv < model.nbodies
    assert list(model.actuated_joints) == [n for n, j in zip(pin_model.names[1:], pin_model.joints[1:])
                                           if "Mimic" not in j.shortname()]
    data, pin_data = model.create_data(), pin_model.createData()
    rng = np.random.default_rng(5)
    for _ in range(2):
        q, v, a = random_state(model, rng)
        tau = rng.normal(size=model.nv)

        def pin_mass_matrix(x):
            # a fresh Data each time: Pinocchio 4.1's crba on a mimic model adds to the previous
            # call's off-diagonal entries
            upper = np.triu(pin.crba(pin_model, pin_model.createData(), x))
            return upper + np.triu(upper, 1).T

        M = pin_mass_matrix(q)
        nle = pin.nonLinearEffects(pin_model, pin_data, q, v).copy()
        g = pin.computeGeneralizedGravity(pin_model, pin_data, q).copy()
        assert_close(dc.crba(model, data, q), M, "crba")
        assert_close(dc.rnea(model, data, q, v, a), pin.rnea(pin_model, pin_data, q, v, a), "rnea")
        assert_close(dc.nonlinear_effects(model, data, q, v), nle, "nle")
        assert_close(dc.gravity(model, data, q), g, "gravity")
        assert_close(dc.aba(model, data, q, v, tau), np.linalg.solve(M, tau - nle), "aba")
        C = dc.coriolis_matrix(model, data, q, v).copy()
        assert_close(C @ v, nle - g, "C v")
        Mdot = central_difference(lambda t: pin_mass_matrix(q + t[0] * v), np.zeros(1))[..., 0]
        assert np.abs((Mdot - 2 * C) + (Mdot - 2 * C).T).max() < 1e-7
        pin.framesForwardKinematics(pin_model, pin_data, q)
        poses = dc.forward_kinematics(model, data, q)
        for name, pose in zip(model.frame_names, poses):
            assert_close(pose, pin_data.oMf[pin_model.getFrameId(name, pin.BODY)].homogeneous, name)
        last = model.frame_names[-1]
        for reference, pin_reference in (("world", pin.WORLD), ("local", pin.LOCAL),
                                         ("local_world_aligned", pin.LOCAL_WORLD_ALIGNED)):
            expected = pin.computeFrameJacobian(pin_model, pin_data, q, pin_model.getFrameId(last, pin.BODY),
                                                pin_reference)
            assert_close(dc.jacobian(model, data, q, last, reference), swap_halves(expected), last)


def test_mimic_of_a_missing_joint():
    """Ignored with independent joints (as Pinocchio does), an error when coupling is asked for."""
    xml = MIMIC_ROBOT.replace('<mimic joint="j1"', '<mimic joint="no_such_joint"')
    assert dc.load_urdf(xml).nv == 6
    with pytest.raises(dc.URDFError, match="'j2'.*'no_such_joint'"):
        dc.load_urdf(xml, mimic=True)


# ----------------------------------------------------------------------------------------------
# Bad URDFs: a URDFError (a ValueError) whose message names the element at fault (doubtful files,
# loaded with warnings, and impossible values: test_urdf_tolerance.py)

BAD_URDFS = {
    "cycle": (robot(link("a"), link("b"), joint("ab", "revolute", "a", "b"), joint("ba", "revolute", "b", "a")),
              "cycle"),
    "cycle away from the root": (
        robot(link("r"), link("a"), link("b"), link("c"), joint("ra", "revolute", "r", "a"),
              joint("bc", "revolute", "b", "c"), joint("cb", "revolute", "c", "b")), "b, c.*cycle"),
    "missing parent link": (robot(link("a"), joint("j", "revolute", "ghost", "a")), "'j'.*parent link 'ghost'"),
    "missing child link": (robot(link("a"), joint("j", "revolute", "a", "ghost")), "'j'.*child link 'ghost'"),
    "link with two parents": (
        robot(link("a"), link("b"), link("c"), joint("ac", "revolute", "a", "c"), joint("bc", "revolute", "b", "c"),
              joint("ab", "revolute", "a", "b")), "'c'.*two joints"),
    "negative mass": (robot(link("a"), link("b", mass=-1.0), joint("j", "revolute", "a", "b")), "'b'.*mass"),
    "zero axis": (robot(link("a"), link("b"), joint("j", "revolute", "a", "b", axis="0 0 0")), "'j'.*axis"),
    "unknown joint type": (robot(link("a"), link("b"), joint("j", "screw", "a", "b")), "'j'.*'screw'"),
    "link defined twice": (robot(link("a"), link("a")), "'a'.*twice"),
    "joint defined twice": (
        robot(link("a"), link("b"), link("c"), joint("j", "revolute", "a", "b"), joint("j", "revolute", "b", "c")),
        "'j'.*twice"),
    "two roots": (robot(link("a"), link("b")), "root links.*a, b"),
    "no link": (robot(), "no <link>"),
    "not a robot": ('<model name="x"><link name="a"/></model>', "<robot>"),
    "not well-formed": ('<robot name="x"><link name="a"></robot>', "not well-formed"),
}


@pytest.mark.parametrize("case", BAD_URDFS)
def test_bad_urdf(case):
    xml, words = BAD_URDFS[case]
    with pytest.raises(dc.URDFError, match=words) as caught:
        dc.load_urdf(xml)
    assert isinstance(caught.value, ValueError)


def test_bad_sources(tmp_path):
    with pytest.raises(dc.URDFError, match="not found.*missing.urdf"):
        dc.load_urdf(str(tmp_path / "missing.urdf"))
    with pytest.raises(dc.URDFError, match="int"):
        dc.load_urdf(42)


# ----------------------------------------------------------------------------------------------
# Bad arguments to the dynamics functions: a ValueError naming the argument, never a Numba error


@pytest.fixture(scope="module")
def arm():
    model = dc.load_urdf(dc.bundled_urdf("arm7"))
    return model, model.create_data()


def calls(model, data, q=None, v=None, a=None, tau=None, f_ext=None):
    """Every public function, each given the arguments it takes (defaults: valid zeros)."""
    z = np.zeros(model.nv)
    q, v, a, tau = (z if x is None else x for x in (q, v, a, tau))
    return {
        "rnea": lambda: dc.rnea(model, data, q, v, a, f_ext),
        "aba": lambda: dc.aba(model, data, q, v, tau, f_ext),
        "crba": lambda: dc.crba(model, data, q),
        "nonlinear_effects": lambda: dc.nonlinear_effects(model, data, q, v),
        "gravity": lambda: dc.gravity(model, data, q),
        "coriolis_matrix": lambda: dc.coriolis_matrix(model, data, q, v),
        "forward_kinematics": lambda: dc.forward_kinematics(model, data, q),
        "frame_pose": lambda: dc.frame_pose(model, data, q, model.frame_names[-1]),
        "jacobian": lambda: dc.jacobian(model, data, q, model.frame_names[-1], "local"),
    }


ARGUMENTS_OF = {"rnea": "q v a f_ext", "aba": "q v tau f_ext", "crba": "q", "nonlinear_effects": "q v",
                "gravity": "q", "coriolis_matrix": "q v", "forward_kinematics": "q", "frame_pose": "q",
                "jacobian": "q"}
BAD_ARGUMENTS = [(function, argument) for function, arguments in ARGUMENTS_OF.items() for argument in arguments.split()]


def raises_value_error_naming(call, words):
    """The call raises a ValueError (not a Numba error) whose message matches `words`."""
    with pytest.raises(Exception) as caught:
        call()
    assert not isinstance(caught.value, NumbaError), f"a Numba error escaped: {caught.value!r}"
    assert isinstance(caught.value, ValueError), f"{type(caught.value).__name__}: {caught.value}"
    assert caught.match(words)


def named(argument):
    """The message names the argument: "q must ...", "f_ext has ...", "...: v at indices ..."."""
    return rf"(^|: ){argument} (must|has|at)"


def filled(model, argument, value):
    """A right-shaped argument full of `value`."""
    shape = (model.nbodies, 6) if argument == "f_ext" else (model.nv,)
    return np.full(shape, value, dtype=object if isinstance(value, str) else None)


@pytest.mark.parametrize("function,argument", BAD_ARGUMENTS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_argument_is_named(arm, function, argument, bad):
    model, data = arm
    value = filled(model, argument, 0.0)
    value.reshape(-1)[3] = bad
    raises_value_error_naming(calls(model, data, **{argument: value})[function], named(argument))


@pytest.mark.parametrize("function,argument", BAD_ARGUMENTS)
def test_wrong_shape_is_named(arm, function, argument):
    model, data = arm
    for shape in ((model.nv + 1,), (model.nv, 1), (model.nbodies, 3), ()):
        value = np.zeros(shape)
        if argument == "f_ext" and shape == (model.nv + 1,):
            value = np.zeros((model.nbodies + 1, 6))
        raises_value_error_naming(calls(model, data, **{argument: value})[function], named(argument))


@pytest.mark.parametrize("function,argument", BAD_ARGUMENTS)
@pytest.mark.parametrize("junk", ["abc", object(), {"q": 1}])
def test_non_numeric_argument_is_named(arm, function, argument, junk):
    model, data = arm
    raises_value_error_naming(calls(model, data, **{argument: junk})[function], named(argument))
    strings = filled(model, argument, "x")
    raises_value_error_naming(calls(model, data, **{argument: strings})[function], named(argument))


@pytest.mark.parametrize("function", ARGUMENTS_OF)
def test_wrong_data_object(arm, function):
    model, _ = arm
    other = dc.load_urdf(dc.bundled_urdf("planar2")).create_data()
    for wrong in (other, None, pin.Model().createData(), {"tau": np.zeros(model.nv)}):
        raises_value_error_naming(calls(model, wrong)[function], "data")
    raises_value_error_naming(lambda: dc.crba(None, model.create_data(), np.zeros(model.nv)), "model")


def test_unknown_frame_and_reference(arm):
    model, data = arm
    q = np.zeros(model.nv)
    raises_value_error_naming(lambda: dc.jacobian(model, data, q, "no_such_link"), "'no_such_link'")
    raises_value_error_naming(lambda: dc.frame_pose(model, data, q, "no_such_link"), "'no_such_link'")
    raises_value_error_naming(lambda: dc.jacobian(model, data, q, 10 ** 6), "frame index")
    raises_value_error_naming(lambda: dc.jacobian(model, data, q, "arm7_tool", "body"), "reference")


def test_refused_call_leaves_previous_results(arm):
    """Kernels check their inputs before writing: a refused call changes no output buffer."""
    model, data = arm
    q, v, a = random_state(model, np.random.default_rng(6))
    tau = dc.rnea(model, data, q, v, a).copy()
    M = dc.crba(model, data, q).copy()
    v_bad = v.copy()
    v_bad[-1] = np.nan
    with pytest.raises(ValueError):
        dc.rnea(model, data, q, v_bad, a)
    q_bad = q.copy()
    q_bad[0] = np.inf
    with pytest.raises(ValueError):
        dc.crba(model, data, q_bad)
    np.testing.assert_array_equal(data.tau, tau)
    np.testing.assert_array_equal(data.M, M)


def test_accepted_argument_forms(arm):
    """Lists, integers, float32, strided and read-only arrays are all the same q."""
    model, data = arm
    q, v, a = random_state(model, np.random.default_rng(7))
    tau = dc.rnea(model, data, q, v, a).copy()
    strided = np.zeros(2 * model.nv)
    strided[::2] = q
    read_only = q.copy()
    read_only.setflags(write=False)
    for form in (list(q), strided[::2], read_only):  # a read-only array may run another compilation
        np.testing.assert_allclose(dc.rnea(model, data, form, v, a), tau, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dc.rnea(model, data, q.astype(np.float32), v, a),
                               dc.rnea(model, data, q.astype(np.float32).astype(float), v, a), rtol=0, atol=0)
    assert dc.crba(model, data, [0] * model.nv).shape == (model.nv, model.nv)
