"""Launch files and configuration: what can be checked without ros2 launch and Gazebo.

- every launch file compiles (py_compile), so syntax errors show here;
- where launch_ros is installed (a ROS 2 distribution), each generate_launch_description() runs;
  on a plain Python machine that test is skipped, saying why;
- bringup.launch.py and controller.launch.py, built against a stand-in for launch and launch_ros that
  records what they are given: launch drives no lifecycle transition (no event handler, no
  ChangeState, no timer), each node gets `autostart` as its last parameter override (true, or the
  controller's `autostart` argument), so it configures and activates itself once;
- the controller started as launch starts it (its process, the config then the override as
  parameter files) activates once: a deactivate from outside, as `ros2 lifecycle set` or a lifecycle
  manager sends it, stays past the moment the launch files' old handler activated it again
  (discovery.discovery_settle() after every transition to inactive), and SIGINT then ends it with code 0;
- the bundled parameter files name only parameters the nodes declare, and bringup finds their nodes;
- the Gazebo URDF (gz_ros2_control system and plugin) is well formed and leaves the robot model as
  the plain URDF gives it.
"""
import glob
import importlib.util
import os
import py_compile
import re
import signal
import subprocess
import sys
import time
import types
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import ros_harness  # noqa: F401  (this process's own ROS domain, inherited by the node process)

import dyn_control as dc
from dyn_control.nodes import controller_parameters, param_files, simulator
from dyn_control.nodes.bringup import check_config, nodes_in_config
from dyn_control.nodes.discovery import discovery_settle
from dyn_control.nodes.robot import check_forward_controller_joints, parameter_files
from dyn_control.nodes.gazebo import GZ_PLUGIN_FILE, GZ_SYSTEM, with_gz_ros2_control
from dyn_control.robots import config_dir
from ros_harness import write_parameter_file

pytestmark = pytest.mark.ros

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCH_FILES = sorted(glob.glob(os.path.join(ROOT, "launch", "*.launch.py")))
CONFIGS = ["demo.yaml", "controller.yaml", "franka.yaml", "ur.yaml", "five_bar_demo.yaml"]
DECLARED = {"dyn_controller": {p.name for p in controller_parameters.PARAMETERS},
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


class Recorded:
    """A stand-in for a class of launch or launch_ros: keeps what it was built with."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class LaunchConfiguration(Recorded):
    """launch.substitutions.LaunchConfiguration: its value from the context, here a dict."""

    def perform(self, context):
        return context[self.args[0]]


def stand_in_launch(monkeypatch):
    """launch and launch_ros (and their submodules) as modules whose every name is a Recorded class
    of that name; returns the set of names the launch files imported."""
    imported, classes = set(), {"LaunchConfiguration": LaunchConfiguration}

    def name_in(module):
        def attribute(name):
            if name.startswith("__"):
                raise AttributeError(name)
            imported.add(f"{module}.{name}")
            return classes.setdefault(name, type(name, (Recorded,), {}))
        return attribute
    for package in ("launch", "launch_ros"):
        for module in (package, *(f"{package}.{sub}" for sub in ("actions", "conditions", "events", "substitutions",
                                                                 "event_handlers", "events.lifecycle"))):
            fake = types.ModuleType(module)
            fake.__path__ = []
            fake.__getattr__ = name_in(module)
            monkeypatch.setitem(sys.modules, module, fake)
    return imported


def launch_description(name):
    """generate_launch_description() of launch/<name>: its entities."""
    path = os.path.join(ROOT, "launch", name)
    spec = importlib.util.spec_from_file_location(name[:-3].replace(".", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()
    assert type(description).__name__ == "LaunchDescription"
    return description.args[0]


# what a launch file would drive a node's lifecycle with
LIFECYCLE_DRIVERS = {"RegisterEventHandler", "EmitEvent", "TimerAction", "OnStateTransition", "ChangeState",
                     "LifecycleTransition", "matches_action"}


def test_bringup_launch_leaves_the_lifecycle_to_the_nodes_autostart(monkeypatch):
    imported = stand_in_launch(monkeypatch)
    entities = launch_description("bringup.launch.py")
    nodes = {e.kwargs["name"]: e for e in entities if type(e).__name__ == "LifecycleNode"}
    assert sorted(nodes) == ["dyn_controller", "dyn_simulator"]
    for node in nodes.values():
        assert type(node.kwargs["parameters"][0]).__name__ == "LaunchConfiguration"     # the config,
        assert node.kwargs["parameters"][-1] == {"autostart": True}                    # then the override
    assert {type(e).__name__ for e in entities} == {"DeclareLaunchArgument", "LifecycleNode"}
    assert not {name.rsplit(".", 1)[1] for name in imported} & LIFECYCLE_DRIVERS, sorted(imported)


@pytest.mark.parametrize("autostart", ["true", "false"])
def test_controller_launch_passes_autostart_to_the_node_and_drives_nothing(monkeypatch, autostart):
    imported = stand_in_launch(monkeypatch)
    entities = launch_description("controller.launch.py")
    arguments = {e.args[0]: e.kwargs for e in entities if type(e).__name__ == "DeclareLaunchArgument"}
    assert arguments["autostart"]["default_value"] == "true"
    context = {name: kwargs.get("default_value", "") for name, kwargs in arguments.items()}
    context.update(autostart=autostart, command_topic="arm/commands")
    [actions] = [e for e in entities if type(e).__name__ == "OpaqueFunction"]
    [node] = actions.kwargs["function"](context)
    assert type(node).__name__ == "LifecycleNode" and node.kwargs["name"] == "dyn_controller"
    config, overrides = node.kwargs["parameters"]
    assert config.args == ("config",)
    assert overrides["autostart"] is (autostart == "true") and overrides["use_sim_time"] is False
    assert overrides["command_topic"] == "arm/commands" and "joint_states_topic" not in overrides
    assert dc.load_urdf(overrides["robot_description"]).joint_names == dc.load_urdf(dc.bundled_urdf("arm7")).joint_names
    assert not {name.rsplit(".", 1)[1] for name in imported} & LIFECYCLE_DRIVERS, sorted(imported)


def test_a_deactivate_after_the_autostart_stays(tmp_path):
    """The controller as the launch files start it: its process with the config, then the override
    {autostart: true}, as parameter files (launch_ros writes a dict of parameters into one). Its
    lifecycle state (the get_state service) is the oracle, sampled every 0.2 s after the deactivate."""
    import rclpy
    from lifecycle_msgs.msg import State, Transition, TransitionEvent
    from lifecycle_msgs.srv import ChangeState, GetState
    from rclpy.executors import SingleThreadedExecutor

    config = write_parameter_file(tmp_path / "config.yaml",
                                  {"/**/dyn_controller": {"urdf_path": dc.bundled_urdf("arm7")}})
    override = write_parameter_file(tmp_path / "override.yaml", {"/**": {"autostart": True}})
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("launch_test_lifecycle", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    events = []
    node.create_subscription(TransitionEvent, "/dyn_controller/transition_event",
                             lambda e: events.append(e.goal_state.id), 100)
    get_state = node.create_client(GetState, "/dyn_controller/get_state")
    change_state = node.create_client(ChangeState, "/dyn_controller/change_state")
    log = open(tmp_path / "controller.log", "w+")
    process = subprocess.Popen([sys.executable, "-m", "dyn_control.nodes.controller", "--ros-args",
                                "--params-file", config, "--params-file", override],
                               stdout=log, stderr=subprocess.STDOUT, text=True)

    def answer(future, timeout=10.0):
        deadline = time.monotonic() + timeout
        while not future.done() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        assert future.done(), "the controller's lifecycle service did not answer"
        return future.result()

    def state():
        return answer(get_state.call_async(GetState.Request())).current_state.id

    try:
        deadline = time.monotonic() + 120.0     # (the kernels load from the cache: seconds)
        while not get_state.wait_for_service(timeout_sec=0.1):
            assert process.poll() is None and time.monotonic() < deadline, "the controller never came up"
        while state() != State.PRIMARY_STATE_ACTIVE:
            assert process.poll() is None and time.monotonic() < deadline, "the controller never became active"
            time.sleep(0.2)
        seen = len(events)
        request = ChangeState.Request()
        request.transition.id = Transition.TRANSITION_DEACTIVATE
        assert answer(change_state.call_async(request)).success
        states = []
        deadline = time.monotonic() + discovery_settle() + 2.0    # the old handler's activate came
        while time.monotonic() < deadline:                         # discovery_settle() after it
            states.append(state())
            time.sleep(0.2)
        executor.spin_once(timeout_sec=0.1)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.seek(0)
        output = log.read()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    assert set(states) == {State.PRIMARY_STATE_INACTIVE}, (states, output)
    # what the controller published after the deactivate: that transition, and none after it (the
    # autostart's own events may be taken from the subscription after get_state has answered ACTIVE)
    after = events[seen:]
    while after and after[0] in (State.TRANSITION_STATE_ACTIVATING, State.PRIMARY_STATE_ACTIVE):
        after = after[1:]
    assert after == [State.TRANSITION_STATE_DEACTIVATING, State.PRIMARY_STATE_INACTIVE], (events, output)
    assert process.returncode == 0 and "Traceback" not in output, output


def dyn_controller_parameters(name):
    """The parameters config/<name> gives /dyn_controller (as rcl applies its entries)."""
    entries = param_files.load(os.path.join(config_dir(), name))
    return param_files.merged(param_files.applying(entries, "/dyn_controller"))


@pytest.mark.parametrize("name", CONFIGS)
def test_config_names_only_declared_parameters(name):
    for entry in param_files.load(os.path.join(config_dir(), name)):
        if entry.node_name in DECLARED:
            named = {p for p in entry.parameters if not p.startswith("mapping.parameters.")}
            unknown = named - DECLARED[entry.node_name]
            assert not unknown, f"{name}: {entry.node_name} has no parameters {sorted(unknown)}"
    check_config(os.path.join(config_dir(), name))      # types and ranges too


@pytest.mark.parametrize("name", CONFIGS)
def test_configs_apply_in_any_namespace(name):
    """Every node entry of a bundled config (ours, the controller_manager's, its controllers')
    applies to that node at the root and in a namespace, as rcl matches them."""
    for entry in param_files.load(os.path.join(config_dir(), name)):
        for namespace in ("/", "/robot1", "/lab/robot2"):
            assert entry.applies_to(param_files.node_name(namespace, entry.node_name)), (name, entry.key, namespace)


def test_bringup_finds_the_nodes_of_the_configs():
    assert nodes_in_config(os.path.join(config_dir(), "demo.yaml")) == (
        [("/", "dyn_controller"), ("/", "dyn_simulator")], [])
    found, others = nodes_in_config(os.path.join(config_dir(), "controller.yaml"))
    assert found == [("/", "dyn_controller")]
    assert others == ["/**/controller_manager", "/**/effort_controller"]
    assert nodes_in_config(os.path.join(config_dir(), "demo.yaml"), "/robot1") == (
        [("/robot1", "dyn_controller"), ("/robot1", "dyn_simulator")], [])


def test_bringup_reads_namespaces_and_skips_wildcards(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("/**:\n  ros__parameters:\n    use_sim_time: false\n"
                    "robot1:\n  dyn_controller:\n    ros__parameters:\n      rate_hz: 500.0\n")
    assert nodes_in_config(str(path)) == ([("/robot1", "dyn_controller")], [])


def test_bringup_starts_wildcard_and_namespaced_entries(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("/**/dyn_controller:\n  ros__parameters:\n    rate_hz: 500.0\n"
                    "/robot1/dyn_controller:\n  ros__parameters:\n    gains: {kp: 100.0}\n"
                    "/robot2/dyn_controller:\n  ros__parameters:\n    gains: {kp: 200.0}\n"
                    "/**/dyn_simulator:\n  ros__parameters:\n    rate_hz: 500.0\n")
    # the controllers where their entries name them, the simulator (wildcard alone) in --namespace
    assert nodes_in_config(str(path)) == ([("/robot1", "dyn_controller"), ("/robot2", "dyn_controller"),
                                           ("/", "dyn_simulator")], [])


@pytest.mark.parametrize("text, namespace, words", [
    ("dyn_controller:\n  ros__parameters:\n    rate_hz: 500.0\n", "/robot1", "key it /**/dyn_controller"),
    ("/*/dyn_controller:\n  ros__parameters:\n    rate_hz: 500.0\n", "/", "applies to none of the nodes"),
    ("/robot2/dyn_controller:\n  ros__parameters:\n    rate_hz: 500.0\n", "/robot1", "outside the namespace"),
])
def test_bringup_refuses_entries_that_would_not_apply(tmp_path, text, namespace, words):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    with pytest.raises(param_files.ParameterFileError, match=re.escape(words)):
        nodes_in_config(str(path), namespace)


def test_controller_yaml_drives_the_same_joints():
    entries = param_files.load(os.path.join(config_dir(), "controller.yaml"))
    joints = dyn_controller_parameters("controller.yaml")["joints"]
    assert param_files.merged(param_files.applying(entries, "/effort_controller"))["joints"] == joints
    assert joints == list(dc.load_urdf(dc.bundled_urdf("arm7")).joint_names)


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("namespace", ["/", "/robot1"])
def test_configs_command_the_joints_their_forward_controller_drives(name, namespace):
    path = os.path.join(config_dir(), name)
    parameters = dyn_controller_parameters(name)
    topic = parameters.get("command_topic", "effort_controller/commands")
    assert not topic.startswith("/"), "a relative command topic: the forward controller of the same namespace"
    check_forward_controller_joints(topic, parameters.get("joints", []) or ["(every joint)"], [], namespace)
    if parameters.get("joints"):
        check_forward_controller_joints(topic, parameters["joints"], [path], namespace)
        with pytest.raises(ValueError, match="same joints, same order"):
            check_forward_controller_joints(topic, parameters["joints"][::-1], [path], namespace)


@pytest.mark.parametrize("name, topic, joints", [("franka.yaml", "franka/joint_states", 7),
                                                 ("ur.yaml", "joint_states", 6)])
def test_hardware_configs_leave_gravity_to_the_robot(name, topic, joints):
    parameters = dyn_controller_parameters(name)
    assert parameters["gravity_compensation"] == "robot"
    assert parameters.get("joint_states_topic", "joint_states") == topic
    assert len(parameters["joints"]) == joints
    controller_parameters.check_values({"gains.kp": [parameters["gains.kp"]], "gains.kd": [parameters["gains.kd"]],
                             "gravity_compensation": "robot"})


def test_a_forward_controller_with_other_joints_is_refused(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("effort_controller:\n  ros__parameters:\n    joints: [a, c, b]\n")
    check_forward_controller_joints("/effort_controller/commands", ["a", "c", "b"], [str(path)])
    check_forward_controller_joints("/other_controller/commands", ["a", "b", "c"], [str(path)])
    with pytest.raises(ValueError, match=r"joints: /effort_controller in .* commands the joints \['a', 'c', 'b'\]"):
        check_forward_controller_joints("/effort_controller/commands", ["a", "b", "c"], [str(path)])
    # a relative topic resolves in the controller's namespace: robot2's forward controller, not robot1's
    path.write_text("/robot1/effort_controller:\n  ros__parameters:\n    joints: [a, c, b]\n"
                    "/robot2/effort_controller:\n  ros__parameters:\n    joints: [a, b, c]\n")
    check_forward_controller_joints("effort_controller/commands", ["a", "b", "c"], [str(path)], "/robot2")
    with pytest.raises(ValueError, match="/robot1/effort_controller"):
        check_forward_controller_joints("effort_controller/commands", ["a", "b", "c"], [str(path)], "/robot1")
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
