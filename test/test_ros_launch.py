"""Launch files and configuration: what can be checked without ros2 launch and Gazebo.

- every launch file compiles (py_compile), so syntax errors show here;
- where launch_ros is installed (a ROS 2 distribution), each generate_launch_description() runs;
  on a plain Python machine that test is skipped, saying why;
- the bundled parameter files name only parameters the nodes declare, and bringup finds their nodes;
- the Gazebo URDF (gz_ros2_control system and plugin) is well formed and leaves the robot model as
  the plain URDF gives it.
"""
import glob
import importlib.util
import os
import py_compile
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml

import dyn_control as dc
from dyn_control.nodes import controller, simulator
from dyn_control.nodes.cli import nodes_in_config
from dyn_control.nodes.robot import check_forward_controller_joints, parameter_files
from dyn_control.nodes.gazebo import GZ_PLUGIN_FILE, GZ_SYSTEM, with_gz_ros2_control
from dyn_control.robots import config_dir

pytestmark = pytest.mark.ros

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCH_FILES = sorted(glob.glob(os.path.join(ROOT, "launch", "*.launch.py")))
CONFIGS = ["demo.yaml", "controller.yaml", "franka.yaml", "ur.yaml"]
DECLARED = {"dyn_controller": {p.name for p in controller.PARAMETERS},
            "dyn_simulator": {p.name for p in simulator.PARAMETERS}}


def test_launch_files_exist():
    assert {os.path.basename(f) for f in LAUNCH_FILES} >= {"bringup.launch.py", "controller.launch.py",
                                                          "gazebo.launch.py"}


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=os.path.basename)
def test_launch_file_compiles(path, tmp_path):
    py_compile.compile(path, cfile=str(tmp_path / "launch.pyc"), doraise=True)


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=os.path.basename)
def test_launch_description_builds(path):
    try:
        import launch_ros  # noqa: F401
    except ImportError as error:
        pytest.skip(f"launch_ros not installed: it is not on PyPI, only in a ROS 2 distribution ({error})")
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3].replace(".", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()
    assert description.entities


def flatten(tree, prefix=""):
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from flatten(value, f"{prefix}{key}.")
        else:
            yield prefix + key


@pytest.mark.parametrize("name", CONFIGS)
def test_config_names_only_declared_parameters(name):
    with open(os.path.join(config_dir(), name)) as f:
        tree = yaml.safe_load(f)
    for node, declared in DECLARED.items():
        if node in tree:
            unknown = set(flatten(tree[node]["ros__parameters"])) - declared
            assert not unknown, f"{name}: {node} has no parameters {sorted(unknown)}"


def test_bringup_finds_the_nodes_of_the_configs():
    assert nodes_in_config(os.path.join(config_dir(), "demo.yaml")) == (
        [("/", "dyn_controller"), ("/", "dyn_simulator")], [])
    found, others = nodes_in_config(os.path.join(config_dir(), "controller.yaml"))
    assert found == [("/", "dyn_controller")]
    assert others == ["/controller_manager", "/effort_controller"]


def test_bringup_reads_namespaces_and_skips_wildcards(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("/**:\n  ros__parameters:\n    use_sim_time: false\n"
                    "robot1:\n  dyn_controller:\n    ros__parameters:\n      rate_hz: 500.0\n")
    assert nodes_in_config(str(path)) == ([("/robot1", "dyn_controller")], [])


def test_controller_yaml_drives_the_same_joints():
    with open(os.path.join(config_dir(), "controller.yaml")) as f:
        tree = yaml.safe_load(f)
    joints = tree["dyn_controller"]["ros__parameters"]["joints"]
    assert tree["effort_controller"]["ros__parameters"]["joints"] == joints
    assert joints == list(dc.load_urdf(dc.bundled_urdf("arm7")).joint_names)


@pytest.mark.parametrize("name", CONFIGS)
def test_configs_command_the_joints_their_forward_controller_drives(name):
    path = os.path.join(config_dir(), name)
    with open(path) as f:
        parameters = yaml.safe_load(f)["dyn_controller"]["ros__parameters"]
    check_forward_controller_joints(parameters.get("command_topic", "/effort_controller/commands"),
                                    parameters.get("joints", []) or ["(every joint)"], [])
    if parameters.get("joints"):
        check_forward_controller_joints(parameters.get("command_topic", "/effort_controller/commands"),
                                        parameters["joints"], [path])


@pytest.mark.parametrize("name, topic, joints", [("franka.yaml", "/franka/joint_states", 7),
                                                 ("ur.yaml", "/joint_states", 6)])
def test_hardware_configs_leave_gravity_to_the_robot(name, topic, joints):
    with open(os.path.join(config_dir(), name)) as f:
        parameters = yaml.safe_load(f)["dyn_controller"]["ros__parameters"]
    assert parameters["gravity_compensation"] == "robot"
    assert parameters.get("joint_states_topic", "/joint_states") == topic
    assert len(parameters["joints"]) == joints
    controller.check_values({"gains.kp": [parameters["gains"]["kp"]], "gains.kd": [parameters["gains"]["kd"]],
                             "gravity_compensation": "robot"})


def test_a_forward_controller_with_other_joints_is_refused(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("effort_controller:\n  ros__parameters:\n    joints: [a, c, b]\n")
    check_forward_controller_joints("/effort_controller/commands", ["a", "c", "b"], [str(path)])
    check_forward_controller_joints("/other_controller/commands", ["a", "b", "c"], [str(path)])
    with pytest.raises(ValueError, match=r"joints: effort_controller in .* commands the joints \['a', 'c', 'b'\]"):
        check_forward_controller_joints("/effort_controller/commands", ["a", "b", "c"], [str(path)])
    assert parameter_files(["x", "--ros-args", "--params-file", str(path), "-r", "a:=b"]) == [str(path)]


def test_gazebo_urdf():
    with open(dc.bundled_urdf("arm7")) as f:
        urdf = f.read()
    joints = [f"arm7_joint{k}" for k in range(1, 8)]
    q0 = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
    xml = with_gz_ros2_control(with_gz_ros2_control(urdf, joints, "/x.yaml"), joints, "/params.yaml", q0)
    root = ET.fromstring(xml)
    systems = root.findall("ros2_control")
    assert len(systems) == 1, "applying twice must replace, not duplicate"
    assert systems[0].find("hardware/plugin").text == GZ_SYSTEM
    assert [j.get("name") for j in systems[0].findall("joint")] == joints
    for joint, q in zip(systems[0].findall("joint"), q0):
        assert [c.get("name") for c in joint.findall("command_interface")] == ["effort"]
        assert [s.get("name") for s in joint.findall("state_interface")] == ["position", "velocity", "effort"]
        assert float(joint.find("state_interface/param[@name='initial_value']").text) == q
    plugins = [p for g in root.findall("gazebo") for p in g.findall("plugin")]
    assert [(p.get("filename"), p.find("parameters").text) for p in plugins] == [(GZ_PLUGIN_FILE, "/params.yaml")]
    plain, gazebo = dc.load_urdf(urdf), dc.load_urdf(xml)
    assert gazebo.joint_names == plain.joint_names and gazebo.frame_names == plain.frame_names
    np.testing.assert_array_equal(gazebo.phi, plain.phi)


def test_gazebo_urdf_refuses_unknown_joints():
    with open(dc.bundled_urdf("arm7")) as f:
        urdf = f.read()
    with pytest.raises(ValueError, match="arm7_tool_joint"):
        with_gz_ros2_control(urdf, ["arm7_joint1", "arm7_tool_joint"], "/x.yaml")
