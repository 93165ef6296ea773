"""Parameter files and parameters as a ROS 2 user meets them (issue 22.1-22.2, issue 21.6).

- The package's reader of parameter files (param_files.py, used by the bringup's check, the launch
  files and the nodes' reports) against rcl itself: rclpy's overrides of a node built from the
  same file are the oracle, for the typing of scalars and for which entries apply to which node.
- A parameter dump (ListParameters + GetParameters, written as `ros2 param dump` writes it) loaded
  into a fresh node gives the same values with the same types, and the node configures from it;
  a number set with an integer literal stays a double, an empty list is a typed array.
- Configuration errors, one test per failing baseline of issue 21.6: misspelled keys (`kpp`,
  `watchdog_timout`) and a value written as a mapping (`kp: {a: 1}`) fail configure naming the key
  and the nearest known name, and `dyn-control bringup` exits 2 with one line; no upper bound
  (`gains.kp` 1e300, the simulator's `rate_hz` 1e9); unreadable files (binary, broken YAML, a
  top-level list, `kp: [400, "a", true]`) give exit code 2 and one line, no traceback.
"""
import math
import os
import subprocess
import sys
import threading
import time

import pytest
import rclpy
import ros_harness  # noqa: F401  (this process's own ROS domain, inherited by the subprocesses)
import yaml
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, ListParameters, SetParameters
from rclpy.executors import MultiThreadedExecutor

import dyn_control as dc
from dyn_control.nodes import controller_parameters, param_files, params
from dyn_control.nodes.bringup import check_config
from dyn_control.nodes.controller import ControllerNode
from dyn_control.nodes.simulator import SimulatorNode

pytestmark = pytest.mark.ros

URDF = dc.bundled_urdf("arm7")
SCRIPT = os.path.join(os.path.dirname(sys.executable), "dyn-control")


class Nodes:
    """Nodes of this process in a context of their own, whose command line is `args` (as a node
    process's `--ros-args ...`), spun by a MultiThreadedExecutor; a client node to call services."""

    def __init__(self, args=()):
        self.context = rclpy.Context()
        rclpy.init(args=["--ros-args", *args] if args else [], context=self.context)
        self.executor = MultiThreadedExecutor(context=self.context)
        self.client = rclpy.create_node("parameter_client", context=self.context)
        self.executor.add_node(self.client)
        self.nodes = []
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def add(self, node_class, **kwargs):
        node = node_class(context=self.context, **kwargs)
        self.executor.add_node(node)
        self.nodes.append(node)
        return node

    def remove(self, node):
        self.executor.remove_node(node)
        self.nodes.remove(node)
        node.destroy_node()

    def call(self, service_type, name, request, timeout=10.0):
        client = self.client.create_client(service_type, name)
        try:
            assert client.wait_for_service(timeout), f"no service {name}"
            future = client.call_async(request)
            deadline = time.monotonic() + timeout
            while not future.done():
                assert time.monotonic() < deadline, f"no answer from {name}"
                time.sleep(0.01)
            return future.result()
        finally:
            self.client.destroy_client(client)

    def close(self):
        for node in list(self.nodes):
            self.remove(node)
        self.executor.shutdown()
        self.client.destroy_node()
        rclpy.try_shutdown(context=self.context)


@pytest.fixture
def nodes_with():
    made = []

    def make(*args):
        made.append(Nodes(args))
        return made[-1]
    yield make
    for nodes in made:
        nodes.close()


def write(tmp_path, text, name="params.yaml"):
    path = tmp_path / name
    path.write_text(text) if isinstance(text, str) else path.write_bytes(text)
    return str(path)


# ------------------------------------------------------------------ the reader against rcl

SCALARS = ["1", "-3", "0x1f", "017", "08", "1e3", "1.5", ".5", "5.", "-.inf", ".nan", "nan", "Infinity",
           "1e999", "1e-400", "1_000", "yes", "on", "Off", "y", "abc", "'5'", '"true"', "!!str 5", "~", "null",
           "9223372036854775808", "0x1.8p1", "3e"]


@pytest.fixture(scope="module")
def rcl_context():
    """One context (one DDS participant) for every rcl_overrides node of this module: a context and
    its participant per file, created and destroyed dozens of times in a row, once left Fast DDS's
    participant destruction spinning forever (DomainParticipant::set_listener in rmw_destroy_node)."""
    context = rclpy.Context()
    rclpy.init(args=[], context=context)
    yield context
    rclpy.try_shutdown(context=context)


def rcl_overrides(context, path, node_name="x", namespace="/"):
    """{name: value} rcl gives the node `namespace/node_name` from the file at path (the node's own
    --params-file argument)."""
    node = rclpy.create_node(node_name, namespace=namespace, context=context, start_parameter_services=False,
                             cli_args=["--ros-args", "--params-file", path], use_global_arguments=False)
    try:
        return {name: p.value for name, p in node._parameter_overrides.items()}
    finally:
        node.destroy_node()


def same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


def test_scalars_are_typed_as_rcl_types_them(tmp_path, rcl_context):
    path = write(tmp_path, "x:\n  ros__parameters:\n" + "".join(f"    p{i}: {t}\n" for i, t in enumerate(SCALARS)))
    ours = param_files.load(path)[0].parameters
    theirs = rcl_overrides(rcl_context, path)
    for i, text in enumerate(SCALARS):
        assert same(ours[f"p{i}"], theirs[f"p{i}"]), (text, ours[f"p{i}"], theirs[f"p{i}"])


KEYS = ["/**/x", "/*/x", "x", "/x", "/robot1/x", "robot1/x", "/**", "/robot1/**", "/**/robot1/x", "/*",
        "/*/*/x", "/**/*"]
PLACES = [("/", "x"), ("/robot1", "x"), ("/a/robot1", "x"), ("/robot1", "y"), ("/a/b", "x")]


def test_entries_apply_to_the_nodes_rcl_applies_them_to(tmp_path, rcl_context):
    for k, key in enumerate(KEYS):
        path = write(tmp_path, f'"{key}":\n  ros__parameters:\n    p{k}: 1\n', f"file{k}.yaml")
        entry, = param_files.load(path)
        for namespace, name in PLACES:
            rcl_applies = f"p{k}" in rcl_overrides(rcl_context, path, name, namespace)
            assert entry.applies_to(param_files.node_name(namespace, name)) == rcl_applies, (key, namespace, name)


def test_nested_namespaces_and_parameter_groups(tmp_path, rcl_context):
    path = write(tmp_path, "robot1:\n  dyn_controller:\n    ros__parameters:\n      gains: {kp: 1, kd: [2.0, 3.0]}\n")
    entry, = param_files.load(path)
    assert entry.key == "/robot1/dyn_controller"
    assert entry.parameters == rcl_overrides(rcl_context, path, "dyn_controller", "/robot1") | {"gains.kd": [2.0, 3.0]}
    assert list(rcl_overrides(rcl_context, path, "dyn_controller", "/robot1")["gains.kd"]) == [2.0, 3.0]


def test_rclpy_declares_what_the_checks_let_pass():
    """The names params.RCLPY_PARAMETERS lets pass are the parameters rclpy declares on a node."""
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node("plain", context=context)
        assert set(node._parameters) == set(params.RCLPY_PARAMETERS)
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)


# ------------------------------------------------------------------ dump and reload

def get_value(value):
    """The Python value of a ParameterValue, as ros2param's get_value gives it to `ros2 param dump`."""
    fields = {ParameterType.PARAMETER_BOOL: "bool_value", ParameterType.PARAMETER_INTEGER: "integer_value",
              ParameterType.PARAMETER_DOUBLE: "double_value", ParameterType.PARAMETER_STRING: "string_value",
              ParameterType.PARAMETER_BYTE_ARRAY: "byte_array_value",
              ParameterType.PARAMETER_BOOL_ARRAY: "bool_array_value",
              ParameterType.PARAMETER_INTEGER_ARRAY: "integer_array_value",
              ParameterType.PARAMETER_DOUBLE_ARRAY: "double_array_value",
              ParameterType.PARAMETER_STRING_ARRAY: "string_array_value"}
    if value.type == ParameterType.PARAMETER_NOT_SET:
        return None
    content = getattr(value, fields[value.type])
    return list(content) if value.type >= ParameterType.PARAMETER_BYTE_ARRAY else content


def remote_parameters(nodes, node):
    """{name: (type, value)} of every parameter of `node`, through its ListParameters and
    GetParameters services (as ros2 param dump reads them)."""
    names = nodes.call(ListParameters, f"{node}/list_parameters", ListParameters.Request()).result.names
    values = nodes.call(GetParameters, f"{node}/get_parameters", GetParameters.Request(names=names)).values
    return {name: (value.type, get_value(value)) for name, value in zip(names, values)}


def dump(parameters, node, path):
    """Write `parameters` ({name: (type, value)}) in the format of `ros2 param dump` (ros2param's
    dump verb: nested by the dots of the names, yaml.dump, block style)."""
    tree = {}
    for name, (_, value) in sorted(parameters.items()):
        *groups, leaf = name.split(".")
        level = tree
        for group in groups:
            level = level.setdefault(group, {})
        level[leaf] = value
    with open(path, "w") as f:
        yaml.dump({node: {"ros__parameters": tree}}, f, default_flow_style=False)


def test_a_parameter_dump_reloads_with_the_same_values_and_types(nodes_with, tmp_path):
    first = nodes_with()
    node = first.add(ControllerNode, parameter_overrides=[rclpy.parameter.Parameter("urdf_path", value=URDF)])
    # `ros2 param set /dyn_controller gains.kp 300`: an integer literal, sent as an integer
    result = first.call(SetParameters, "/dyn_controller/set_parameters", SetParameters.Request(parameters=[
        ParameterMsg(name="gains.kp", value=ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=300)),
        ParameterMsg(name="gains.kd", value=ParameterValue(type=ParameterType.PARAMETER_INTEGER_ARRAY,
                                                           integer_array_value=[20] * 7))]))
    assert all(r.successful for r in result.results), result
    before = remote_parameters(first, "/dyn_controller")
    assert before["gains.kp"] == (ParameterType.PARAMETER_DOUBLE, 300.0)
    assert before["gains.kd"] == (ParameterType.PARAMETER_DOUBLE_ARRAY, [20.0] * 7)
    assert before["joints"] == (ParameterType.PARAMETER_STRING_ARRAY, [])
    assert before["reference.position"] == (ParameterType.PARAMETER_DOUBLE_ARRAY, [])
    assert before["estimator.gain"] == (ParameterType.PARAMETER_DOUBLE, 50.0)
    path = str(tmp_path / "dump.yaml")
    dump(before, "/dyn_controller", path)
    assert "kp: 300.0" in open(path).read()
    first.remove(node)           # one /dyn_controller at a time

    second = nodes_with("--params-file", path)
    fresh = second.add(ControllerNode)
    after = remote_parameters(second, "/dyn_controller")
    assert after == before
    fresh.trigger_configure()
    assert fresh.state == "inactive"
    assert params.read(fresh, controller_parameters.PARAMETERS, params.PHASES)["gains.kp"] == [300.0]


def test_a_file_whose_entries_do_not_apply_is_reported(nodes_with, tmp_path, capfd):
    path = write(tmp_path, "dyn_controller:\n  ros__parameters:\n    gains: {kp: 100.0}\n")
    nodes = nodes_with("--params-file", path, "-r", "__ns:=/robot1")
    node = nodes.add(ControllerNode)
    assert node.get_fully_qualified_name() == "/robot1/dyn_controller"
    params.report_parameter_files(node, [path])
    err = capfd.readouterr().err
    assert "WARN" in err and "none of its entries (/dyn_controller) applies to /robot1/dyn_controller" in err, err
    assert "0 entries applied" in err
    wildcard = write(tmp_path, "/**/dyn_controller:\n  ros__parameters:\n    gains: {kp: 100.0}\n"
                     "/robot1/dyn_controller:\n  ros__parameters:\n    gains: {kd: 20.0}\n", "wildcard.yaml")
    params.report_parameter_files(node, [wildcard])
    err = capfd.readouterr().err
    assert "2 entries applied: /**/dyn_controller (1), /robot1/dyn_controller (1)" in err, err
    assert "WARN" not in err


# ------------------------------------------------------------------ issue 21.6, one test per baseline

def bringup(path, timeout=60):
    return subprocess.run([SCRIPT, "bringup", path, "--duration", "1"], capture_output=True, text=True,
                          timeout=timeout)


def assert_refused_in_one_line(result, *words):
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" not in output, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    for word in words:
        assert word in lines[0], (word, lines[0])


def configure_fails(nodes_with, path, node_class, capfd, *words):
    """A node of `node_class` built from the file at path fails configure and logs `words`."""
    node = nodes_with("--params-file", path).add(node_class)
    node.trigger_configure()
    assert node.state == "unconfigured"
    err = capfd.readouterr().err
    for word in words:
        assert word in err, (word, err)


MISSPELLED = ("/**/dyn_controller:\n  ros__parameters:\n    urdf_path: " + URDF +
              "\n    gains: {kpp: 300.0}\n    watchdog_timout: 0.1\n")


def test_misspelled_keys_fail_configure_naming_the_nearest_name(nodes_with, tmp_path, capfd):
    configure_fails(nodes_with, write(tmp_path, MISSPELLED), ControllerNode, capfd,
                    "gains.kpp (did you mean gains.kp?)", "watchdog_timout (did you mean watchdog_timeout?)")
    assert_refused_in_one_line(bringup(write(tmp_path, MISSPELLED)), "gains.kpp (did you mean gains.kp?)",
                               "watchdog_timout (did you mean watchdog_timeout?)")
    top_level = write(tmp_path, f"dyn_controller:\n  ros__parameters:\n    urdf_path: {URDF}\n    kpp: 3.0\n",
                      "top.yaml")
    configure_fails(nodes_with, top_level, ControllerNode, capfd, "kpp (did you mean gains.kp?)")


def test_a_value_written_as_a_mapping_is_an_unknown_key(nodes_with, tmp_path, capfd):
    path = write(tmp_path, f"dyn_controller:\n  ros__parameters:\n    urdf_path: {URDF}\n"
                           "    gains:\n      kp: {a: 1}\n")
    configure_fails(nodes_with, path, ControllerNode, capfd, "gains.kp.a (gains.kp takes a value")
    assert_refused_in_one_line(bringup(path), "gains.kp.a")


def test_what_stays_allowed(nodes_with, tmp_path, monkeypatch):
    """A closed chain's free-form mapping.parameters.*, rclpy's own parameters, and entries for
    every node (`/**`) naming parameters of other nodes configure fine (the node finds its files on
    its process's command line, as ros2 launch and bringup pass them)."""
    path = write(tmp_path, "/**:\n  ros__parameters:\n    use_sim_time: false\n    update_rate: 1000\n"
                 "dyn_controller:\n  ros__parameters:\n    urdf_path: " + dc.bundled_urdf("five_bar") +
                 "\n    use_sim_time: false\n    gradient: {twist: false}\n"
                 "    mapping: {name: five_bar, parameters: {active_joints: [joint1, joint4], tolerance: 1.0e-12}}\n")
    monkeypatch.setattr(sys, "argv", ["controller", "--ros-args", "--params-file", path])
    node = nodes_with("--params-file", path).add(ControllerNode)
    node.trigger_configure()
    assert node.state == "inactive"
    assert check_config(path) == ([("/", "dyn_controller")], [])


UPPER_BOUNDS = [  # (node, key as written, value, parameter named)
    (ControllerNode, "dyn_controller", "gains:\n      kp: 1.0e300", "gains.kp"),
    (ControllerNode, "dyn_controller", "gains:\n      kd: [1.0e300]", "gains.kd"),
    (ControllerNode, "dyn_controller", "rate_hz: 1.0e9", "rate_hz"),
    (SimulatorNode, "dyn_simulator", "rate_hz: 1.0e9", "rate_hz"),
    (SimulatorNode, "dyn_simulator", "command_timeout: 1.0e9", "command_timeout"),
]


@pytest.mark.parametrize("node_class, name, text, parameter", UPPER_BOUNDS, ids=lambda x: str(x)[:20])
def test_gains_and_rates_have_upper_bounds(nodes_with, tmp_path, capfd, node_class, name, text, parameter):
    path = write(tmp_path, f"{name}:\n  ros__parameters:\n    urdf_path: {URDF}\n    {text}\n")
    configure_fails(nodes_with, path, node_class, capfd, f"parameter {parameter}: must be in [")
    assert_refused_in_one_line(bringup(path), parameter, "must be in [")


def test_an_upper_bound_refuses_a_set(nodes_with):
    nodes = nodes_with()
    node = nodes.add(ControllerNode, parameter_overrides=[rclpy.parameter.Parameter("urdf_path", value=URDF)])
    for value in (1e300, [1e300] * 7):
        result = node.set_parameters([rclpy.parameter.Parameter("gains.kp", value=value)])[0]
        assert not result.successful and result.reason
    assert node.get_parameter("gains.kp").value == 400.0


UNREADABLE = {
    "binary": (bytes(range(256)) * 4, "not a text file"),
    "broken YAML": ("dyn_controller:\n  ros__parameters:\n    gains: {kp: [400\n", "not valid YAML"),
    "a top-level list": ("- dyn_controller\n- dyn_simulator\n", "found a list"),
    "a list of mixed types": ("dyn_controller:\n  ros__parameters:\n    gains:\n      kp: [400, \"a\", true]\n",
                              "a list must hold one type"),
    "a value before ros__parameters": ("dyn_controller:\n  rate_hz: 5.0\n", "dyn_controller/rate_hz"),
}


@pytest.mark.parametrize("case", UNREADABLE)
def test_an_unreadable_file_gives_exit_code_2_and_one_line(tmp_path, case):
    content, words = UNREADABLE[case]
    assert_refused_in_one_line(bringup(write(tmp_path, content), timeout=30), words)
