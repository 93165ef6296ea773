"""Recordings of a simulated robot tracking a motion, without ROS: for tests, benchmarks and trying a
design before running it. The robot is the builtin simulator (dyn_control.simulation.builtin) of a
model `robot` (the truth, which identification never sees); the controller is PD + feedforward,
tau = rnea_model(q, v, a_d + kd (v_d - v) + kp (q_d - q)), on the model the controller has.
"""
import numpy as np

import dyn_control as dc

from ..simulation.builtin import BuiltinSimulator
from .bag import JointStates


def track(robot, model, motion, duration, dt=1e-3, kp=400.0, kd=40.0, noise=None, seed=0, effort="centred",
          simulator=BuiltinSimulator):
    """JointStates of `robot` (its joint names) following motion(t) -> (q_d, v_d, a_d) (each
    (len(t), n), e.g. an Excitation) for `duration` s at steps dt, starting at rest at q_d(0).
    Sample k is the state at k dt and the effort the mean torque over the step before and the step
    after it (the simulator holds each step's torque): what a torque sensor with an anti-aliasing
    front end sampling at k dt reads, and what the dynamics at the sample's acceleration need (the
    torque of either step alone is half a step early or late); effort="previous": the torque of the
    step before it, as dyn_simulator publishes it with its state (half a step late). noise: None
    or (position, velocity, effort) standard deviations of Gaussian measurement noise added to the
    recorded values. simulator(robot, dt, q0): the simulated robot (default BuiltinSimulator; e.g.
    a MujocoSimulator for an engine independent of dyn_control's kernels)."""
    count = int(round(duration / dt))
    t = np.arange(count) * dt
    q_d, v_d, a_d = motion(t)
    simulator = simulator(robot, dt, q_d[0])
    data = model.create_data()
    q, v, applied = np.empty((count, robot.nv)), np.empty((count, robot.nv)), np.empty((count, robot.nv))
    for k in range(count):
        q[k], v[k] = simulator.q, simulator.v
        command = a_d[k] + kd * (v_d[k] - simulator.v) + kp * (q_d[k] - simulator.q)
        applied[k] = dc.rnea(model, data, simulator.q, simulator.v, command)
        simulator.step(applied[k])
    if effort not in ("centred", "previous"):
        raise ValueError(f"effort must be 'centred' or 'previous', got {effort!r}")
    reported = applied.copy()
    reported[1:] = 0.5 * (applied[:-1] + applied[1:]) if effort == "centred" else applied[:-1]
    if noise is not None:
        rng = np.random.default_rng(seed)
        for x, std in zip((q, v, reported), noise):
            x += std * rng.standard_normal(x.shape)
    return JointStates(robot.joint_names, t, q, v, reported)
