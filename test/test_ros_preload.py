"""Start-up: the kernels a node preloads on the bundled robots are the ones its configure calls on
another robot (Numba compiles per argument type), nothing compiles once the loops run, and the
bringup's discovery profile is applied to its own participant only.

Each case runs in a fresh process (nothing compiled or loaded before), sharing the suite's Numba
cache: a compile or a cache load shows as a new overload of a dispatcher.
"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

import ros_harness  # noqa: F401  (own DDS domain)
from oracles import robot_urdf

from dyn_control.nodes import discovery
from dyn_control.robots import config_dir

# the start of both scripts below: `added` records every kernel signature compiled or loaded
RECORD_COMPILES = r"""
import json, sys, threading, time
import rclpy
from numba.core.dispatcher import Dispatcher
added = []
add_overload = Dispatcher.add_overload
def recording(self, cres):
    added.append(self.py_func.__qualname__)
    return add_overload(self, cres)
Dispatcher.add_overload = recording
"""

PROBE = RECORD_COMPILES + r"""
from dyn_control.nodes import controller, preload, simulator
kind, params = sys.argv[1], sys.argv[2]
node_class = controller.ControllerNode if kind == "controller" else simulator.SimulatorNode
rclpy.init(args=["--ros-args", "--params-file", params, "-r", f"__node:=dyn_{kind}"])
node = node_class()
node.preload_kernels().join()
preloaded = len(added)
added.clear()
node.trigger_configure()
print(json.dumps({"state": node.state, "preloaded": preloaded, "configure_added": added}))
"""


def probe(kind, parameter_file):
    """Preload in a fresh node process of `kind`, then configure it from `parameter_file`."""
    result = subprocess.run([sys.executable, "-c", PROBE, kind, parameter_file], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kind", ["controller", "simulator"])
def test_configure_on_another_tree_robot_compiles_nothing_after_the_preload(tmp_path, kind):
    parameters = {"urdf_path": robot_urdf("panda")}       # 9 joints, other names and inertias
    if kind == "controller":
        parameters["joints"] = [f"panda_joint{k}" for k in range(1, 8)]
    result = probe(kind, ros_harness.write_parameter_file(tmp_path / "params.yaml", {f"dyn_{kind}": parameters}))
    assert result["state"] == "inactive"
    assert result["preloaded"] > 0          # the preload did load (or compile) kernels itself
    assert result["configure_added"] == []


@pytest.mark.parametrize("kind", ["controller", "simulator"])
def test_configure_of_a_closed_chain_compiles_nothing_after_the_preload(kind):
    result = probe(kind, os.path.join(config_dir(), "five_bar_demo.yaml"))
    assert result["state"] == "inactive"
    assert result["preloaded"] > 0
    assert result["configure_added"] == []


LOOPS = RECORD_COMPILES + r"""
from rclpy.executors import MultiThreadedExecutor
from dyn_control.nodes import controller, simulator
rclpy.init(args=["--ros-args", "--params-file", sys.argv[1]])
nodes = [controller.ControllerNode(), simulator.SimulatorNode()]
for node in nodes:
    node.preload_kernels().join()
executor = MultiThreadedExecutor()
for node in nodes:
    executor.add_node(node)
threading.Thread(target=executor.spin, daemon=True).start()
for node in nodes:
    node.trigger_configure()
configured = len(added)
for node in nodes:
    node.trigger_activate()
time.sleep(1.5)
ticks = nodes[0]._configured.tick
commanded = nodes[1]._configured.robot.command_time is not None
for node in nodes:
    node.trigger_deactivate()
print(json.dumps({"loop_added": added[configured:], "ticks": ticks, "commanded": commanded}))
sys.stdout.flush()
import os; os._exit(0)
"""


@pytest.mark.parametrize("config", ["demo.yaml", "five_bar_demo.yaml"])
def test_the_running_loops_compile_nothing(config):
    """The controller and the simulator, preloaded and configured, then running their loops
    against each other (joint states and commands taken raw and parsed): no kernel is compiled or
    loaded once the loops run."""
    result = subprocess.run([sys.executable, "-c", LOOPS, os.path.join(config_dir(), config)], capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout.strip().splitlines()[-1])
    assert run["ticks"] > 500 and run["commanded"]     # both loops ran on each other's messages
    assert run["loop_added"] == []


def test_the_discovery_profile_is_set_only_within_and_names_the_announcement_period():
    os.environ.pop(discovery.PROFILES_VARIABLE, None)
    with discovery.announcing_often():
        path = os.environ[discovery.PROFILES_VARIABLE]
        root = ElementTree.parse(path).getroot()
    assert discovery.PROFILES_VARIABLE not in os.environ and not os.path.exists(path)
    namespace = {"dds": "http://www.eprosima.com"}
    period = root.find(".//dds:leaseAnnouncement", namespace)
    participant = root.find(".//dds:participant", namespace)
    assert participant.get("is_default_profile") == "true"
    assert int(period.find("dds:sec", namespace).text) == 0
    assert int(period.find("dds:nanosec", namespace).text) == discovery.ANNOUNCEMENT_PERIOD_NS


def test_a_profiles_file_of_the_user_is_left_alone(monkeypatch, tmp_path):
    mine = tmp_path / "mine.xml"
    monkeypatch.setenv(discovery.PROFILES_VARIABLE, str(mine))
    with discovery.announcing_often():
        assert os.environ[discovery.PROFILES_VARIABLE] == str(mine)
    assert os.environ[discovery.PROFILES_VARIABLE] == str(mine)
