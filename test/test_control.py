"""Control laws against independent oracles: Pinocchio (M, nle, g, frame Jacobians), the analytic
reference trajectory in closed loop, the force the simulator applied (observer), and central
differences of a loss built from dc.rnea on models with perturbed parameters (parameter gradient)."""
import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from dyn_control.control import (AccelerationFilter, ComputedTorque, MomentumObserver, ParameterGradient,
                                 clamp_effort, wrench_from_joint_torque)
from dyn_control.simulation import BuiltinSimulator, MujocoSimulator
from oracles import central_difference, pin_q, random_state, robot_urdf, swap_halves

DT = 1e-3
KP, KD = 400.0, 40.0                 # closed-loop bandwidth 20 rad/s, critically damped
# sine references are centred away from joint limits and singularities
CENTRES = {"arm7": np.array([0.0, -0.6, 0.0, -2.2, 0.0, 1.8, 0.8]),
           "ur5_robot": np.array([0.3, -1.2, 1.4, -1.6, -1.5, 0.2])}
TOOL_FORCE = np.array([6.0, 0.0, -8.0])   # 10 N


def urdf_path(name):
    return dc.bundled_urdf(name) if name == "arm7" else robot_urdf(name)


@pytest.fixture(scope="module", params=["arm7", "ur5_robot"])
def robot(request):
    path = urdf_path(request.param)
    return request.param, path, dc.load_urdf(path), pin.buildModelFromUrdf(path)


def sine_reference(centre, t, amplitude=0.3, hz=0.5):
    w = 2.0 * np.pi * hz
    ones = np.ones_like(centre)
    return (centre + amplitude * np.sin(w * t) * ones, amplitude * w * np.cos(w * t) * ones,
            -amplitude * w * w * np.sin(w * t) * ones)


def make_simulator(backend, model, path, q0, v0):
    if backend == "builtin":
        return BuiltinSimulator(model, DT, q0, v0)
    return MujocoSimulator(model, path, DT, q0, v0)


# ---------------------------------------------------------------------------------------------
# computed torque


def test_computed_torque_is_M_a_cmd_plus_nle_of_pinocchio(robot):
    _, _, model, pin_model = robot
    pin_data = pin_model.createData()
    rng = np.random.default_rng(1)
    kp = rng.uniform(10.0, 500.0, model.nv)
    kd = 3.0
    controller = ComputedTorque(model, kp, kd)
    out = np.zeros(model.nv)
    for _ in range(5):
        q, v, a_d = random_state(model, rng)
        q_d, v_d, _ = random_state(model, rng)
        a_cmd = a_d + kd * (v_d - v) + kp * (q_d - q)
        pq = pin_q(pin_model, q)
        M = pin.crba(pin_model, pin_data, pq)
        M = np.triu(M) + np.triu(M, 1).T
        expected = M @ a_cmd + pin.nonLinearEffects(pin_model, pin_data, pq, v)
        np.testing.assert_allclose(controller.compute(q, v, q_d, v_d, a_d), expected, rtol=1e-9, atol=1e-9)
        returned = controller.compute(q, v, q_d, v_d, a_d, out=out)
        assert returned is out
        np.testing.assert_allclose(out, expected, rtol=1e-9, atol=1e-9)


def test_safe_torque_gravity_minus_damping_and_zero(robot):
    _, _, model, pin_model = robot
    pin_data = pin_model.createData()
    q, v, _ = random_state(model, np.random.default_rng(2))
    controller = ComputedTorque(model, 100.0, 20.0)
    damping = np.linspace(0.5, 2.0, model.nv)
    expected = pin.computeGeneralizedGravity(pin_model, pin_data, pin_q(pin_model, q)) - damping * v
    np.testing.assert_allclose(controller.safe_torque(q, v, damping), expected, rtol=1e-9, atol=1e-9)
    out = np.ones(model.nv)
    assert controller.safe_torque(q, v, damping, mode="zero", out=out) is out
    assert np.all(out == 0.0)


def test_clamp_effort_symmetric_and_inf_is_no_limit():
    tau = np.array([100.0, -100.0, 5.0, -20.0, 13.0, 1e9])
    limits = np.array([87.0, 87.0, 87.0, 12.0, 12.0, np.inf])
    np.testing.assert_array_equal(clamp_effort(tau, limits), [87.0, -87.0, 5.0, -12.0, 12.0, 1e9])
    out = np.zeros(6)
    assert clamp_effort(tau, limits, out=out) is out
    assert out[3] == -12.0


# ---------------------------------------------------------------------------------------------
# closed loop: computed torque on a simulated robot, no ROS


def tracking_rms(backend, name, path, model, seconds=4.0):
    """RMS of q_d - q over t > 2 s, tracking a 0.3 rad, 0.5 Hz sine on every joint, started on
    the reference's initial state."""
    centre = CENTRES[name]
    q0, v0, _ = sine_reference(centre, 0.0)
    sim = make_simulator(backend, model, path, q0, v0)
    controller = ComputedTorque(model, KP, KD)
    tau = np.zeros(model.nv)
    errors = []
    for k in range(int(round(seconds / DT))):
        q_d, v_d, a_d = sine_reference(centre, sim.time)
        if sim.time > 2.0:
            errors.append(q_d - sim.q)
        controller.compute(sim.q, sim.v, q_d, v_d, a_d, out=tau)
        sim.step(tau)
    return float(np.sqrt(np.mean(np.square(errors))))


@pytest.mark.parametrize("backend, bound", [("builtin", 1e-3), ("mujoco", 5e-3)])
def test_closed_loop_tracks_sine(robot, backend, bound):
    name, path, model, _ = robot
    rms = tracking_rms(backend, name, path, model)
    print(f"{name} {backend}: RMS tracking error {rms:.3e} rad")
    assert rms < bound


# ---------------------------------------------------------------------------------------------
# momentum observer and the wrench behind the torques


def observed_tool_force(backend, gain=50.0, onset=1.0, seconds=1.5):
    """Track the sine with computed torque while the simulator pushes on arm7_tool with
    TOOL_FORCE from `onset` on; the wrench estimate at every step and the times."""
    path = dc.bundled_urdf("arm7")
    model = dc.load_urdf(path)
    data = model.create_data()
    centre = CENTRES["arm7"]
    q0, v0, _ = sine_reference(centre, 0.0)
    sim = make_simulator(backend, model, path, q0, v0)
    controller = ComputedTorque(model, KP, KD)
    observer = MomentumObserver(model, gain, DT)
    observer.reset(sim.q, sim.v)
    applied = np.concatenate([np.zeros(3), TOOL_FORCE])
    tau = np.zeros(model.nv)
    tau_ext = np.zeros(model.nv)
    times, estimates = [], []
    for k in range(int(round(seconds / DT))):
        controller.compute(sim.q, sim.v, *sine_reference(centre, sim.time), out=tau)
        sim.step(tau, applied if sim.time >= onset else None, "arm7_tool")
        observer.update(sim.q, sim.v, sim.effort, out=tau_ext)
        times.append(sim.time)
        estimates.append(wrench_from_joint_torque(model, data, sim.q, tau_ext, "arm7_tool"))
    return np.array(times), np.array(estimates)


@pytest.mark.parametrize("backend", ["builtin", "mujoco"])
def test_momentum_observer_finds_the_tool_force(backend):
    times, wrenches = observed_tool_force(backend, onset=1.0, seconds=1.5)
    before = np.linalg.norm(wrenches[(times > 0.1) & (times < 1.0), 3:], axis=1)
    error = np.linalg.norm(wrenches[-1, 3:] - TOOL_FORCE) / np.linalg.norm(TOOL_FORCE)
    print(f"{backend}: |f| without force <= {before.max():.3f} N; 0.5 s after onset "
          f"f = {wrenches[-1, 3:]}, relative error {error:.2e}, |n| = {np.linalg.norm(wrenches[-1, :3]):.2e}")
    assert before.max() < 0.5
    assert error < 0.1
    assert np.linalg.norm(wrenches[-1, :3]) < 0.1   # N m: the force acts at the frame origin, no moment


def test_momentum_observer_is_a_first_order_low_pass_per_joint():
    """Robot held at rest with torques g(q) - tau_ext (Pinocchio's g): the estimate follows
    tau_ext (1 - exp(-K t)) on every joint (the step is exact for a constant external torque)."""
    path = dc.bundled_urdf("arm7")
    model = dc.load_urdf(path)
    pin_model = pin.buildModelFromUrdf(path)
    q = CENTRES["arm7"]
    gravity = pin.computeGeneralizedGravity(pin_model, pin_model.createData(), q)
    gain = np.linspace(20.0, 80.0, model.nv)
    tau_ext = np.linspace(-1.0, 1.0, model.nv)
    observer = MomentumObserver(model, gain, DT)
    observer.reset(q, np.zeros(model.nv))
    for k in range(1, 41):
        estimate = observer.update(q, np.zeros(model.nv), gravity - tau_ext)
        np.testing.assert_allclose(estimate, tau_ext * (1.0 - np.exp(-gain * k * DT)), atol=1e-9)


def test_wrench_from_joint_torque_inverts_pinocchio_jacobian_transpose(robot):
    """tau = J^T w with Pinocchio's LOCAL_WORLD_ALIGNED frame Jacobian: the wrench comes back."""
    _, _, model, pin_model = robot
    pin_data = pin_model.createData()
    frame = model.frame_names[-1]
    rng = np.random.default_rng(3)
    q, _, _ = random_state(model, rng)
    wrench = rng.normal(size=6)
    J = pin.computeFrameJacobian(pin_model, pin_data, pin_q(pin_model, q), pin_model.getFrameId(frame),
                                 pin.LOCAL_WORLD_ALIGNED)
    J = swap_halves(J, axis=0)   # angular rows first
    estimate = wrench_from_joint_torque(model, model.create_data(), q, J.T @ wrench, frame, damping=1e-6)
    np.testing.assert_allclose(estimate, wrench, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# parameter gradient


def loss_with_parameters(model, samples, phi):
    """0.5 sum_k ||tau_k - rnea_phi(q_k, v_k, a_k)||^2 with the model's parameters replaced by phi
    (unchecked: the loss is defined for any phi, physically consistent or not)."""
    perturbed = model._replace(inertial_parameters=phi.reshape(model.nbodies, 10))
    data = perturbed.create_data()
    residuals = [tau - dc.rnea(perturbed, data, q, v, a) for q, v, a, tau in samples]
    return 0.5 * sum(float(np.sum(r ** 2)) for r in residuals)


def test_parameter_gradient_matches_central_differences_over_the_window():
    model = dc.load_urdf(dc.bundled_urdf("arm7"))
    data = model.create_data()
    rng = np.random.default_rng(4)
    window = 4
    gradient = ParameterGradient(model, window)
    samples = []
    for _ in range(window + 2):   # the first two samples leave the ring buffer
        q, v, a = random_state(model, rng)
        tau = dc.rnea(model, data, q, v, a) + rng.normal(scale=0.5, size=model.nv)
        samples.append((q, v, a, tau))
        gradient.add_sample(q, v, a, tau)
    kept = samples[-window:]
    phi = model.inertial_parameters() * (1.0 + 0.1 * rng.normal(size=10 * model.nbodies))
    expected = central_difference(lambda p: loss_with_parameters(model, kept, p), phi, eps=1e-4)
    np.testing.assert_allclose(gradient.gradient(phi), expected, rtol=1e-6, atol=1e-6)
    assert gradient.loss(phi) == pytest.approx(loss_with_parameters(model, kept, phi), rel=1e-10)
    assert len(gradient.labels) == 10 * model.nbodies
    assert gradient.labels[10 * 6 + 4] == "arm7_link7/Ixx"


def test_parameter_gradient_vanishes_for_the_exact_model():
    model = dc.load_urdf(dc.bundled_urdf("arm7"))
    data = model.create_data()
    rng = np.random.default_rng(5)
    gradient = ParameterGradient(model, 10)
    for _ in range(6):
        q, v, a = random_state(model, rng)
        gradient.add_sample(q, v, a, dc.rnea(model, data, q, v, a))
    assert np.abs(gradient.gradient()).max() < 1e-9
    assert gradient.loss() < 1e-20


def test_acceleration_filter_constant_and_slow_sine():
    dt = 1e-3
    filt = AccelerationFilter(3, dt, cutoff_hz=50.0)
    slope = np.array([1.0, -2.0, 0.5])
    assert np.all(filt.update(np.zeros(3)) == 0.0)       # one sample: no difference yet
    for k in range(1, 200):                              # 200 ms = 63 time constants
        a = filt.update(slope * k * dt)
    np.testing.assert_allclose(a, slope, rtol=1e-9)
    filt = AccelerationFilter(1, dt, cutoff_hz=50.0)
    w = 2.0 * np.pi                                      # 1 Hz, far below the cutoff
    errors = []
    for k in range(2000):
        a = filt.update([np.sin(w * k * dt)])
        if k > 100:
            errors.append(a[0] - w * np.cos(w * k * dt))
    assert np.abs(errors).max() < 0.05 * w               # lag 1 / (2 pi 50) s: 2 % phase at 1 Hz


# ---------------------------------------------------------------------------------------------
# bad arguments: a ValueError that names the argument


def test_bad_gains_name_the_gain_and_keep_the_old_ones():
    model = dc.load_urdf(dc.bundled_urdf("arm7"))
    with pytest.raises(ValueError, match="kp"):
        ComputedTorque(model, -1.0, 1.0)
    with pytest.raises(ValueError, match="kd"):
        ComputedTorque(model, 1.0, [1.0, 2.0])
    controller = ComputedTorque(model, 100.0, 20.0)
    for kp, kd, name in [(np.nan, 1.0, "kp"), (1.0, -np.ones(model.nv), "kd"), ("high", 1.0, "kp"),
                         (1.0, np.inf, "kd")]:
        with pytest.raises(ValueError, match=name):
            controller.set_gains(kp, kd)
    assert np.all(controller.kp == 100.0) and np.all(controller.kd == 20.0)
    with pytest.raises(ValueError, match="gain"):
        MomentumObserver(model, 0.0, DT)
    with pytest.raises(ValueError, match="dt"):
        MomentumObserver(model, 50.0, -DT)
    with pytest.raises(ValueError, match="window"):
        ParameterGradient(model, 0)
    with pytest.raises(ValueError, match="cutoff_hz"):
        AccelerationFilter(model.nv, DT, 0.0)


def test_bad_inputs_name_the_argument():
    model = dc.load_urdf(dc.bundled_urdf("arm7"))
    controller = ComputedTorque(model, 100.0, 20.0)
    z = np.zeros(model.nv)
    bad_nan = z.copy()
    bad_nan[2] = np.nan
    with pytest.raises(ValueError, match="q_d"):
        controller.compute(z, z, np.zeros(3), z, z)
    with pytest.raises(ValueError, match="a_d"):
        controller.compute(z, z, z, z, bad_nan)
    with pytest.raises(ValueError, match="v_d"):
        controller.compute(z, z, z, bad_nan, z)
    with pytest.raises(ValueError, match="mode"):
        controller.safe_torque(z, z, 1.0, mode="brake")
    with pytest.raises(ValueError, match="damping"):
        controller.safe_torque(z, z, -1.0)
    with pytest.raises(ValueError, match="limits"):
        clamp_effort(z, -np.ones(model.nv))
    observer = MomentumObserver(model, 50.0, DT)
    observer.reset(z, z)
    with pytest.raises(ValueError, match="tau_applied"):
        observer.update(z, z, bad_nan)
    with pytest.raises(ValueError, match="frame"):
        wrench_from_joint_torque(model, model.create_data(), z, z, "no_such_link")
    gradient = ParameterGradient(model, 3)
    with pytest.raises(ValueError, match="tau"):
        gradient.add_sample(z, z, z, bad_nan)
    with pytest.raises(ValueError, match="phi"):
        gradient.gradient(np.zeros(5))
