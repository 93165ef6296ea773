"""The controller's fused tick (dyn_control.control.tick) against independent oracles: Pinocchio for
the computed torque, g(q), M, C and the regressor; the observer's and the acceleration filter's
recursions written out here with Pinocchio's quantities; central differences of the window loss on
twist-perturbed models for the twist gradient.
"""
import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from dyn_control.control import tick as T
from oracles import OURS_FROM_PIN_PARAM

pytestmark = pytest.mark.kernels

URDF = dc.bundled_urdf("arm7")
MODEL = dc.load_urdf(URDF)
NV = MODEL.nv
PIN = pin.buildModelFromUrdf(URDF)
PIN_DATA = PIN.createData()
LIMITS = np.asarray(MODEL.effort_limit)
FRAME = "arm7_tool"
KP, KD, BRAKE, GAIN, CUTOFF = 400.0, 40.0, 20.0, 50.0, 20.0
DT = 1e-3


def make_tick(window=20, controlled=None, robot_gravity=False):
    tick = T.ControllerTick(MODEL, np.arange(NV) if controlled is None else controlled, FRAME, window)
    f, s = tick.f, tick.s
    f.kp[:], f.kd[:], f.brake_gain[:], f.observer_gain[:] = KP, KD, BRAKE, GAIN
    s[T.S_CUTOFF_HZ] = CUTOFF
    s[T.S_WRENCH_DAMPING] = 1e-3
    s[T.S_GRAVITY_BY_ROBOT] = robot_gravity
    s[T.S_DT] = DT
    return tick


def feed(tick, q, v, effort=None, reset=False, gradients=True, twist=False):
    f, s = tick.f, tick.s
    f.q[:], f.v[:] = q, v
    s[T.S_HAS_EFFORT] = effort is not None
    if effort is not None:
        f.effort[:] = effort
    s[T.S_ESTIMATE], s[T.S_GRADIENTS], s[T.S_TWIST] = 1.0, gradients, twist
    s[T.S_NEW_SAMPLE], s[T.S_RESET] = 1.0, reset
    tick.tick()
    s[T.S_NEW_SAMPLE] = s[T.S_RESET] = 0.0


def trajectory(rng, steps):
    """A smooth joint trajectory sampled at DT: (q, v) per step, and a measured effort per step."""
    q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]) + rng.uniform(-0.2, 0.2, NV)
    w = rng.uniform(1.0, 3.0, NV)
    t = DT * np.arange(steps)[:, None]
    q = q0 + 0.2 * np.sin(w * t)
    v = 0.2 * w * np.cos(w * t)
    effort = rng.normal(0.0, 5.0, (steps, NV))
    return q, v, effort


def test_computed_torque_is_pinocchio_rnea_of_the_sine_reference():
    rng = np.random.default_rng(1)
    tick = make_tick()
    q, v = MODEL.neutral_configuration() + rng.uniform(-0.3, 0.3, NV), rng.uniform(-0.5, 0.5, NV)
    centre, amplitude, omega, t = q + 0.05, rng.uniform(0.0, 0.1, NV), 2.0, 0.7
    tick.f.centre[:], tick.f.amplitude[:] = centre, amplitude
    tick.s[T.S_OMEGA], tick.s[T.S_T] = omega, t
    feed(tick, q, v, reset=True)
    q_d = centre + amplitude * np.sin(omega * t)
    v_d = amplitude * omega * np.cos(omega * t)
    a_d = -amplitude * omega ** 2 * np.sin(omega * t)
    expected = np.clip(pin.rnea(PIN, PIN_DATA, q, v, a_d + KD * (v_d - v) + KP * (q_d - q)), -LIMITS, LIMITS)
    np.testing.assert_allclose(tick.f.tau, expected, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(tick.f.command, expected, rtol=1e-12, atol=1e-10)


def test_robot_gravity_leaves_out_exactly_g():
    rng = np.random.default_rng(2)
    q, v = MODEL.neutral_configuration() + rng.uniform(-0.3, 0.3, NV), rng.uniform(-0.2, 0.2, NV)
    commands = []
    for robot_gravity in (False, True):
        tick = make_tick(robot_gravity=robot_gravity)
        tick.f.centre[:] = q + 0.01
        feed(tick, q, v, reset=True)
        commands.append(tick.f.command.copy())
    g = pin.computeGeneralizedGravity(PIN, PIN_DATA, q)
    assert np.all(np.abs(commands[0]) < LIMITS)     # no clamping, so the difference is g exactly
    np.testing.assert_allclose(commands[0] - commands[1], g, rtol=1e-12, atol=1e-10)


def test_controlled_subset_and_safe_torques():
    rng = np.random.default_rng(3)
    q, v = MODEL.neutral_configuration() + rng.uniform(-0.3, 0.3, NV), rng.uniform(-0.5, 0.5, NV)
    controlled = np.array([5, 1, 3])
    tick = make_tick(controlled=controlled)
    tick.f.centre[:] = q + 0.02
    feed(tick, q, v, reset=True)
    a = np.zeros(NV)
    a[controlled] = KD * (0.0 - v[controlled]) + KP * 0.02
    expected = np.clip(pin.rnea(PIN, PIN_DATA, q, v, a), -LIMITS, LIMITS)
    np.testing.assert_allclose(tick.f.command, expected[controlled], rtol=1e-12, atol=1e-10)
    assert np.all(np.delete(tick.f.tau, controlled) == 0.0)
    tick.s[T.S_BRAKE] = 1.0      # braking: the computed torque of a = -BRAKE v on the controlled joints
    tick.tick()
    a = np.zeros(NV)
    a[controlled] = -BRAKE * v[controlled]
    expected = np.clip(pin.rnea(PIN, PIN_DATA, q, v, a), -LIMITS, LIMITS)
    np.testing.assert_allclose(tick.f.command, expected[controlled], rtol=1e-12, atol=1e-10)
    tick.s[T.S_SAFE] = 1.0       # holding (stale joint states): g(q) alone, whatever the velocity
    tick.tick()
    g = pin.computeGeneralizedGravity(PIN, PIN_DATA, q)
    np.testing.assert_allclose(tick.f.command, np.clip(g, -LIMITS, LIMITS)[controlled], rtol=1e-12)
    tick.s[T.S_SAFE_ZERO] = 1.0
    tick.tick()
    assert np.all(tick.f.command == 0.0)


def test_non_finite_torque_falls_back_to_the_safe_torque():
    tick = make_tick()
    q = MODEL.neutral_configuration()
    feed(tick, q, np.full(NV, 1e200), reset=True, gradients=False)
    assert np.isfinite(tick.f.command).all()
    g = pin.computeGeneralizedGravity(PIN, PIN_DATA, q)      # the held torque: no velocity term
    np.testing.assert_allclose(tick.f.command, np.clip(g, -LIMITS, LIMITS), rtol=1e-12, atol=1e-12)
    assert tick.s[T.S_NON_FINITE] >= 1


def pin_momentum_terms(q, v):
    """Pinocchio's M(q) v and beta = C(q, v)^T v - g(q)."""
    M = pin.crba(PIN, PIN_DATA, q)
    M = np.triu(M) + np.triu(M, 1).T
    C = pin.computeCoriolisMatrix(PIN, PIN_DATA, q, v)
    return M @ v, C.T @ v - pin.computeGeneralizedGravity(PIN, PIN_DATA, q)


def test_observer_and_acceleration_filter_against_their_recursions():
    """r_k = r_{k-1} + (1 - exp(-K dt)) (tau_mean - r_{k-1}) with the momentum balance's
    tau_mean = (p_k - p_{k-1}) / dt - tau_k - (beta_{k-1} + beta_k) / 2, p = M v, beta = C^T v - g,
    and a_k = a_{k-1} + alpha ((v_k - v_{k-1}) / dt - a_{k-1}), with Pinocchio's M, C and g."""
    rng = np.random.default_rng(4)
    q, v, effort = trajectory(rng, 60)
    tick = make_tick()
    feed(tick, q[0], v[0], effort[0], reset=True)
    p_prev, beta_prev = pin_momentum_terms(q[0], v[0])
    r, a = np.zeros(NV), np.zeros(NV)
    alpha = DT / (DT + 1.0 / (2.0 * np.pi * CUTOFF))
    for k in range(1, len(q)):
        feed(tick, q[k], v[k], effort[k])
        p, beta = pin_momentum_terms(q[k], v[k])
        tau_mean = (p - p_prev) / DT - effort[k] - 0.5 * (beta_prev + beta)
        r += (1.0 - np.exp(-GAIN * DT)) * (tau_mean - r)
        p_prev, beta_prev = p, beta
        a += alpha * ((v[k] - v[k - 1]) / DT - a)
    np.testing.assert_allclose(tick.f.tau_ext, r, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(tick.f.acceleration, a, rtol=1e-12, atol=1e-12)


ARMATURE = np.array([0.3, 0.3, 0.2, 0.2, 0.05, 0.05, 0.02])
VISCOUS = np.array([1.0, 1.0, 0.8, 0.8, 0.2, 0.2, 0.1])
COULOMB = np.array([3.0, 3.0, 2.0, 2.0, 0.5, 0.5, 0.3])
V_S = 1e-3     # kernels.joint_terms.COULOMB_VELOCITY_SCALE, the smooth sign's velocity


def pin_with_armature():
    model = pin.buildModelFromUrdf(URDF)
    model.armature = ARMATURE.copy()
    return model, model.createData()


def test_computed_torque_with_joint_terms():
    """With the model's armature and friction: Pinocchio's rnea with model.armature (I_a a added),
    and the friction feedforward F_v v_r + F_c tanh(v_r / v_s) at the reference velocity."""
    rng = np.random.default_rng(11)
    tick = T.ControllerTick(MODEL.with_joint_dynamics(ARMATURE, VISCOUS, COULOMB), np.arange(NV), FRAME, 20)
    f, s = tick.f, tick.s
    f.kp[:], f.kd[:], f.observer_gain[:] = KP, KD, GAIN
    s[T.S_CUTOFF_HZ], s[T.S_DT] = CUTOFF, DT
    centre, amplitude, omega, t = rng.uniform(-0.5, 0.5, NV), rng.uniform(0.05, 0.2, NV), 2.0, 0.4
    f.centre[:], f.amplitude[:] = centre, amplitude
    s[T.S_OMEGA], s[T.S_T] = omega, t
    q, v = centre + rng.uniform(-0.02, 0.02, NV), rng.uniform(-0.3, 0.3, NV)
    feed(tick, q, v, reset=True, gradients=False)
    q_d = centre + amplitude * np.sin(omega * t)
    v_d = amplitude * omega * np.cos(omega * t)
    a_d = -amplitude * omega ** 2 * np.sin(omega * t)
    model, data = pin_with_armature()
    expected = pin.rnea(model, data, q, v, a_d + KD * (v_d - v) + KP * (q_d - q))
    expected += VISCOUS * v_d + COULOMB * np.tanh(v_d / V_S)
    np.testing.assert_allclose(tick.f.command, np.clip(expected, -LIMITS, LIMITS), rtol=1e-12, atol=1e-10)


def test_observer_with_joint_terms_against_its_recursion():
    """p = (M + diag I_a) v and beta = C^T v - g - F_v v - F_c tanh(v / v_s): the model's friction is
    a known torque, so the observer's estimate is the external torque only (Pinocchio's M with
    model.armature, C and g)."""
    rng = np.random.default_rng(12)
    q, v, effort = trajectory(rng, 60)
    tick = T.ControllerTick(MODEL.with_joint_dynamics(ARMATURE, VISCOUS, COULOMB), np.arange(NV), FRAME, 20)
    tick.f.observer_gain[:] = GAIN
    tick.s[T.S_CUTOFF_HZ], tick.s[T.S_DT] = CUTOFF, DT
    model, data = pin_with_armature()

    def terms(q, v):
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        C = pin.computeCoriolisMatrix(model, data, q, v)
        friction = VISCOUS * v + COULOMB * np.tanh(v / V_S)
        return M @ v, C.T @ v - pin.computeGeneralizedGravity(model, data, q) - friction
    feed(tick, q[0], v[0], effort[0], reset=True)
    p_prev, beta_prev = terms(q[0], v[0])
    r = np.zeros(NV)
    for k in range(1, len(q)):
        feed(tick, q[k], v[k], effort[k])
        p, beta = terms(q[k], v[k])
        r += (1.0 - np.exp(-GAIN * DT)) * ((p - p_prev) / DT - effort[k] - 0.5 * (beta_prev + beta) - r)
        p_prev, beta_prev = p, beta
    np.testing.assert_allclose(tick.f.tau_ext, r, rtol=1e-9, atol=1e-9)


def simulate(q, v, tau, seconds, h=1e-4):
    """Pinocchio's forward dynamics under the torque tau held for `seconds`, RK4 steps of h."""
    def f(q, v):
        return v, pin.aba(PIN, PIN_DATA, q, v, tau)
    for _ in range(int(round(seconds / h))):
        k1 = f(q, v)
        k2 = f(q + h / 2 * k1[0], v + h / 2 * k1[1])
        k3 = f(q + h / 2 * k2[0], v + h / 2 * k2[1])
        k4 = f(q + h * k3[0], v + h * k3[1])
        q = q + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        v = v + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    return q, v


def test_observer_keeps_its_estimate_over_missed_samples():
    """The arm tracks a sine (Pinocchio's forward dynamics, the torque held between samples) under a
    constant external joint torque; once the estimate has converged, the samples of 30 ms are
    missed (a stalled controller: the torque stays held) and the observer takes one 30 ms step.
    The estimate stays within 0.02 N m of the external torque (the rectangle rule on C^T v - g
    would be 0.19 N m off here)."""
    centre = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
    tau_ext = np.linspace(-2.0, 2.0, NV)
    omega = 2.0 * np.pi * 0.5
    q, v, t = centre, np.zeros(NV), 0.0
    tick = make_tick()
    feed(tick, q, v, np.zeros(NV), reset=True)
    for step in [DT] * 300 + [30 * DT]:
        a_d = -0.3 * omega ** 2 * np.sin(omega * t)
        a = a_d + KD * (0.3 * omega * np.cos(omega * t) - v) + KP * (centre + 0.3 * np.sin(omega * t) - q)
        tau = pin.rnea(PIN, PIN_DATA, q, v, a)
        q, v = simulate(q, v, tau + tau_ext, step)
        t += step
        tick.s[T.S_DT] = step
        feed(tick, q, v, tau)
    assert np.abs(v).max() > 0.3, "the arm should be moving"
    np.testing.assert_allclose(tick.f.tau_ext, tau_ext, atol=0.02)


def test_gradient_over_the_sliding_window_is_pinocchio_regressor_sum():
    """dL/dphi = -sum_k Y_k^T (tau_k - Y_k phi) over the last `window` samples only, from the
    running sums; samples as the tick saw them (q, v, its acceleration estimate, the effort)."""
    rng = np.random.default_rng(5)
    window = 15
    q, v, effort = trajectory(rng, 40)
    tick = make_tick(window)
    feed(tick, q[0], v[0], effort[0], reset=True)
    for k in range(1, len(q)):
        feed(tick, q[k], v[k], effort[k])
    tick.s[T.S_WANT_GRADIENT] = 1.0
    tick.tick()
    samples = tick.window_samples()
    assert len(samples) == window
    np.testing.assert_array_equal(samples[:, 0], q[-window:])
    phi = MODEL.inertial_parameters()
    expected = np.zeros(phi.size)
    for q_k, v_k, a_k, tau_k in samples:
        Y = pin.computeJointTorqueRegressor(PIN, PIN_DATA, q_k, v_k, a_k)
        Y = Y.reshape(NV, NV, 10)[:, :, OURS_FROM_PIN_PARAM].reshape(NV, 10 * NV)
        expected -= Y.T @ (tau_k - Y @ phi)
    np.testing.assert_allclose(tick.f.gradient, expected, rtol=1e-8, atol=1e-8 * np.abs(expected).max())


@pytest.mark.parametrize("name", ["arm7", "solo12"])
def test_gradient_is_exact_at_every_request_after_phi_changes_and_the_window_wraps(name):
    """The window keeps sum_k Y_k^T (Y_k phi) for the phi of its last model and rebuilds it from its
    ring of regressors, a few samples a tick, when the model changes (an adaptation step): at every
    tick it is requested, right after a change, while the rebuild runs and after it, the gradient is
    sum_k Y_k^T (Y_k phi - tau_k) over the window's samples (Pinocchio's regressors) at the current
    phi. solo12: four legs from the root, the regressor's rows non-zero on a leg's columns only."""
    from oracles import pin_q, robot_urdf
    urdf = URDF if name == "arm7" else robot_urdf(name)
    model = dc.load_urdf(urdf)
    pm = pin.buildModelFromUrdf(urdf)
    pd = pm.createData()
    nv, nb, window = model.nv, model.nbodies, 15
    rng = np.random.default_rng(21)
    tick = T.ControllerTick(model, np.arange(nv), model.frame_names[-1], window)
    tick.f.observer_gain[:] = GAIN
    tick.s[T.S_CUTOFF_HZ], tick.s[T.S_DT] = CUTOFF, DT
    w = rng.uniform(1.0, 3.0, nv)
    q0 = rng.uniform(-0.5, 0.5, nv)
    scales = {25: 1.1, 27: 0.95, 40: 1.05}      # a new model (bodies scaled: physically consistent)
    requested = {26, 28, 29, 30, 35, 40, 41, 55}
    checked = 0
    for k in range(60):
        t = k * DT
        if k in scales:
            phi = model.inertial_parameters().reshape(nb, 10) * rng.uniform(min(1.0, scales[k]), max(1.0, scales[k]), (nb, 1))
            tick.set_model(model.with_inertial_parameters(phi.ravel()))
        tick.s[T.S_WANT_GRADIENT] = k in requested
        feed(tick, q0 + 0.3 * np.sin(w * t), 0.3 * w * np.cos(w * t), rng.normal(0.0, 5.0, nv), reset=k == 0)
        if k not in requested:
            continue
        phi = tick.model.inertial_parameters()
        expected = np.zeros(10 * nb)
        samples = tick.window_samples()
        assert len(samples) == window
        for q_k, v_k, a_k, tau_k in samples:
            Y = pin.computeJointTorqueRegressor(pm, pd, pin_q(pm, q_k), v_k, a_k)
            Y = Y.reshape(nv, nb, 10)[:, :, OURS_FROM_PIN_PARAM].reshape(nv, 10 * nb)
            expected += Y.T @ (Y @ phi - tau_k)
        np.testing.assert_allclose(tick.f.gradient, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())
        checked += 1
    assert checked == len(requested)


def test_shift_momentum_is_the_change_of_pinocchios_momentum():
    """After set_model to other inertial parameters and armatures, shift_momentum moves the
    observer's last momentum by (M_new(q) + diag(I_a,new)) v - (M_old(q) + diag(I_a,old)) v, M from
    Pinocchio's crba on models carrying either set of parameters."""
    rng = np.random.default_rng(17)
    old = MODEL.with_joint_dynamics(ARMATURE, VISCOUS, COULOMB)
    phi = old.inertial_parameters().reshape(NV, 10) * rng.uniform(0.8, 1.2, (NV, 1))
    new = old.with_inertial_parameters(phi.ravel()).with_joint_dynamics(1.5 * ARMATURE, VISCOUS, COULOMB)
    tick = T.ControllerTick(old, np.arange(NV), FRAME, 5)
    q, v = rng.uniform(-1.0, 1.0, NV), rng.normal(size=NV)
    tick.f.q[:], tick.f.v[:] = q, v
    tick.f.p_prev[:] = before = rng.normal(size=NV)
    tick.set_model(new)
    tick.shift_momentum(old)

    def pin_momentum(model):
        pm = pin.buildModelFromUrdf(URDF)
        for k, body_phi in enumerate(model.inertial_parameters().reshape(NV, 10)):
            pin_phi = np.empty(10)
            pin_phi[OURS_FROM_PIN_PARAM] = body_phi
            pm.inertias[k + 1] = pin.Inertia.FromDynamicParameters(pin_phi)
        pm.armature[:] = model.joint_terms[:, 0]
        M = pin.crba(pm, pm.createData(), q)
        return (np.triu(M) + np.triu(M, 1).T) @ v

    expected = before + pin_momentum(new) - pin_momentum(old)
    np.testing.assert_allclose(tick.f.p_prev, expected, rtol=1e-10, atol=1e-12)
    assert np.abs(pin_momentum(new) - pin_momentum(old)).max() > 1e-3


def test_gradients_with_joint_terms_against_central_differences_of_the_window_loss():
    """With joint terms in the model: L(phi, theta) = 1/2 sum_k |tau_k - rnea_k - I_a a_k - F_v v_k -
    F_c tanh(v_k / v_s)|^2 over the window (Pinocchio's rnea with armature; tau_k the efforts fed),
    its gradients by central differences in theta (every joint term) and phi (every inertial
    parameter) against the tick's joint_gradient and gradient."""
    rng = np.random.default_rng(13)
    window = 12
    q, v, effort = trajectory(rng, 30)
    model = MODEL.with_joint_dynamics(ARMATURE, VISCOUS, COULOMB)
    tick = T.ControllerTick(model, np.arange(NV), FRAME, window)
    tick.f.observer_gain[:] = GAIN
    tick.s[T.S_CUTOFF_HZ], tick.s[T.S_DT] = CUTOFF, DT
    feed(tick, q[0], v[0], effort[0], reset=True)
    for k in range(1, len(q)):
        feed(tick, q[k], v[k], effort[k])
    tick.s[T.S_WANT_GRADIENT] = 1.0
    tick.tick()
    samples = tick.window_samples()
    pin_model = pin.buildModelFromUrdf(URDF)
    pin_data = pin_model.createData()
    phi0 = MODEL.inertial_parameters()

    def loss(phi, theta):
        pin_model.armature = theta[:, 0].copy()
        for body in range(NV):
            pin_model.inertias[body + 1] = pin.Inertia.FromDynamicParameters(
                phi[10 * body:10 * body + 10][np.argsort(OURS_FROM_PIN_PARAM)])
        total = 0.0
        for k, (q_k, v_k, a_k, _) in enumerate(samples):
            tau = effort[len(q) - window + k]
            r = tau - pin.rnea(pin_model, pin_data, q_k, v_k, a_k) - theta[:, 1] * v_k - theta[:, 2] * np.tanh(v_k / V_S)
            total += 0.5 * r @ r
        return total
    theta0 = np.stack([ARMATURE, VISCOUS, COULOMB], axis=1)
    h = 1e-6
    expected = np.zeros(3 * NV)
    for j in range(3 * NV):
        step = np.zeros(3 * NV)
        step[j] = h
        expected[j] = (loss(phi0, theta0 + step.reshape(NV, 3)) - loss(phi0, theta0 - step.reshape(NV, 3))) / (2 * h)
    np.testing.assert_allclose(tick.f.joint_gradient, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
    expected = np.zeros(phi0.size)
    for j in range(phi0.size):
        step = np.zeros(phi0.size)
        step[j] = h
        expected[j] = (loss(phi0 + step, theta0) - loss(phi0 - step, theta0)) / (2 * h)
    np.testing.assert_allclose(tick.f.gradient, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_twist_gradient_against_central_differences_of_the_window_loss():
    rng = np.random.default_rng(6)
    window = 10
    q, v, effort = trajectory(rng, 25)
    tick = make_tick(window)
    feed(tick, q[0], v[0], effort[0], reset=True, twist=True)
    for k in range(1, len(q)):
        feed(tick, q[k], v[k], effort[k], twist=True)
    tick.s[T.S_WANT_TWIST] = 1.0
    tick.tick()
    samples = tick.window_samples()

    def loss(eta):
        perturbed = MODEL.with_twist_perturbation(eta)
        data = perturbed.create_data()
        return 0.5 * sum(float(np.sum((tau - dc.rnea(perturbed, data, q_k, v_k, a_k)) ** 2))
                         for q_k, v_k, a_k, tau in samples)

    eps = 1e-6
    numeric = np.zeros(6 * MODEL.nbodies)
    for k in range(numeric.size):
        e = np.zeros(numeric.size)
        e[k] = eps
        numeric[k] = (loss(e) - loss(-e)) / (2 * eps)
    assert np.abs(numeric).max() > 1e-3
    np.testing.assert_allclose(tick.f.twist_gradient, numeric, rtol=1e-5, atol=1e-6 * np.abs(numeric).max())


def test_wrench_is_the_damped_least_squares_of_the_external_torque():
    rng = np.random.default_rng(7)
    q, v, effort = trajectory(rng, 30)
    tick = make_tick()
    feed(tick, q[0], v[0], effort[0], reset=True)
    for k in range(1, len(q)):
        feed(tick, q[k], v[k], effort[k])
    tick.s[T.S_WANT_WRENCH] = 1.0
    tick.tick()
    assert tick.s[T.S_WRENCH_OK] == 1.0
    frame = PIN.getFrameId(FRAME)
    J = pin.computeFrameJacobian(PIN, PIN_DATA, q[-1], frame, pin.LOCAL_WORLD_ALIGNED)
    J = np.vstack([J[3:], J[:3]])        # angular rows first
    r = tick.f.tau_ext
    expected = np.linalg.solve(J @ J.T + 1e-6 * np.eye(6), J @ r)
    np.testing.assert_allclose(tick.f.wrench, expected, rtol=1e-8, atol=1e-10)


def test_a_reset_restarts_the_window_and_the_observer():
    rng = np.random.default_rng(8)
    q, v, effort = trajectory(rng, 10)
    tick = make_tick(5)
    for k in range(len(q)):
        feed(tick, q[k], v[k], effort[k], reset=k == 0)
    assert tick.s[T.S_COUNT] == 5
    feed(tick, q[-1], v[-1], effort[-1], reset=True)
    assert tick.s[T.S_COUNT] == 0
    assert np.all(tick.f.tau_ext == 0.0)
    np.testing.assert_allclose(tick.f.p_prev, pin_momentum_terms(q[-1], v[-1])[0], rtol=1e-10)
