"""~/joint_trajectory through the closed loop over DDS (controller and simulator in their own
processes): a three-point trajectory by joint name (a subset, out of order, with velocities: cubic)
is tracked to the tolerance of the sine tests, ends at its last point at rest, and the joints it does
not name hold. Refusals of bad trajectories are in test_ros_safety.py; the interpolation against
SciPy in test_trajectory.py."""
import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import dyn_control as dc
from ros_harness import RecordingMonitor, write_parameter_file
from dyn_control.nodes.bringup import bringup

pytestmark = pytest.mark.ros

ARM7 = dc.bundled_urdf("arm7")
Q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
NAMES = ["arm7_joint4", "arm7_joint2", "arm7_joint6"]
COLUMNS = [3, 1, 5]
POINTS = [(0.8, [-2.2, -0.6, 1.7], [0.2, 0.1, 0.0]), (1.6, [-2.0, -0.5, 1.9], [0.1, 0.0, -0.1]),
          (2.4, [-2.1, -0.7, 1.8], [0.0, 0.0, 0.0])]
SEND_AT = 0.5      # [s] after the first ~/desired (the loop closes once the nodes found each other)


class TrajectoryMonitor(RecordingMonitor):
    """Records, and sends the trajectory once the loop has run SEND_AT seconds."""

    def start(self, node):
        super().start(node)
        self.publisher = node.create_publisher(JointTrajectory, "/dyn_controller/joint_trajectory", 10)
        self.sent = False
        self.closed = None      # when the first ~/desired arrived [s after activation]

    def status(self, phase, elapsed):
        super().status(phase, elapsed)
        if self.recorder.count("desired") and self.closed is None:
            self.closed = elapsed
        if phase == "run" and self.closed is not None and elapsed >= self.closed + SEND_AT and not self.sent:
            msg = JointTrajectory(joint_names=NAMES)
            for t, positions, velocities in POINTS:
                msg.points.append(JointTrajectoryPoint(
                    positions=positions, velocities=velocities,
                    time_from_start=Duration(sec=int(t), nanosec=int(round(t % 1 * 1e9)))))
            self.publisher.publish(msg)
            self.sent = True


def test_a_trajectory_by_joint_name_is_tracked(tmp_path):
    controller = {"urdf_path": ARM7, "gains.kp": 400.0, "gains.kd": 40.0, "reference.type": "hold",
                  "state_publish_period": 5}
    simulator = {"urdf_path": ARM7, "initial_positions": Q0.tolist()}
    monitor = TrajectoryMonitor()
    params = write_parameter_file(tmp_path / "params.yaml", {"dyn_controller": controller, "dyn_simulator": simulator})
    assert bringup(params, 3.5 + SEND_AT + POINTS[-1][0] + 1.5, monitor) == 0
    assert monitor.sent
    r = monitor.recorder
    desired = r.values("desired", 0)
    moving = np.flatnonzero(np.any(np.abs(desired - Q0) > 1e-9, axis=1))
    assert moving.size > 100, "the trajectory never moved the reference"
    np.testing.assert_allclose(desired[-1][COLUMNS], POINTS[-1][1], atol=1e-12)
    np.testing.assert_allclose(r.values("desired", 1)[-1], 0.0, atol=1e-12)
    held = [k for k in range(7) if k not in COLUMNS]
    np.testing.assert_allclose(desired[:, held], np.tile(Q0[held], (len(desired), 1)), atol=1e-12)
    t, error = r.tracking_error()
    during = t >= r.stamps("desired")[moving[0]]
    rms = float(np.sqrt(np.mean(error[during] ** 2)))
    assert rms < 1e-3, f"RMS tracking error {rms:.3e} rad during the trajectory"
