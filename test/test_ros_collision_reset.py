"""A collision's life over DDS, as an operator meets it: `dyn-control bringup` runs the controller
(the demo's sine, collision detection on, reaction `stop`) and the MuJoCo simulator in processes of
their own; a 30 N impulse of 50 ms on link 4 collides. This process then, through the controller's
interfaces only: reads the event on ~/collision and, timed from it (the simulated time lags the wall
clock on a loaded machine), sends a reference on ~/reference (refused while collided, counted),
calls ~/reset_collision (accepted; a second call has nothing to reset), and
judges by the simulated robot's own /joint_states that the arm rests while collided and moves
again after the reset, and by the commands that no switch steps the torque above the rate limit.
"""
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectoryPoint

import dyn_control as dc
from dyn_control.nodes import qos
from oracles import force_across_link_4
from ros_harness import RecordingMonitor, bringup, write_parameter_file

pytestmark = pytest.mark.ros

URDF = dc.bundled_urdf("arm7")
Q0 = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
PUSH = 3.0                  # [s] of simulated time
# [s] after the collision event reached this process
REFUSED_AT, RESET_AT, SECOND_RESET_AT = 0.5, 1.5, 2.0
RUN_TIME = PUSH + 7.0
RATE_HZ, RATE_LIMIT = 1000.0, 1000.0    # the defaults: 1 N m per tick
WATCHDOG = 0.05


class CollisionMonitor(RecordingMonitor):
    """Records the loop, the ~/collision events and every command (values with their DDS source
    timestamps), and acts at set times of the run (module docstring)."""

    def __init__(self):
        super().__init__()
        self.events, self.commands, self.resets, self.acted = [], [], [], {}
        self.collided_at = None     # elapsed [s] of the run when the first event arrived

    def start(self, node):
        super().start(node)
        self.node = node
        self.collision = qos.PolledSubscription(node, DiagnosticArray, "/dyn_controller/collision", qos.recording(100))
        self.command_sub = qos.PolledSubscription(node, Float64MultiArray, "/effort_controller/commands",
                                                  qos.recording(20000))
        self.reference = node.create_publisher(JointTrajectoryPoint, "/dyn_controller/reference", 10)
        self.reset = node.create_client(Trigger, "/dyn_controller/reset_collision")

    def _take(self):
        self.events += [status for msg in iter(self.collision.take, None) for status in msg.status]
        while (taken := self.command_sub.take_with_info()) is not None:
            self.commands.append((taken[1]["source_timestamp"], list(taken[0].data)))

    def _call_reset(self):
        future = self.reset.call_async(Trigger.Request())
        deadline = time.monotonic() + 5.0
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        response = future.result()
        self.resets.append((time.time_ns(), response.success, response.message))

    def status(self, phase, elapsed):
        super().status(phase, elapsed)
        self._take()
        if phase != "run":
            return
        if self.collided_at is None:
            if self.events:
                self.collided_at = elapsed
            return
        since = elapsed - self.collided_at
        if since > REFUSED_AT and "reference" not in self.acted:
            self.acted["reference"] = time.time_ns()
            self.reference.publish(JointTrajectoryPoint(positions=list(Q0)))
        for name, at in (("reset", RESET_AT), ("second reset", SECOND_RESET_AT)):
            if since > at and name not in self.acted:
                self.acted[name] = time.time_ns()
                self._call_reset()

    def stop(self):
        super().stop()
        self._take()


def test_a_collision_is_reported_holds_refuses_references_and_resets(tmp_path):
    controller = {"urdf_path": URDF, "rate_hz": RATE_HZ, "torque_rate_limit": [RATE_LIMIT],
                  "reference.type": "sine", "reference.amplitude": 0.3, "reference.frequency": 0.5,
                  "estimator.gain": 300.0, "collision.enabled": True, "collision.lower_threshold": [1.0],
                  "collision.upper_threshold": [3.0], "collision.reaction": "stop", "state_publish_period": 5}
    simulator = {"urdf_path": URDF, "backend": "mujoco", "initial_positions": Q0,
                 "external_wrench.schedule.start": [PUSH], "external_wrench.schedule.end": [PUSH + 0.05],
                 "external_wrench.schedule.frame": ["arm7_link5"],
                 "external_wrench.schedule.force": force_across_link_4(URDF, Q0, 30.0).tolist()}
    monitor = CollisionMonitor()
    code = bringup(write_parameter_file(tmp_path / "params.yaml",
                                        {"dyn_controller": controller, "dyn_simulator": simulator}), RUN_TIME, monitor)
    assert code == 0
    r = monitor.recorder
    diagnostics = next(v for name, v in r.diagnostics.items() if name.endswith("control loop"))
    print(diagnostics, monitor.resets)
    # the commands' steps are the controller's whatever the machine does: the switch into the
    # reaction and back out after the reset included
    times, values = zip(*sorted(monitor.commands))
    steps = np.abs(np.diff(np.array(values), axis=0)).max()
    assert steps <= RATE_LIMIT / RATE_HZ + 1e-9, f"a command step of {steps:.3g} N m"
    # the service answers whatever the machine does
    assert len(monitor.resets) == 2, f"collision events {[e.message for e in monitor.events]}, resets {monitor.resets}"
    (_, first, first_message), (_, second, second_message) = monitor.resets
    assert first, first_message
    assert not second and second_message == "no collision to reset"
    sources = np.sort(r.source_times("joint_states"))
    gaps = [(a, b) for t in (sources, np.array(sorted(times))) for a, b in zip(t[:-1], t[1:])
            if b - a > WATCHDOG * 1e9]
    if gaps:      # a stalled loop brakes the simulated robot: its brakes are an external torque too
        pytest.skip(f"the machine stalled the loop over the watchdog (DDS source timestamps): {gaps}")
    collisions = [e for e in monitor.events if any(kv.key == "level" and kv.value == "collision" for kv in e.values)]
    assert len(collisions) == 1, [e.message for e in monitor.events]
    event = {kv.key: kv.value for kv in collisions[0].values}
    assert (event["joint"], event["link"]) == ("arm7_joint4", "arm7_link4")
    assert abs(float(event["residual arm7_joint4"])) > 3.0
    assert diagnostics["collisions"] == "1" and diagnostics["rejected references"] == "1"
    assert diagnostics["collided"] == "False"
    # the simulated robot: at rest while collided, moving with the sine again after the reset
    t, v = r.source_times("joint_states"), r.values("joint_states", 1)
    onset = r.source_times("applied_wrench")[np.linalg.norm(r.values("applied_wrench")[:, 3:], axis=1) > 0].min()
    reset = monitor.acted["reset"]      # the call sent (the arm may move before the answer is back)
    held = (t > onset + 1.0e9) & (t < reset)
    resumed = t > reset + 1.5e9
    assert held.sum() > 100 and resumed.sum() > 100
    print(f"speed while collided {np.abs(v[held]).max():.4f} rad/s, after the reset {np.abs(v[resumed]).max():.3f}")
    assert np.abs(v[held]).max() < 0.01
    assert np.abs(v[resumed]).max() > 0.3       # the sine's peak speed is 0.94 rad/s
