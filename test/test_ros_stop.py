"""A safe stop, as `ros2 launch` stops the nodes: each node in its own process (`ros2 run`'s
`python -m dyn_control.nodes.<node>` with autostart), ended by SIGINT.

The simulator is stopped first, so that the controller's last joint state is one of the simulator's
last /joint_states messages (recorded here); then SIGINT to the controller must leave, as the last
command on the command topic, the safe command at that state exactly, g(q) clipped to the effort limits
(Pinocchio; no velocity term: the robot holds this command), with exit code 0 and no traceback. A
SIGINT during the first configure (the Numba kernels compiling into an empty cache) ends the process
within seconds. A bringup whose controller was shut down from outside meanwhile ends without an
error.
"""
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pinocchio as pin
import pytest
import rclpy
import ros_harness  # noqa: F401  (this process's own ROS domain)
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

import dyn_control as dc
from dyn_control.nodes import qos
from dyn_control.nodes.bringup import bringup
from ros_harness import write_parameter_file

pytestmark = pytest.mark.ros

URDF = dc.bundled_urdf("arm7")
Q0 = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
LAST_STATES = 20    # the simulator's last 20 ms


def start(kind, params, env=None):
    return subprocess.Popen([sys.executable, "-m", f"dyn_control.nodes.{kind}", "--ros-args", "--params-file",
                             params], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def end(process, timeout=10.0):
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out + err


def test_sigint_leaves_the_safe_command_and_exits_cleanly(tmp_path):
    params = write_parameter_file(tmp_path / "params.yaml", {
        "dyn_controller": {"urdf_path": URDF, "autostart": True, "reference.type": "sine",
                           "reference.amplitude": 0.2},
        "dyn_simulator": {"urdf_path": URDF, "autostart": True, "initial_positions": Q0}})
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("stop_watcher", context=context)
    commands = qos.PolledSubscription(node, Float64MultiArray, "/effort_controller/commands", qos.recording(5000))
    states = qos.PolledSubscription(node, JointState, "/joint_states", qos.recording(5000))
    controller = start("controller", params)
    simulator = start("simulator", params)
    # the simulator's joint states, drained every 2 ms: Fast DDS may drop a writer's samples from a
    # reader's queue once that writer is gone, so they are taken while it still publishes
    last = []
    draining = threading.Event()

    def drain_states():
        while not draining.wait(0.002):
            last.extend(iter(states.take, None))
    drainer = threading.Thread(target=drain_states, daemon=True)
    drainer.start()
    try:
        received = []
        deadline = time.monotonic() + 120.0
        while (len(received) < 500 or not last) and time.monotonic() < deadline:   # (discovery of both)
            received += [m.data for m in iter(commands.take, None)]
            time.sleep(0.05)
        assert len(received) >= 500 and last, "the loop never closed"
        sim_code, sim_output = end(simulator)
        time.sleep(0.3)          # the controller goes to safe mode on the last joint state
        draining.set()
        drainer.join()
        last.extend(iter(states.take, None))
        code, output = end(controller)
        time.sleep(0.2)
        received += [m.data for m in iter(commands.take, None)]
    finally:
        for process in (controller, simulator):
            if process.poll() is None:
                process.kill()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    assert (code, sim_code) == (0, 0), output + sim_output
    assert "Traceback" not in output and "Traceback" not in sim_output, output + sim_output
    model = pin.buildModelFromUrdf(URDF)
    limits = np.asarray(dc.load_urdf(URDF).effort_limit)
    # the controller's last state is one of the simulator's last few: a writer that leaves may take its
    # final samples with it from a reader's queue (the controller's as this process's)
    final = last[-LAST_STATES:]
    safe = [np.clip(pin.computeGeneralizedGravity(model, model.createData(), np.array(m.position)), -limits, limits)
            for m in final]
    errors = [np.abs(received[-1] - g).max() for g in safe]
    best = int(np.argmin(errors))
    np.testing.assert_allclose(received[-1], safe[best], rtol=1e-9, atol=1e-9,
                               err_msg=f"g(q) of the closest of the last {len(final)} joint states")


def test_sigint_during_the_first_configure_ends_the_process_promptly(tmp_path):
    params = write_parameter_file(tmp_path / "params.yaml", {"dyn_controller": {"urdf_path": URDF, "autostart": True}})
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "empty_cache"))
    controller = start("controller", params, env)
    time.sleep(3.0)          # configuring: the kernels compile for tens of seconds into the empty cache
    assert controller.poll() is None
    signalled = time.monotonic()
    code, output = end(controller, timeout=30.0)
    assert time.monotonic() - signalled < 5.0, "SIGINT took longer than launch's 5 s before SIGTERM"
    assert code == 0, output
    assert "Traceback" not in output, output


class ShutdownElsewhere:
    """A bringup monitor that, 1 s into the run, shuts the controller down from outside the bringup
    (lifecycle shutdown from active, as `ros2 lifecycle set /dyn_controller shutdown` does) and
    keeps the answer."""

    def start(self, node):
        from lifecycle_msgs.srv import ChangeState
        self.client = node.create_client(ChangeState, "/dyn_controller/change_state")
        self.request = ChangeState.Request()
        self.request.transition.id = 7      # lifecycle_msgs/Transition TRANSITION_ACTIVE_SHUTDOWN
        self.answer = None

    def status(self, phase, elapsed):
        if phase == "run" and elapsed >= 1.0 and self.answer is None:
            self.answer = self.client.call_async(self.request)

    def stop(self):
        pass


def test_a_controller_shut_down_elsewhere_ends_the_bringup_without_an_error(tmp_path, capsys):
    """At its end the bringup deactivates the controllers it activated; one that was shut down by
    someone else meanwhile is no failure: the bringup says it was already finalized."""
    monitor = ShutdownElsewhere()
    params = write_parameter_file(tmp_path / "params.yaml", {"dyn_controller": {"urdf_path": URDF},
                                                             "dyn_simulator": {"urdf_path": URDF}})
    code = bringup(params, 3.0, monitor)
    output = capsys.readouterr()
    assert monitor.answer is not None and monitor.answer.done() and monitor.answer.result().success, \
        "the controller was not shut down from outside"
    assert code == 0, output
    assert "bringup: dyn_controller was already finalized, not active" in output.out, output
    assert "failed to deactivate" not in output.err, output.err
