"""The simulator's measurement noise (noise.*): Gaussian noise of the given standard deviations on
the published positions, velocities and efforts, never on the simulated state. The robot is left
without commands, so it brakes and holds still (command_timeout_action brake): the published values
are then the held state plus the noise, whose sample standard deviations and means are judged
(about 900 samples a joint: the standard deviation within 10 %, the velocity's and effort's mean,
zero while held, within 4 standard errors)."""
import numpy as np
import pytest
from ros_harness import run_closed_loop

import dyn_control as dc

pytestmark = pytest.mark.ros

STD = {"position": 1e-3, "velocity": 1e-2, "effort": 0.5}


def test_published_joint_states_carry_the_noise_and_the_state_does_not(tmp_path):
    q0 = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
    monitor = run_closed_loop(tmp_path, {"dyn_simulator": {
        "urdf_path": dc.bundled_urdf("arm7"), "initial_positions": q0, "wait_for_command": False,
        **{f"noise.{k}": v for k, v in STD.items()}}}, 1.5)
    r = monitor.recorder
    t = (r.stamps("joint_states") - r.stamps("joint_states")[0]) * 1e-9
    held = t > 0.5                                   # braked 0.1 s after the start, still since
    assert held.sum() > 500
    for field, index in (("position", 0), ("velocity", 1), ("effort", 2)):
        values = r.values("joint_states", index)[held]
        std = values.std(axis=0)
        np.testing.assert_allclose(std, STD[field], rtol=0.1, err_msg=field)
        if field != "position":      # held: zero velocity, and a braked drive applies no effort
            assert np.all(np.abs(values.mean(axis=0)) <= 4 * STD[field] / np.sqrt(held.sum())), field
    # the state itself is held: the positions' mean stays where the brake caught the arm, whose
    # fall in 0.1 s is far below this bound
    np.testing.assert_allclose(r.values("joint_states", 0)[held].mean(axis=0), q0, atol=0.1)
