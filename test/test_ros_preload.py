"""Start-up: the kernels a node preloads on the bundled robots are the ones its configure calls on
another robot (Numba compiles per argument type), and the bringup's discovery profile is applied to
its own participant only.

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

from dyn_control.nodes import cli
from dyn_control.robots import config_dir

PROBE = r"""
import json, sys
import rclpy
from numba.core.dispatcher import Dispatcher
added = []
add_overload = Dispatcher.add_overload
def recording(self, cres):
    added.append(self.py_func.__qualname__)
    return add_overload(self, cres)
Dispatcher.add_overload = recording
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


def test_the_discovery_profile_is_set_only_within_and_names_the_announcement_period():
    os.environ.pop(cli.PROFILES_VARIABLE, None)
    with cli._announcing_often():
        path = os.environ[cli.PROFILES_VARIABLE]
        root = ElementTree.parse(path).getroot()
    assert cli.PROFILES_VARIABLE not in os.environ and not os.path.exists(path)
    namespace = {"dds": "http://www.eprosima.com"}
    period = root.find(".//dds:leaseAnnouncement", namespace)
    participant = root.find(".//dds:participant", namespace)
    assert participant.get("is_default_profile") == "true"
    assert int(period.find("dds:sec", namespace).text) == 0
    assert int(period.find("dds:nanosec", namespace).text) == cli.ANNOUNCEMENT_PERIOD_NS


def test_a_profiles_file_of_the_user_is_left_alone(monkeypatch, tmp_path):
    mine = tmp_path / "mine.xml"
    monkeypatch.setenv(cli.PROFILES_VARIABLE, str(mine))
    with cli._announcing_often():
        assert os.environ[cli.PROFILES_VARIABLE] == str(mine)
    assert os.environ[cli.PROFILES_VARIABLE] == str(mine)
