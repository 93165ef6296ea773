"""The controller's gradients and online adaptation, brought up over DDS with the simulator.

- ~/twist_gradient and its labels arrive with their documented layout (the values are checked against
  central differences of the window loss in test_tick.py).
- adaptation.enabled: the simulator's arm carries a 2 kg payload at arm7_tool that the controller's
  model lacks; the last estimate on ~/inertial_parameters, after at least 20 s of the loop (500
  steps: one every gradient.period ticks, whenever DDS discovery let the loop close), must cut the
  RMS torque prediction error over the loop's last 2 s by >= 90 % (torques, states and
  accelerations from the simulator's /joint_states), and every body of every estimate must be
  physically consistent (pseudo-inertia positive definite, written out here). The loop's last 2 s
  (joint-state stamps) end at the state sent when the last estimate was (DDS source timestamps),
  before the stop's braking. On a loaded machine
  the estimate converges in more steps: the figure printed gives the 500th's too.
"""
import re

import numpy as np
import pytest
from std_msgs.msg import Float64MultiArray, String

import dyn_control as dc
from dyn_control.nodes import qos
from dyn_control.nodes.bringup import bringup
from ros_harness import RecordingMonitor, write_parameter_file

pytestmark = pytest.mark.ros

ARM7 = dc.bundled_urdf("arm7")
Q0 = [0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.8]
AMPLITUDE = [0.5, 0.4, 0.5, 0.4, 0.6, 0.5, 0.8]


class GradientMonitor(RecordingMonitor):
    """Also records the controller's gradient, label and estimate topics."""

    TOPICS = {"twist_gradient": Float64MultiArray, "inertial_parameters": Float64MultiArray,
              "twist_labels": String, "parameter_labels": String}

    def start(self, node):
        super().start(node)
        self.messages = {key: [] for key in self.TOPICS}
        self.sent = {key: [] for key in self.TOPICS}      # DDS source timestamps [ns]
        self._extra = {key: qos.PolledSubscription(self._node, msg_type, "/dyn_controller/" + key,
                                                   qos.LATCHED if msg_type is String else qos.STATE)
                       for key, msg_type in self.TOPICS.items()}

    def status(self, phase, elapsed):
        super().status(phase, elapsed)
        for key, subscription in self._extra.items():
            while (taken := subscription.take_with_info()) is not None:
                self.messages[key].append(taken[0])
                self.sent[key].append(taken[1]["source_timestamp"])

    def stop(self):
        self.status("stop", 0.0)
        super().stop()


def test_twist_gradient_messages(tmp_path):
    controller = {"urdf_path": ARM7, "gains.kp": 400.0, "gains.kd": 40.0, "reference.type": "sine",
                  "reference.amplitude": 0.3, "gradient.period": 200, "gradient.window": 40}
    simulator = {"urdf_path": ARM7, "initial_positions": Q0}
    monitor = GradientMonitor()
    params = write_parameter_file(tmp_path / "params.yaml", {"dyn_controller": controller, "dyn_simulator": simulator})
    assert bringup(params, 5.0, monitor) == 0      # DDS discovery between the nodes takes up to ~3 s
    received = monitor.messages["twist_gradient"]
    assert len(received) >= 3, f"{len(received)} ~/twist_gradient messages"
    last = received[-1]
    assert [(d.label, d.size, d.stride) for d in last.layout.dim] == [("joints", 7, 42), ("components", 6, 6)]
    assert np.isfinite(last.data).all() and np.abs(last.data).max() > 0.0
    labels = monitor.messages["twist_labels"][-1].data.split("\n")
    assert labels[:7] == [f"arm7_joint1/{c}" for c in ("wx", "wy", "wz", "vx", "vy", "vz")] + ["arm7_joint2/wx"]


def payload_urdf(path, extra_mass):
    """arm7 with `extra_mass` kg more on the tool (same centre of mass, a sphere of radius 0.04 added)."""
    text = open(ARM7).read()
    tool = text.index('<link name="arm7_tool">')
    head, tail = text[:tool], text[tool:]
    tail = tail.replace('<mass value="0.2"/>', f'<mass value="{0.2 + extra_mass}"/>', 1)
    extra = 0.4 * extra_mass * 0.04 ** 2
    tail = re.sub(r'ixx="([\d.e+-]+)"(.*?)iyy="([\d.e+-]+)"(.*?)izz="([\d.e+-]+)"',
                  lambda m: f'ixx="{float(m[1]) + extra}"{m[2]}iyy="{float(m[3]) + extra}"{m[4]}'
                            f'izz="{float(m[5]) + extra}"', tail, count=1)
    path.write_text(head + tail)
    return str(path)


def min_pseudo_inertia_eigenvalue(phi):
    m, h = phi[0], phi[1:4]
    I = np.array([[phi[4], phi[7], phi[8]], [phi[7], phi[5], phi[9]], [phi[8], phi[9], phi[6]]])
    J = np.block([[0.5 * np.trace(I) * np.eye(3) - I, h[:, None]], [h[None, :], np.array([[m]])]])
    return np.linalg.eigvalsh(J)[0]


RATE = 500.0
ADAPT_DURATION = 20.0
GRADIENT_PERIOD = 20
DISCOVERY = 6.0     # [s] more for the bringup: the loop closes after DDS discovery (up to ~3 s)


def test_adaptation_learns_a_payload(tmp_path):
    plant_urdf = payload_urdf(tmp_path / "arm7_payload.urdf", 2.0)
    controller = {"urdf_path": ARM7, "rate_hz": RATE, "gains.kp": 100.0, "gains.kd": 20.0,
                  "reference.type": "sine", "reference.amplitude": AMPLITUDE, "reference.frequency": 0.5,
                  "gradient.period": GRADIENT_PERIOD, "gradient.window": 500, "gradient.cutoff_hz": 30.0,
                  "gradient.twist": False, "adaptation.enabled": True, "adaptation.step_size": 2e-7,
                  "adaptation.max_step": 0.01}
    simulator = {"urdf_path": plant_urdf, "rate_hz": RATE, "initial_positions": Q0}
    monitor = GradientMonitor()
    params = write_parameter_file(tmp_path / "params.yaml", {"dyn_controller": controller, "dyn_simulator": simulator})
    assert bringup(params, ADAPT_DURATION + DISCOVERY, monitor) == 0
    model = dc.load_urdf(ARM7)
    estimates = np.array([m.data for m in monitor.messages["inertial_parameters"]])
    steps = round(ADAPT_DURATION * RATE / GRADIENT_PERIOD)
    # a watchdog trip (a loaded machine: the controller's /diagnostics count them) holds the adaptation
    # for the blend back to the reference and a new gradient window, 1 s each
    trips = int(monitor.recorder.diagnostics["dyn_controller: control loop"]["watchdog trips"])
    lost = trips * round((1.0 + 500 / RATE) * RATE / GRADIENT_PERIOD)
    assert len(estimates) >= steps - lost, (f"{len(estimates)} adaptation steps in {ADAPT_DURATION + DISCOVERY:g} s "
                                            f"({trips} watchdog trips)")
    for phi in estimates:
        assert all(min_pseudo_inertia_eigenvalue(body) > 0.0 for body in phi.reshape(-1, 10))
    labels = monitor.messages["parameter_labels"][-1].data.split("\n")
    assert labels[0] == f"{model.body_names[0]}/m" and len(labels) == estimates.shape[1]

    r = monitor.recorder
    t = r.stamps("joint_states")
    q, v, tau = (r.values("joint_states", k) for k in range(3))
    dt = 1.0 / RATE
    # message k: the state after step k and the torque applied during it; pair step k's torque with
    # the midpoint of its states and the mean acceleration over it
    # the last 2 s of the loop with the last estimate (not the stop that follows the run)
    sent = r.source_times("joint_states")
    end = t[max(np.searchsorted(np.sort(sent), monitor.sent["inertial_parameters"][-1]) - 1, 0)]
    step = np.abs(np.diff(t) * 1e-9 - dt) < 1e-6
    last = step & (t[1:] <= end) & (t[1:] > end - 2e9)
    idx = np.nonzero(last)[0]
    assert len(idx) > 0.9 * 2 * RATE
    data = model.create_data()
    Y = np.array([dc.regressor(model, data, 0.5 * (q[k] + q[k + 1]), 0.5 * (v[k] + v[k + 1]),
                               (v[k + 1] - v[k]) / dt).copy() for k in idx])
    measured = tau[idx + 1]

    def rms(phi):
        error = measured - Y @ phi
        return float(np.sqrt(np.mean(np.sum(error * error, axis=1))))

    before, after = rms(model.inertial_parameters()), rms(estimates[-1])
    truth = rms(dc.load_urdf(plant_urdf).inertial_parameters())
    print(f"\nRMS torque prediction error over the loop's last 2 s: {before:.3f} N m initial model, "
          f"{after:.3f} N m adapted in {len(estimates)} steps ({100 * (1 - after / before):.1f} % lower; "
          f"{100 * (1 - rms(estimates[min(steps, len(estimates)) - 1]) / before):.1f} % lower at step "
          f"{min(steps, len(estimates))}, {ADAPT_DURATION:g} s of the "
          f"loop; the simulated robot's own parameters: {truth:.2g} N m)")
    assert truth < 0.01      # the simulated robot's own parameters predict its torques: the measure is exact
    assert before > 1.0
    assert after <= 0.1 * before
