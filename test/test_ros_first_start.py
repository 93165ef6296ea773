"""The first start: services answer while a first configure compiles, and an installed package
starts with its loop kernels in the Numba cache (its install step compiled them).

Each node runs in a process of its own with a Numba cache of the test's own (an empty folder, or
the installed copy's), never the suite's.
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import rclpy
import ros_harness  # noqa: F401  (this process's own ROS domain)
from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetAvailableTransitions, GetState
from numba import njit
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, ListParameters, SetParameters
from rclpy.executors import SingleThreadedExecutor

import dyn_control as dc
from dyn_control.nodes import lifecycle, preload
from compile_events import RECORDER
from ros_harness import write_parameter_file

pytestmark = pytest.mark.ros

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ANSWER_TIMEOUT = 10.0     # [s] for an answer; a first configure of the simulator compiles for ~30 s of CPU
CONFIGURE_TIMEOUT = 600.0

# the simulator's node process (lifecycle.spin) without its preload: the whole compile then runs
# inside the configure transition, on an executor thread
NODE_WITHOUT_PRELOAD = r"""
import sys
from dyn_control.nodes import lifecycle, simulator
simulator.SimulatorNode.preload_kernels = lambda self: None
lifecycle.spin(simulator.SimulatorNode, sys.argv[1:])
"""


class _Client:
    """This process's node and an executor spinning it on a thread of its own."""

    def __init__(self):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node("first_start_client", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def client(self, kind, name):
        client = self.node.create_client(kind, name)
        assert client.wait_for_service(timeout_sec=60.0), f"{name} never appeared"
        return client

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)
        self.thread.join(2.0)


def answer(future, timeout):
    """The result of `future`, waiting up to `timeout` seconds (None: no answer)."""
    deadline = time.monotonic() + timeout
    while not future.done() and time.monotonic() < deadline:
        time.sleep(0.01)
    return future.result() if future.done() else None


def double(name, value):
    return Parameter(name=name, value=ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value))


def test_lifecycle_and_parameter_services_answer_while_a_first_configure_compiles(tmp_path):
    params = write_parameter_file(tmp_path / "params.yaml", {
        "dyn_simulator": {"urdf_path": dc.bundled_urdf("arm7"), "command_timeout": 0.1}})
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "empty_cache"))
    process = subprocess.Popen([sys.executable, "-c", NODE_WITHOUT_PRELOAD, "--ros-args", "--params-file", params],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    client = _Client()
    try:
        change_state = client.client(ChangeState, "/dyn_simulator/change_state")
        get_state = client.client(GetState, "/dyn_simulator/get_state")
        transitions = client.client(GetAvailableTransitions, "/dyn_simulator/get_available_transitions")
        get_parameters = client.client(GetParameters, "/dyn_simulator/get_parameters")
        list_parameters = client.client(ListParameters, "/dyn_simulator/list_parameters")
        set_parameters = client.client(SetParameters, "/dyn_simulator/set_parameters")
        configure = change_state.call_async(ChangeState.Request(
            transition=Transition(id=Transition.TRANSITION_CONFIGURE)))
        # each request waits for its answer; each answer must come while the configure still runs
        requests = {
            "get_state": lambda: get_state.call_async(GetState.Request()),
            "get_available_transitions": lambda: transitions.call_async(GetAvailableTransitions.Request()),
            "get_parameters": lambda: get_parameters.call_async(GetParameters.Request(names=["command_timeout",
                                                                                             "rate_hz"])),
            "list_parameters": lambda: list_parameters.call_async(ListParameters.Request()),
            # a live parameter is stored (read on activate); one read on configure is refused while it runs
            "set_parameters": lambda: set_parameters.call_async(SetParameters.Request(
                parameters=[double("command_timeout", 0.25)])),
            "set_parameters (configure phase)": lambda: set_parameters.call_async(SetParameters.Request(
                parameters=[double("rate_hz", 500.0)])),
        }
        answers = {}
        for name, request in requests.items():
            answers[name] = answer(request(), ANSWER_TIMEOUT)
            assert answers[name] is not None, f"{name}: no answer within {ANSWER_TIMEOUT} s"
            assert not configure.done(), f"{name} answered only after the configure (too short a compile to tell)"
        assert answers["get_state"].current_state.id == State.TRANSITION_STATE_CONFIGURING
        assert answers["get_available_transitions"] is not None
        values = answers["get_parameters"].values
        assert (values[0].double_value, values[1].double_value) == (0.1, 1000.0)
        assert "command_timeout" in answers["list_parameters"].result.names
        assert answers["set_parameters"].results[0].successful
        refused = answers["set_parameters (configure phase)"].results[0]
        assert not refused.successful and "rate_hz is read on configure" in refused.reason
        configured = answer(configure, CONFIGURE_TIMEOUT)
        assert configured is not None and configured.success
        state = answer(get_state.call_async(GetState.Request()), ANSWER_TIMEOUT).current_state
        assert state.id == State.PRIMARY_STATE_INACTIVE
        values = answer(get_parameters.call_async(GetParameters.Request(names=["command_timeout", "rate_hz"])),
                        ANSWER_TIMEOUT).values
        assert (values[0].double_value, values[1].double_value) == (0.25, 1000.0)
    finally:
        client.close()
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        output = process.communicate(timeout=30.0)[0]
    assert process.returncode == 0, output
    assert "Traceback" not in output, output


class _Entity:
    """A stand-in for an rclpy service (srv_type) or timer (none) in a callback group."""

    def __init__(self, srv_type=None):
        self.srv_type = srv_type


def test_the_default_group_lets_only_parameter_sets_beside_a_configure():
    from rcl_interfaces.srv import SetParametersAtomically
    state = {"configuring": False}
    group = lifecycle._OneAtATimeButConfigure(lambda: state["configuring"])
    change_state, timer = _Entity(ChangeState), _Entity()
    sets = [_Entity(SetParameters), _Entity(SetParametersAtomically)]
    # an activate (or any transition but configure) runs: nothing beside it
    assert group.beginning_execution(change_state)
    assert not any(group.can_execute(entity) for entity in [timer, change_state] + sets)
    # a configure runs: one parameter set at a time beside it, nothing else
    state["configuring"] = True
    assert not group.can_execute(timer) and not group.can_execute(change_state)
    assert all(group.can_execute(entity) for entity in sets)
    assert group.beginning_execution(sets[0])
    assert not group.beginning_execution(sets[1]) and not group.beginning_execution(timer)
    # the configure ends while the set runs: no transition starts before the set ends
    state["configuring"] = False
    group.ending_execution(change_state)
    assert not group.can_execute(change_state) and not group.can_execute(timer)
    group.ending_execution(sets[0])
    assert group.can_execute(change_state) and group.can_execute(timer)
    # a parameter set runs: a configure waits for it
    assert group.beginning_execution(sets[1])
    assert not group.beginning_execution(change_state)


def test_progress_counts_the_functions_numba_compiles_and_not_its_cache_loads(monkeypatch):
    monkeypatch.setattr(preload, "PROGRESS_PERIOD", 0.01)
    lines = []

    @njit
    def slow_to_compile(x):
        total = 0.0
        for k in range(x.shape[0]):
            total += np.sin(x[k]) * np.cos(x[k]) + np.sqrt(abs(x[k]))
        return total

    with preload.progress(lines.append, "test") as compiles:
        slow_to_compile(np.ones(3))           # compiles the float64 array signature
        slow_to_compile(np.ones(4))           # the same signature: no compile
        time.sleep(0.05)
    assert compiles.count == len(slow_to_compile.signatures) == 1
    assert compiles.latest.endswith("slow_to_compile")
    # at once: that it compiles, roughly for how long and how to avoid it; then the progress
    assert "compiling them now" in lines[0] and "dyn-control compile" in lines[0]
    assert lines[-1].startswith("test: ") and "compiled 1 functions" in lines[-1]
    lines.clear()
    time.sleep(0.05)
    assert lines == []                        # no report once out of the block


# a node process of an installed copy: preload and configure from its share folder's config, every
# Numba compile recorded (a load from the cache is none)
INSTALLED_NODE = RECORDER + r"""
import json, sys
import rclpy
import dyn_control
from dyn_control.nodes import simulator
from dyn_control.robots import config_dir

rclpy.init(args=["--ros-args", "--params-file", config_dir() + "/demo.yaml"])
node = simulator.SimulatorNode()
node.preload_kernels().join()
node.trigger_configure()
print(json.dumps({"package": dyn_control.__file__, "config": config_dir(), "state": node.state,
                  "compiled": Compiles.names}))
"""


def _read_only_mount_works():
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind / / 2>/dev/null && mount -o remount,bind,ro / "
                            "/ && true"], capture_output=True)
    return probe.returncode == 0


def test_the_install_step_fills_the_cache_that_the_installed_nodes_use(tmp_path):
    """`setup.py install` (as colcon build runs it) of a copy of the sources: its compile step (the
    simulator's kernels only here, DYN_CONTROL_COMPILE: about 30 s of CPU) puts them in the
    installed copy's kernel cache (no NUMBA_CACHE_DIR: __kernel_cache__ beside the installed
    modules), and a node process of the installed copy then preloads and configures the demo's
    simulator with no compile at all; so it does where the install tree is read-only at run time
    (a read-only bind mount, where the platform allows one), its user cache left empty."""
    prefix, build = tmp_path / "install", tmp_path / "build"
    build.mkdir()
    env = {name: value for name, value in os.environ.items() if name not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    # the arguments colcon build passes (colcon_core's python build task)
    install = subprocess.run([sys.executable, "setup.py", "egg_info", "--egg-base", str(build),
                              "build", "--build-base", str(build / "build"),
                              "install", "--prefix", str(prefix), "--record", str(build / "files"),
                              "--single-version-externally-managed"], cwd=REPOSITORY,
                             env=dict(env, DYN_CONTROL_COMPILE="simulator"), capture_output=True, text=True,
                             timeout=600)
    assert install.returncode == 0, install.stdout + install.stderr
    assert "done in" in install.stdout, install.stdout + install.stderr        # the compile step ran
    site = prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    cached = [name for _, _, files in os.walk(site / "dyn_control") for name in files if name.endswith(".nbi")]
    assert cached, "no Numba index beside the installed modules"
    node = subprocess.run([sys.executable, "-c", INSTALLED_NODE], cwd=tmp_path, capture_output=True, text=True,
                          env=dict(env, PYTHONPATH=str(site), AMENT_PREFIX_PATH=str(prefix)), timeout=600)
    assert node.returncode == 0, node.stderr
    result = json.loads(node.stdout.strip().splitlines()[-1])
    assert result["package"].startswith(str(site)) and result["config"].startswith(str(prefix))
    assert result["state"] == "inactive"
    assert result["compiled"] == []
    if not _read_only_mount_works():
        print("read-only install tree not tried: this platform refuses a private read-only bind mount (unshare -m)")
        return
    user_cache = tmp_path / "user_cache"
    read_only = (f"mount --bind {prefix} {prefix} && mount -o remount,bind,ro {prefix} && "
                 f"exec {sys.executable} -c \"$NODE\"")
    node = subprocess.run(["unshare", "-m", "sh", "-c", read_only], cwd=tmp_path, capture_output=True, text=True,
                          env=dict(env, NODE=INSTALLED_NODE, PYTHONPATH=str(site), AMENT_PREFIX_PATH=str(prefix),
                                   XDG_CACHE_HOME=str(user_cache)), timeout=600)
    assert node.returncode == 0, node.stderr
    result = json.loads(node.stdout.strip().splitlines()[-1])
    assert result["state"] == "inactive"
    assert result["compiled"] == []
    written = [name for _, _, files in os.walk(user_cache) for name in files]
    assert written == []
