"""Acceptance: the controller's safety rules, each with an injected fault, judged by the effort it
publishes on the command topic.

The controller (dyn_controller, arm7, hold reference, 500 Hz) runs in this process on its loop
thread, spun by a MultiThreadedExecutor; a test node publishes /joint_states at 200 Hz (a constant
state, or faulty messages) and reads /effort_controller/commands and /diagnostics over DDS.
Expected efforts come from Pinocchio: computed torque rnea(q, v, kp (q_d - q) - kd v) for a valid
state, g(q) at the last state in safe mode (no velocity term), both clipped to the URDF effort
limits. The re-engagement blend and the torque-rate limit are off here (test_ros_faults.py judges
them on a moving simulated robot), so every command is one of those two.
"""
import subprocess
import sys
import threading
import time

import numpy as np
import pinocchio as pin
import pytest
import ros_harness  # noqa: F401  (this process's own ROS domain)
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.executors import MultiThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectoryPoint

import dyn_control as dc
from dyn_control.nodes import qos
from dyn_control.nodes.controller import ControllerNode
from dyn_control.nodes.controller_parameters import PARAMETERS
from oracles import OURS_FROM_PIN_PARAM

pytestmark = pytest.mark.ros

URDF = dc.bundled_urdf("arm7")
MODEL = dc.load_urdf(URDF)
JOINTS = list(MODEL.joint_names)
HOLD = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
Q = HOLD + np.array([0.02, -0.03, 0.01, 0.02, -0.01, 0.03, 0.02])   # the published state
V = np.array([0.1, -0.05, 0.08, 0.02, -0.1, 0.05, 0.1])
EFFORT = np.array([1.0, -20.0, 2.0, 15.0, 0.5, 1.0, 0.1])             # the "measured" effort
KP, KD = 400.0, 40.0
RATE_HZ = 500.0
WINDOW = 50
LIMITS = np.asarray(MODEL.effort_limit)
PIN_MODEL = pin.buildModelFromUrdf(URDF)
PIN_DATA = PIN_MODEL.createData()


def computed_torque(kp=KP, kd=KD, q_d=HOLD, v_d=np.zeros(7), a_d=np.zeros(7)):
    a = a_d + kp * (q_d - Q) + kd * (v_d - V)
    return np.clip(pin.rnea(PIN_MODEL, PIN_DATA, Q, V, a), -LIMITS, LIMITS)


def held_torque():
    return np.clip(pin.computeGeneralizedGravity(PIN_MODEL, PIN_DATA, Q), -LIMITS, LIMITS)


# Long enough that a loaded machine (GIL, 2 cores) never starves the 200 Hz injector past it, so only
# the watchdog tests see safe mode; they wait past it.
WATCHDOG = 0.25


def controller_parameters(**changes):
    values = {"urdf_path": URDF, "rate_hz": RATE_HZ, "gains.kp": KP, "gains.kd": KD,
              "reference.type": "hold", "reference.position": HOLD.tolist(), "watchdog_timeout": WATCHDOG,
              "safe_mode": "gravity", "safe_mode_timeout": 60.0, "gradient.period": 50,
              "gradient.window": WINDOW, "state_publish_period": 5, "reengage.duration": 0.0, "reengage.max_velocity": 100.0,
              "torque_rate_limit": 1e7}
    values.update(changes)
    return [Parameter(name, value=value) for name, value in values.items()]


class Injector:
    """The test's side of the wire: publishes joint states from a 200 Hz thread (message() gives
    each one; None: silence), reads commands, gradients and diagnostics."""

    def __init__(self, context):
        self.node = rclpy.create_node("fault_injector", context=context)
        self.joint_states = self.node.create_publisher(JointState, "/joint_states", 10)
        self.reference = self.node.create_publisher(JointTrajectoryPoint, "/dyn_controller/reference", 10)
        self.commands = qos.PolledSubscription(self.node, Float64MultiArray, "/effort_controller/commands",
                                               qos.recording(2000))
        self.gradients = qos.PolledSubscription(self.node, Float64MultiArray, "/dyn_controller/parameter_gradient",
                                                qos.recording(100))
        self.labels = qos.PolledSubscription(self.node, String, "/dyn_controller/parameter_labels", qos.LATCHED)
        self.joint_gradient = qos.PolledSubscription(self.node, Float64MultiArray, "/dyn_controller/joint_gradient",
                                                     qos.recording(100))
        self.joint_labels = qos.PolledSubscription(self.node, String, "/dyn_controller/joint_gradient_labels",
                                                   qos.LATCHED)
        self.diagnostics = qos.PolledSubscription(self.node, DiagnosticArray, "/diagnostics", qos.recording(100))
        self.parameters = AsyncParameterClient(self.node, "dyn_controller")
        self.message = None
        self.holding = False     # hold the joint states back, then send them all at once (late in transit)
        self.held = []
        self.burst = 0           # send this many joint states at once, the GIL held (the queue overflows)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._feed, daemon=True)
        self._thread.start()

    def _feed(self):
        while not self._stop.wait(0.005):
            message = self.message
            if message is not None:
                msg = message()
                if msg.header.stamp.sec == 0:
                    msg.header.stamp = self.node.get_clock().now().to_msg()
                if self.holding:
                    self.held.append(msg)
                    continue
                for late in self.held:
                    self.joint_states.publish(late)
                self.held = []
                if self.burst:
                    switch = sys.getswitchinterval()
                    sys.setswitchinterval(1.0)      # no other Python thread (the loop) runs meanwhile
                    for _ in range(self.burst):
                        self.joint_states.publish(msg)
                    sys.setswitchinterval(switch)
                    self.burst = 0
                self.joint_states.publish(msg)

    def close(self):
        self._stop.set()
        self._thread.join()

    def commands_for(self, seconds):
        """Every command received during the next `seconds` (after dropping the queued ones)."""
        drain(self.commands)
        time.sleep(seconds)
        return np.array([list(m.data) for m in drain(self.commands)])

    def set_parameters(self, **values):
        future = self.parameters.set_parameters([Parameter(k.replace("__", "."), value=v)
                                                 for k, v in values.items()])
        deadline = time.monotonic() + 5.0
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert future.done(), "no answer from the parameter service"
        return future.result().results


def drain(subscription):
    messages = []
    while (msg := subscription.take()) is not None:
        messages.append(msg)
    return messages


def next_message(subscription, timeout=5.0):
    """The next message to arrive (one is due every 0.1 s; a stalled machine may delay it)."""
    deadline = time.monotonic() + timeout
    while (msg := subscription.take()) is None:
        assert time.monotonic() < deadline, f"no message in {timeout} s"
        time.sleep(0.01)
    return msg


def state(positions=Q, velocities=V, names=JOINTS, effort=EFFORT):
    return JointState(name=list(names), position=list(positions), velocity=list(velocities), effort=list(effort))


def alternating(bad):
    """Valid and faulty joint states in turn, so that a propagated fault would show in the commands."""
    turn = [0]

    def message():
        turn[0] += 1
        return state() if turn[0] % 2 else bad()
    return message


@pytest.fixture(scope="module")
def ros():
    context = rclpy.Context()
    rclpy.init(context=context)
    controller = ControllerNode(context=context, parameter_overrides=controller_parameters())
    injector = Injector(context)
    executor = MultiThreadedExecutor(context=context)
    executor.add_node(controller)
    executor.add_node(injector.node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    controller.trigger_configure()
    assert controller.state == "inactive"
    # DDS discovery takes a moment: start once the controller reads the injected joint states
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline and injector.joint_states.get_subscription_count() == 0:
        time.sleep(0.05)
    assert injector.joint_states.get_subscription_count() > 0, "the controller never subscribed"
    yield controller, injector, context, executor
    injector.close()
    executor.shutdown()
    controller.destroy_node()
    injector.node.destroy_node()
    rclpy.try_shutdown(context=context)


@pytest.fixture
def active(ros):
    """The controller active with valid joint states flowing; deactivated afterwards."""
    controller, injector, _, _ = ros
    injector.message = state
    controller.trigger_activate()
    assert controller.state == "active"
    time.sleep(0.2)
    yield controller, injector
    injector.message = state
    controller.trigger_deactivate()


def assert_all_close(commands, expected, what):
    assert len(commands) > 20, f"only {len(commands)} commands received"
    assert np.isfinite(commands).all(), f"non-finite command ({what})"
    np.testing.assert_allclose(commands, np.tile(expected, (len(commands), 1)), atol=1e-8, err_msg=what)


def test_valid_state_gives_computed_torque(active):
    _, injector = active
    assert_all_close(injector.commands_for(0.3), computed_torque(), "computed torque")


@pytest.mark.parametrize("fault", ["nan_position", "inf_velocity", "wrong_length", "unknown_name", "duplicate_name"])
def test_faulty_joint_state_is_rejected_and_counted(active, fault):
    controller, injector = active
    bad = {
        "nan_position": lambda: state(positions=np.where(np.arange(7) == 2, np.nan, Q)),
        "inf_velocity": lambda: state(velocities=np.where(np.arange(7) == 5, np.inf, V)),
        "wrong_length": lambda: state(positions=Q[:6] + 0.5),
        "unknown_name": lambda: state(positions=Q + 0.5, names=JOINTS[:3] + ["bogus_joint"] + JOINTS[4:]),
        "duplicate_name": lambda: state(positions=Q + 0.5, names=JOINTS[:6] + [JOINTS[0]]),
    }[fault]
    rejected = controller.counters()["rejected joint states"]
    injector.message = alternating(bad)
    commands = injector.commands_for(0.3)
    assert_all_close(commands, computed_torque(), f"{fault}: a rejected state reached the command")
    assert controller.counters()["rejected joint states"] >= rejected + 20


def test_stale_joint_states_switch_to_safe_mode_and_back(active):
    controller, injector = active
    injector.message = None
    time.sleep(WATCHDOG + 0.1)
    assert_all_close(injector.commands_for(0.3), held_torque(), "safe mode: g(q), no velocity term")
    error = wait_for_diagnostic(injector, lambda s: s.level == DiagnosticStatus.ERROR)
    assert "safe mode" in error.message
    injector.message = state
    time.sleep(0.05)
    assert_all_close(injector.commands_for(0.3), computed_torque(), "back to computed torque")


def silence_then_state(controller, injector):
    """0.3 s without joint states, then the state again: the watchdog trips once. The counters
    before and after."""
    before = controller.counters()
    injector.message = None
    time.sleep(0.3)
    injector.message = state
    time.sleep(0.2)
    after = controller.counters()
    assert after["watchdog trips"] == before["watchdog trips"] + 1
    return before, after


def test_joint_states_late_in_transit_are_told_from_a_silent_robot(active):
    """A delivery stall: the robot's side goes on publishing, but its joint states reach the
    controller only 0.3 s later, all at once (what a DDS participant does while its discovery holds
    its receive threads). The watchdog trips all the same (the controller was blind), and the trip
    is counted as late in transit; a silence of the same length is not."""
    controller, injector = active
    key = "watchdog trips on joint states late in transit"
    before, after_silence = silence_then_state(controller, injector)
    assert after_silence[key] == before[key], "a silent robot was taken for a delivery stall"
    injector.holding = True
    time.sleep(0.3)
    held = len(injector.held)
    injector.holding = False
    time.sleep(0.2)
    after_stall = controller.counters()
    assert held >= 40, f"only {held} joint states were held back in 0.3 s"
    assert after_stall["watchdog trips"] == after_silence["watchdog trips"] + 1
    assert after_stall[key] == after_silence[key] + 1, f"{held} joint states late in transit were not told"
    assert_all_close(injector.commands_for(0.3), computed_torque(), "back to computed torque")


def test_joint_states_lost_in_transit_are_counted(active):
    """The robot's side sends 200 joint states at once after a silence, into the controller's queue
    that keeps 64 (qos.SENSOR_DATA): the publication sequence numbers show the ones pushed out. The
    trip is counted as lost in transit (and late: a full queue arrived); a silence is neither."""
    controller, injector = active
    lost, late = "watchdog trips on joint states lost in transit", "watchdog trips on joint states late in transit"
    before, after_silence = silence_then_state(controller, injector)
    assert after_silence[lost] == before[lost], "a silent robot was taken for lost joint states"
    injector.message = None
    time.sleep(0.3)
    injector.burst = 200
    injector.message = state
    time.sleep(0.2)
    after_burst = controller.counters()
    assert injector.burst == 0
    assert after_burst["watchdog trips"] == after_silence["watchdog trips"] + 1
    assert after_burst[lost] == after_silence[lost] + 1, "200 joint states into a queue of 64: none counted lost"
    assert after_burst[late] == after_silence[late] + 1
    assert_all_close(injector.commands_for(0.3), computed_torque(), "back to computed torque")


def test_stamps_that_jump_back_become_a_new_time_base_after_the_watchdog(active):
    """A simulator reset: joint states go silent, then come back with stamps 1000 s earlier. Before
    the watchdog trips they are rejected as old; after it, the controller takes the new time base
    and leaves safe mode."""
    controller, injector = active

    def reset_clock():
        msg = state()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.time_ns() - 1000 * 10 ** 9, 10 ** 9)
        return msg
    injector.message = None
    time.sleep(WATCHDOG + 0.1)
    assert_all_close(injector.commands_for(0.2), held_torque(), "safe mode after the silence")
    injector.message = reset_clock
    time.sleep(0.1)
    assert_all_close(injector.commands_for(0.3), computed_torque(), "computed torque on the new time base")
    assert controller.counters()["watchdog trips"] >= 1
    assert controller.counters()["estimator restarts after gaps"] >= 1     # at the jump back


def test_diagnostics_with_sim_time_and_no_clock():
    """use_sim_time without a /clock publisher: ROS time stands still, the diagnostics do not."""
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        controller = ControllerNode("sim_time_controller", context=context,
                                    parameter_overrides=[Parameter("use_sim_time", value=True)])
        listener = rclpy.create_node("diagnostics_listener", context=context)
        diagnostics = qos.PolledSubscription(listener, DiagnosticArray, "/diagnostics", qos.recording(100))
        executor = MultiThreadedExecutor(context=context)
        executor.add_node(controller)
        executor.add_node(listener)
        spinner = threading.Thread(target=executor.spin, daemon=True)
        spinner.start()
        deadline, seen = time.monotonic() + 6.0, 0
        while time.monotonic() < deadline and seen < 2:
            seen += sum(1 for array in drain(diagnostics) for status in array.status
                        if status.name.startswith("sim_time_controller"))
            time.sleep(0.1)
        executor.shutdown()
        controller.destroy_node()
        listener.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
    assert seen >= 2, f"{seen} diagnostics in 6 s"


def test_bad_trajectories_are_refused_and_counted(active):
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory
    controller, injector = active
    publisher = injector.node.create_publisher(JointTrajectory, "/dyn_controller/joint_trajectory", 10)

    def trajectory(names, times, positions):
        msg = JointTrajectory(joint_names=names)
        for t, p in zip(times, positions):
            msg.points.append(JointTrajectoryPoint(positions=p, time_from_start=Duration(sec=t)))
        return msg
    bad = [trajectory(["bogus_joint"], [1], [[0.0]]), trajectory([JOINTS[0]], [2, 1], [[0.0], [0.1]]),
           trajectory([JOINTS[0]], [1], [[float("nan")]]), trajectory([JOINTS[0], JOINTS[1]], [1], [[0.0]])]
    before = controller.counters()["rejected trajectories"]
    time.sleep(0.3)      # discovery of the new publisher
    for msg in bad:
        publisher.publish(msg)
    time.sleep(0.3)
    assert controller.counters()["rejected trajectories"] == before + len(bad)
    assert "~/joint_trajectory" in controller.counters()["last rejected reference or trajectory"]
    assert_all_close(injector.commands_for(0.3), computed_torque(), "the hold goes on")
    injector.node.destroy_publisher(publisher)


def test_safe_mode_zero(active):
    _, injector = active
    assert all(r.successful for r in injector.set_parameters(safe_mode="zero"))
    try:
        injector.message = None
        time.sleep(WATCHDOG + 0.1)
        assert_all_close(injector.commands_for(0.2), np.zeros(7), "safe mode: zero")
    finally:
        assert all(r.successful for r in injector.set_parameters(safe_mode="gravity"))


def test_safe_mode_final_silent_then_zero(active):
    """Stale for safe_mode_timeout: silent (no command: the robot's own timeout brakes it), or zero
    effort; /diagnostics say which."""
    _, injector = active
    assert all(r.successful for r in injector.set_parameters(safe_mode_timeout=WATCHDOG + 0.1))
    try:
        injector.message = None
        time.sleep(WATCHDOG + 0.2)
        assert len(injector.commands_for(0.2)) == 0, "commands went on after safe_mode_timeout"
        error = wait_for_diagnostic(injector, lambda s: "safe_mode_timeout" in s.message or "stale for over" in
                                    s.message)
        assert error.level == DiagnosticStatus.ERROR and "silent" in error.message
        assert all(r.successful for r in injector.set_parameters(safe_mode_final="zero"))
        assert_all_close(injector.commands_for(0.2), np.zeros(7), "safe_mode_final: zero")
    finally:
        injector.set_parameters(safe_mode_timeout=60.0, safe_mode_final="silent")


def test_silent_goes_quiet_only_after_the_hold_torque_went_out(active):
    """The defaults (safe_mode_timeout = watchdog_timeout, final silent) with a real rate limit: a
    robot that holds its last command (ros2_control's forward controllers) must hold g(q_last), not
    the last tracking torque with its velocity term. So the command ramps from the tracking torque
    to Pinocchio's g(q) at the last state within the rate limit, and only then goes quiet."""
    _, injector = active
    rate_limit = 500.0      # [N m/s]: 1 N m per tick at 500 Hz
    max_step = rate_limit / RATE_HZ
    tracking, held = computed_torque(), held_torque()
    assert np.abs(tracking - held).max() > 3 * max_step, "the ramp must take several ticks to be judged"
    assert all(r.successful for r in injector.set_parameters(torque_rate_limit=[rate_limit],
                                                             safe_mode_timeout=WATCHDOG))
    try:
        drain(injector.commands)
        injector.message = None
        time.sleep(WATCHDOG + 0.5)
        commands = np.array([list(m.data) for m in drain(injector.commands)])
        assert len(injector.commands_for(0.2)) == 0, "commands went on after the hold torque went out"
        assert len(commands) > 0
        np.testing.assert_allclose(commands[-1], held, atol=1e-9, err_msg="the held command is not g(q_last)")
        ramp = commands[np.abs(commands - tracking).max(axis=1) > 1e-9]      # the commands after the last fresh one
        assert len(ramp) >= int(np.abs(tracking - held).max() / max_step), "a step to g(q) without the rate limit"
        steps = np.abs(np.diff(np.vstack([tracking, ramp]), axis=0)).max()
        assert steps <= max_step + 1e-9, f"a command step of {steps} N m above the rate limit's {max_step}"
    finally:
        injector.set_parameters(torque_rate_limit=[1e7], safe_mode_timeout=60.0)


def test_joint_states_stamped_ahead_are_refused(active):
    """A joint state stamped an hour ahead is refused and counted; the real ones go on being taken."""
    controller, injector = active

    def ahead():
        msg = state(positions=Q + 0.5)
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.time_ns() + 3600 * 10 ** 9, 10 ** 9)
        return msg
    before = controller.counters()
    injector.message = alternating(ahead)
    time.sleep(0.1)
    assert_all_close(injector.commands_for(0.3), computed_torque(), "the real joint states")
    after = controller.counters()
    key = "joint states stamped ahead of this clock"
    assert after[key] - before[key] > 10
    assert after["watchdog trips"] == before["watchdog trips"]


def test_negative_gain_is_refused_and_the_old_gains_stay(active):
    _, injector = active
    for change in ({"gains__kp": -1.0}, {"gains__kd": [40.0] * 6 + [-1.0]}, {"gains__kp": [1.0, 2.0]},
                   {"rate_hz": 250.0}, {"watchdog_timeout": 0.0}, {"safe_mode": "limp"}):
        results = injector.set_parameters(**change)
        assert not results[0].successful, f"{change} was accepted"
        assert results[0].reason
    assert_all_close(injector.commands_for(0.2), computed_torque(), "the old gains")
    assert all(r.successful for r in injector.set_parameters(gains__kp=100.0))
    try:
        assert_all_close(injector.commands_for(0.2), computed_torque(kp=100.0), "the new valid gain")
    finally:
        injector.set_parameters(gains__kp=KP)


def test_nan_reference_is_rejected(active):
    controller, injector = active
    q_d = HOLD + 0.05
    injector.reference.publish(JointTrajectoryPoint(positions=list(q_d), velocities=[0.1] * 7))
    time.sleep(0.1)
    expected = computed_torque(q_d=q_d, v_d=np.full(7, 0.1))
    assert_all_close(injector.commands_for(0.2), expected, "the reference point")
    for point in (JointTrajectoryPoint(positions=[float("nan")] * 7),
                  JointTrajectoryPoint(positions=list(q_d), accelerations=[float("inf")] * 7),
                  JointTrajectoryPoint(positions=list(q_d[:5]))):
        injector.reference.publish(point)
    time.sleep(0.1)
    assert_all_close(injector.commands_for(0.2), expected, "a faulty reference reached the command")
    assert controller.counters()["rejected references"] == 3


def test_overflowing_state_never_gives_a_non_finite_command(active):
    """v = 1e200 is finite, so accepted, but the computed torque overflows: the final check replaces
    it by the held torque g(q) (clipped to the limits), so the command stays finite."""
    controller, injector = active
    injector.message = lambda: state(velocities=np.full(7, 1e200))
    time.sleep(0.05)
    commands = injector.commands_for(0.2)
    assert np.isfinite(commands).all()
    assert_all_close(commands, held_torque(), "the held torque")
    assert controller.counters()["non-finite commands replaced"] > 0


def test_parameter_gradient_matches_the_regressor(active):
    """With a constant state the window holds WINDOW equal samples (filtered acceleration 0, torque =
    the measured effort), so the gradient is -WINDOW Y^T (effort - Y phi), Y: Pinocchio's regressor."""
    _, injector = active
    time.sleep(WINDOW / 200.0 + 0.2)
    drain(injector.gradients)
    drain(injector.joint_gradient)
    msg = next_message(injector.gradients)
    Y = pin.computeJointTorqueRegressor(PIN_MODEL, PIN_DATA, Q, V, np.zeros(7))
    Y = Y.reshape(7, 7, 10)[:, :, OURS_FROM_PIN_PARAM].reshape(7, 70)
    residual = EFFORT - pin.rnea(PIN_MODEL, PIN_DATA, Q, V, np.zeros(7))
    np.testing.assert_allclose(np.array(msg.data), -WINDOW * Y.T @ residual, rtol=1e-9, atol=1e-9)
    assert [(d.label, d.size, d.stride) for d in msg.layout.dim] == [("bodies", 7, 70), ("parameters", 10, 10)]
    labels = injector.labels.take()
    assert labels is not None and labels.data.split("\n")[:2] == ["arm7_link1/m", "arm7_link1/hx"]
    assert len(labels.data.split("\n")) == 70
    # the joint terms' block (zero in this model): -WINDOW y_i r_i, y_i = [a, v, tanh(v / v_s)], a = 0
    joint = next_message(injector.joint_gradient)
    y = np.stack([np.zeros(7), V, np.tanh(V / 1e-3)], axis=1)
    np.testing.assert_allclose(np.array(joint.data), (-WINDOW * y * residual[:, None]).reshape(-1), rtol=1e-9,
                               atol=1e-9)
    joint_labels = injector.joint_labels.take()
    assert joint_labels is not None and joint_labels.data.split("\n")[:3] == [
        "arm7_joint1/armature", "arm7_joint1/viscous", "arm7_joint1/coulomb"]


def wait_for_diagnostic(injector, accept, timeout=2.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for array in drain(injector.diagnostics):
            for status in array.status:
                if status.name.startswith("dyn_controller") and accept(status):
                    return status
        time.sleep(0.05)
    raise AssertionError("no such diagnostic from dyn_controller")


BAD_CONFIGURATIONS = {
    "broken URDF": ({"robot_description": "<robot name='broken'><link name='a'/><joint name='j' "
                     "type='revolute'><parent link='a'/><child link='missing'/></joint></robot>"},
                    "robot_description"),
    "missing file": ({"urdf_path": "/nonexistent/robot.urdf"}, "/nonexistent/robot.urdf"),
    "unknown joint": ({"joints": ["arm7_joint1", "no_such_joint"]}, "no_such_joint"),
    "unknown frame": ({"estimator.frame": "no_such_link"}, "no_such_link"),
    "negative gain": ({"gains.kp": -5.0}, "gains.kp"),
    "gain list length": ({"gains.kd": [1.0, 2.0]}, "gains.kd"),
}


@pytest.mark.parametrize("case", BAD_CONFIGURATIONS)
def test_bad_configuration_fails_configure_and_the_node_survives(ros, case, capfd):
    _, _, context, executor = ros
    changes, named = BAD_CONFIGURATIONS[case]
    node = ControllerNode("dyn_controller_bad", context=context,
                          parameter_overrides=controller_parameters(**changes))
    executor.add_node(node)
    try:
        node.trigger_configure()
        assert node.state == "unconfigured"
        assert named in capfd.readouterr().err
        # the node is alive: with the parameter fixed it configures
        defaults = {p.name: p.default for p in PARAMETERS} | {p.name: p.value for p in controller_parameters()}
        fixed = [Parameter(name, value=defaults[name]) for name in changes] + [Parameter("robot_description", value="")]
        assert all(r.successful for r in node.set_parameters(fixed))
        node.trigger_configure()
        assert node.state == "inactive"
    finally:
        executor.remove_node(node)
        node.destroy_node()


def test_a_doubtful_urdf_configures_and_its_warnings_are_logged(ros, capfd):
    """Reversed joint limits load (as urdfdom loads them), with the model's warning in the log."""
    _, _, context, executor = ros
    urdf = open(URDF).read().replace('lower="-2.8973" upper="2.8973"', 'lower="2.8973" upper="-2.8973"', 1)
    assert urdf != open(URDF).read()
    node = ControllerNode("dyn_controller_doubtful", context=context,
                          parameter_overrides=controller_parameters(robot_description=urdf))
    executor.add_node(node)
    try:
        node.trigger_configure()
        assert node.state == "inactive"
        err = capfd.readouterr().err
        assert "URDF: joint 'arm7_joint1'" in err and "above upper" in err, err
    finally:
        executor.remove_node(node)
        node.destroy_node()


def test_controlled_subset_in_the_order_of_joints(ros):
    """joints: [arm7_joint2, arm7_joint1]: the command has those two efforts in that order, per-joint
    gains follow the same order, the other joints get no feedback (their acceleration is zero)."""
    _, injector, context, executor = ros
    node = ControllerNode("dyn_controller_subset", context=context, parameter_overrides=controller_parameters(
        **{"joints": ["arm7_joint2", "arm7_joint1"], "gains.kp": [100.0, 300.0], "command_topic": "/subset/commands",
           "reference.position": [HOLD[1], HOLD[0]]}))
    commands = qos.PolledSubscription(injector.node, Float64MultiArray, "/subset/commands", qos.recording(2000))
    executor.add_node(node)
    try:
        injector.message = state
        node.trigger_configure()
        node.trigger_activate()
        assert node.state == "active"
        time.sleep(0.2)
        drain(commands)
        time.sleep(0.2)
        received = np.array([list(m.data) for m in drain(commands)])
        node.trigger_deactivate()
    finally:
        executor.remove_node(node)
        node.destroy_node()
    a = np.zeros(7)
    a[[1, 0]] = np.array([100.0, 300.0]) * (HOLD[[1, 0]] - Q[[1, 0]]) - KD * V[[1, 0]]
    expected = np.clip(pin.rnea(PIN_MODEL, PIN_DATA, Q, V, a), -LIMITS, LIMITS)[[1, 0]]
    assert_all_close(received, expected, "subset command")


FLOOD = """
import sys, time, rclpy
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
names, rate, seconds = sys.argv[1].split(","), float(sys.argv[2]), float(sys.argv[3])
rclpy.init()
node = rclpy.create_node("flood")
publisher = node.create_publisher(JointState, "/joint_states", 10)
msg = JointState(name=names, position=[float("nan")] * len(names), velocity=[0.0] * len(names))
count, start = 0, time.monotonic()
while time.monotonic() - start < seconds:
    msg.header.stamp = node.get_clock().now().to_msg()
    publisher.publish(msg)
    count += 1
    if rate:
        time.sleep(max(0.0, start + count / rate - time.monotonic()))
print(count)
"""


def flood(names, rate, seconds):
    """Another process publishing JointStates of `names` (NaN positions) on /joint_states, at `rate`
    per second (0: as fast as it can), for `seconds`."""
    return subprocess.Popen([sys.executable, "-c", FLOOD, ",".join(names), str(rate), str(seconds)],
                            stdout=subprocess.PIPE, text=True)


def test_a_flood_of_invalid_joint_states_never_hides_the_valid_ones(active):
    """Another publisher floods the topic with invalid states (NaN positions, our names) as fast as
    it can: the valid 200 Hz ones still arrive in the 64-deep queue (the baseline: a 5-deep queue, 40
    watchdog trips in 10 s), so no trip, the computed torque of the valid state, the flood counted."""
    controller, injector = active
    before = controller.counters()
    process = flood(JOINTS, 0, 6.0)

    def rejected_since():
        return controller.counters()["rejected joint states"] - before["rejected joint states"]
    deadline = time.monotonic() + 5.0      # the other process's start and DDS discovery, then its flood
    while rejected_since() < 100 and time.monotonic() < deadline:
        time.sleep(0.05)
    commands = injector.commands_for(1.5)
    published = int(process.communicate(timeout=30)[0])
    after = controller.counters()
    rejected = rejected_since()
    print(f"flood: {published} invalid joint states published in 6 s, {rejected} rejected by the controller")
    assert published > 3000, "the flood was too slow to test anything"
    assert rejected > 1000
    assert after["watchdog trips"] == before["watchdog trips"]
    assert_all_close(commands, computed_torque(), "the valid joint states under the flood")


def test_a_foreign_publisher_with_thousands_of_joints_costs_one_decode(active):
    """A publisher of 1,000 other joints at 1 kHz on the same topic (the baseline: a Python decode of
    its name list on every message, 773 deadline misses in 8 s at 2,000): its name list is decoded once, our
    valid states go on being taken, no trip. (2,000 or 6,000 names with their positions and velocities
    do not fit the 64 KiB receive buffer: rcl
    refuses such a message before any parsing.)"""
    controller, injector = active
    reader = controller._configured.reader
    decoded, before = reader.names_decoded, controller.counters()
    process = flood([f"other_joint_{k}" for k in range(1000)], 1000.0, 6.0)
    deadline = time.monotonic() + 5.0      # DDS discovery of the other process, then its first message
    while reader.names_decoded == decoded and time.monotonic() < deadline:
        time.sleep(0.05)
    assert reader.names_decoded == decoded + 1, "the foreign name list was not decoded (once)"
    commands = injector.commands_for(1.5)
    assert reader.names_decoded == decoded + 1, "a name list was decoded again"
    published = int(process.communicate(timeout=30)[0])
    print(f"{published} messages of 1,000 names published in 6 s; name lists decoded: 1")
    assert published > 600, "the foreign publisher was too slow to test anything"
    assert controller.counters()["watchdog trips"] == before["watchdog trips"]
    assert_all_close(commands, computed_torque(), "our joint states beside the foreign ones")


def test_a_backlog_costs_one_parse(ros):
    """With joint states queued (the loop stopped), one tick's intake parses the newest only."""
    controller, injector, _, _ = ros
    injector.message = None
    controller.trigger_activate()
    controller._stop_loop()
    reader = controller._configured.reader
    parsed = []
    original = reader.read
    reader.read = lambda raw, now: parsed.append(raw) or original(raw, now)
    try:
        time.sleep(0.05)
        controller._configured.joint_states.take_all_raw()      # anything queued before
        start = time.time_ns() + 10 ** 8     # newer than any queued, within max_stamp_lead
        for k in range(50):
            msg = state(positions=Q + 1e-3 * k)
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(start + 1000 * k, 10 ** 9)
            injector.joint_states.publish(msg)
        time.sleep(0.2)
        assert controller._take_joint_state(time.monotonic())
    finally:
        reader.read = original
        controller.trigger_deactivate()
    assert len(parsed) == 1
    assert reader.stamp == start + 49_000
    np.testing.assert_allclose(reader.q, Q + 49e-3)


def test_parameters_describe_their_ranges_and_refuse_values_outside():
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = ControllerNode("described_controller", context=context)
        rate = node.describe_parameter("rate_hz")
        assert rate.floating_point_range[0].from_value == 1.0 and rate.floating_point_range[0].to_value == 10000.0
        assert "control loop rate" in rate.description and "(read: activate)" in rate.description
        assert node.describe_parameter("gradient.window").integer_range[0].to_value == 100000
        result = node.set_parameters([Parameter("watchdog_timeout", value=100.0)])[0]
        assert not result.successful and "out of range" in result.reason
        node.destroy_node()
        # a parameter file's value outside the range: the node is built, configure names the parameter
        node = ControllerNode("out_of_range_controller", context=context, parameter_overrides=[
            Parameter("urdf_path", value=URDF), Parameter("rate_hz", value=20000.0)])
        node.trigger_configure()
        assert node.state == "unconfigured"
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
