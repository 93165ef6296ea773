"""The safety pieces of the controller's tick (dyn_control.control.safety and their use in tick.py):
the re-engagement blend against its boundary conditions and central differences, the torque-rate
limit, and the tick's re-anchoring against Pinocchio's computed torque on the blended reference."""
import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from dyn_control.control import safety
from dyn_control.control import tick as T

pytestmark = pytest.mark.kernels

URDF = dc.bundled_urdf("arm7")
MODEL = dc.load_urdf(URDF)
NV = MODEL.nv
PIN = pin.buildModelFromUrdf(URDF)
PIN_DATA = PIN.createData()
LIMITS = np.asarray(MODEL.effort_limit)
KP, KD = 400.0, 40.0


def blended(elapsed, duration, offset_q, offset_v, q_d, v_d, a_d, velocity_duration=None):
    out = [np.zeros_like(q_d) for _ in range(3)]
    velocity_duration = duration if velocity_duration is None else velocity_duration
    blending = safety.blend_reference(elapsed, duration, velocity_duration, offset_q, offset_v, q_d, v_d, a_d, *out)
    return blending, out


def test_blend_starts_at_the_measured_state_and_joins_the_reference_smoothly():
    rng = np.random.default_rng(0)
    q_d, v_d, a_d = rng.normal(size=(3, NV))
    offset_q, offset_v = rng.normal(size=(2, NV))
    duration = 0.8
    blending, (q_r, v_r, a_r) = blended(0.0, duration, offset_q, offset_v, q_d, v_d, a_d)
    assert blending
    np.testing.assert_allclose(q_r, q_d + offset_q, rtol=0, atol=1e-15)
    np.testing.assert_allclose(v_r, v_d + offset_v, rtol=0, atol=1e-15)
    np.testing.assert_allclose(a_r, a_d, rtol=0, atol=1e-15)
    # the end: value, slope and curvature of the offset are zero
    blending, (q_r, v_r, a_r) = blended(duration * (1 - 1e-12), duration, offset_q, offset_v, q_d, v_d, a_d)
    np.testing.assert_allclose(np.concatenate([q_r - q_d, v_r - v_d, a_r - a_d]), 0.0, atol=1e-9)
    blending, (q_r, v_r, a_r) = blended(duration, duration, offset_q, offset_v, q_d, v_d, a_d)
    assert not blending
    assert np.array_equal(q_r, q_d) and np.array_equal(v_r, v_d) and np.array_equal(a_r, a_d)


@pytest.mark.parametrize("velocity_duration", [1.3, 0.6])
def test_blend_velocity_and_acceleration_are_the_derivatives_of_its_position(velocity_duration):
    """With a constant reference, v_r and a_r are the central differences of q_r and v_r in time,
    also where the velocity offset has died out before the position offset (T_v < T)."""
    rng = np.random.default_rng(1)
    zero = np.zeros(NV)
    q_d = rng.normal(size=NV)
    offset_q, offset_v = rng.normal(size=(2, NV))
    duration, h = 1.3, 1e-5
    for elapsed in (0.1, 0.5, 0.77, 1.2):
        _, (_, v_r, a_r) = blended(elapsed, duration, offset_q, offset_v, q_d, zero, zero, velocity_duration)
        _, (q_plus, v_plus, _) = blended(elapsed + h, duration, offset_q, offset_v, q_d, zero, zero, velocity_duration)
        _, (q_minus, v_minus, _) = blended(elapsed - h, duration, offset_q, offset_v, q_d, zero, zero,
                                           velocity_duration)
        np.testing.assert_allclose(v_r, (q_plus - q_minus) / (2 * h), rtol=1e-7, atol=1e-7)
        np.testing.assert_allclose(a_r, (v_plus - v_minus) / (2 * h), rtol=1e-6, atol=1e-6)


def test_a_long_blend_does_not_carry_the_measured_velocity_on():
    """A position offset of 3 rad blends over 11.25 s at 0.5 rad/s; a velocity offset of 2 rad/s
    dies out within T_v = 1 s: from then on the blend moves no faster than the position offset's
    15/8 x 0.5 rad/s, and the velocity's excursion is at most max H1 = 16/81 (at s = 1/3) x 2 rad/s x 1 s."""
    controlled = np.arange(1)
    offset_q, offset_v = np.array([3.0]), np.array([2.0])
    duration = safety.blend_duration(offset_q, controlled, 1.0, 0.5)
    assert duration == pytest.approx(11.25)
    zero = np.zeros(1)
    times = np.linspace(0.0, duration, 4001)
    rows = [blended(t, duration, offset_q, offset_v, zero, zero, zero, 1.0)[1] for t in times]
    q_r, v_r = np.array([r[0][0] for r in rows]), np.array([r[1][0] for r in rows])
    assert np.abs(v_r[times >= 1.0]).max() <= 1.875 * 0.5 + 1e-9
    position_part = offset_q[0] * np.array([1 - 10 * s ** 3 + 15 * s ** 4 - 6 * s ** 5 for s in times / duration])
    assert np.abs(q_r - position_part).max() <= 16 / 81 * 2.0 * 1.0 + 1e-12


def test_rate_limit_bounds_every_step_and_counts():
    controlled = np.array([0, 2])
    tau_prev = np.array([1.0, 5.0, -1.0])
    max_step = np.array([0.5, 0.5, 0.25])
    tau = np.array([3.0, 9.0, -0.9])
    assert safety.rate_limit(tau, tau_prev, max_step, controlled)
    np.testing.assert_array_equal(tau, [1.5, 9.0, -0.9])       # joint 1 is not controlled
    np.testing.assert_array_equal(tau_prev, [1.5, 5.0, -0.9])
    tau = np.array([1.6, 0.0, -1.0])
    assert not safety.rate_limit(tau, tau_prev, max_step, controlled)
    np.testing.assert_array_equal(tau, [1.6, 0.0, -1.0])


def make_tick():
    tick = T.ControllerTick(MODEL, np.arange(NV), "arm7_tool", 10)
    tick.f.kp[:], tick.f.kd[:] = KP, KD
    return tick


def step(tick, t, q, v, anchor=False):
    tick.f.q[:], tick.f.v[:] = q, v
    tick.s[T.S_T], tick.s[T.S_NEW_SAMPLE] = t, 1.0
    if anchor:
        tick.s[T.S_ANCHOR] = 1.0     # as the node sets it; the tick clears it when it anchors
    tick.tick()
    tick.s[T.S_NEW_SAMPLE] = 0.0


def test_anchor_makes_the_first_command_hold_the_measured_state():
    """Anchored at the measured (q, v), far from the hold reference: the command is Pinocchio's
    rnea(q, v, a_d) (no error to act on), the reference then blends to the hold position."""
    rng = np.random.default_rng(2)
    tick = make_tick()
    centre = MODEL.neutral_configuration()
    tick.f.centre[:] = centre
    q = centre + rng.uniform(-0.2, 0.2, NV)
    v = rng.uniform(-0.5, 0.5, NV)
    tick.s[T.S_BLEND_TIME], tick.s[T.S_BLEND_SPEED] = 0.5, 100.0
    step(tick, 3.0, q, v, anchor=True)
    expected = np.clip(pin.rnea(PIN, PIN_DATA, q, v, np.zeros(NV)), -LIMITS, LIMITS)
    np.testing.assert_allclose(tick.f.command, expected, rtol=1e-12, atol=1e-10)
    step(tick, 3.5, q, v)     # the blend is over: computed torque on the hold reference
    a = KD * (0.0 - v) + KP * (centre - q)
    expected = np.clip(pin.rnea(PIN, PIN_DATA, q, v, a), -LIMITS, LIMITS)
    np.testing.assert_allclose(tick.f.command, expected, rtol=1e-12, atol=1e-10)
    assert tick.s[T.S_ANCHORS] == 1 and tick.s[T.S_BLENDING] == 0.0


def test_a_large_error_re_anchors_and_the_rate_limit_bounds_the_command():
    tick = make_tick()
    centre = MODEL.neutral_configuration()
    tick.f.centre[:] = centre
    tick.s[T.S_ERROR_LIMIT] = 0.3
    step(tick, 0.0, centre, np.zeros(NV))
    assert tick.s[T.S_ERROR_ANCHORS] == 0
    q = centre.copy()
    q[3] += 0.5                        # pushed away by more than the limit
    step(tick, 0.001, q, np.zeros(NV))
    assert tick.s[T.S_ERROR_ANCHORS] == 1
    expected = np.clip(pin.rnea(PIN, PIN_DATA, q, np.zeros(NV), np.zeros(NV)), -LIMITS, LIMITS)
    np.testing.assert_allclose(tick.f.command, expected, rtol=1e-12, atol=1e-10)


def test_the_rate_limit_bounds_each_command_step():
    tick = make_tick()
    centre = MODEL.neutral_configuration()
    tick.f.centre[:] = centre
    step(tick, 0.0, centre, np.zeros(NV))
    previous = tick.f.command.copy()
    tick.f.max_step[:] = 1.0           # [N m] per tick
    v = np.zeros(NV)
    v[3] = 1.0                         # kd v: 40 rad/s^2 on joint 4, tens of N m
    step(tick, 0.001, centre, v)
    unlimited = np.clip(pin.rnea(PIN, PIN_DATA, centre, v, -KD * v), -LIMITS, LIMITS)
    assert np.abs(unlimited - previous).max() > 5.0
    np.testing.assert_allclose(tick.f.command, np.clip(unlimited, previous - 1.0, previous + 1.0),
                               rtol=1e-12, atol=1e-10)
    assert tick.s[T.S_RATE_LIMITED] == 1


def test_a_large_offset_blends_slower():
    controlled = np.arange(3)
    offset = np.array([0.1, -0.8, 0.2])
    assert safety.blend_duration(offset, controlled, 1.0, 0.5) == pytest.approx(1.875 * 0.8 / 0.5)
    assert safety.blend_duration(offset * 0.1, controlled, 1.0, 0.5) == 1.0
    # the offset's peak speed is then the bound
    duration = safety.blend_duration(offset, controlled, 1.0, 0.5)
    zero = np.zeros(3)
    speeds = [np.abs(blended(t, duration, offset, zero, zero, zero, zero, 1.0)[1][1]).max()
              for t in np.linspace(0.0, duration, 401)]
    assert max(speeds) == pytest.approx(0.5, rel=1e-4)


def test_an_anchor_from_a_fast_state_brakes_first_then_blends():
    """Faster than the brake speed, a pending anchor waits: the command is Pinocchio's
    rnea(q, v, -braking_gain v) (the braking law at the fresh state), tick after tick, counted once;
    once every joint is slower, the anchor is taken and the command is rnea(q, v, a_d) again (the
    blend starts at the measured state)."""
    tick = make_tick()
    centre = MODEL.neutral_configuration()
    tick.f.centre[:] = centre
    gain = 5.0
    tick.f.brake_gain[:] = gain
    tick.s[T.S_BLEND_TIME], tick.s[T.S_BLEND_SPEED], tick.s[T.S_BRAKE_SPEED] = 0.5, 100.0, 1.0
    step(tick, 0.0, centre, np.zeros(NV))
    q = centre + 0.3
    v = np.zeros(NV)
    v[1] = 2.0                         # a falling shoulder
    for k, t in enumerate((1.0, 1.001)):
        step(tick, t, q, v, anchor=k == 0)
        expected = pin.rnea(PIN, PIN_DATA, q, v, -gain * v)
        assert (np.abs(expected) < LIMITS).all()
        np.testing.assert_allclose(tick.f.command, expected, rtol=1e-12, atol=1e-10)
        assert tick.s[T.S_ANCHOR] == 1.0 and tick.s[T.S_BRAKINGS_FIRST] == 1
    v[1] = 0.5                         # braked below the brake speed
    step(tick, 1.2, q, v)
    assert tick.s[T.S_ANCHOR] == 0.0 and tick.s[T.S_BRAKING_FIRST] == 0.0
    expected = np.clip(pin.rnea(PIN, PIN_DATA, q, v, np.zeros(NV)), -LIMITS, LIMITS)
    np.testing.assert_allclose(tick.f.command, expected, rtol=1e-12, atol=1e-10)


def test_braking_beyond_the_effort_limits_slows_every_joint_at_one_rate():
    """A falling arm (6 rad/s on the shoulder, 4 on the elbow): the braking torque of a = -k v would
    exceed the effort limits. The command stays within them, and Pinocchio's forward dynamics of
    it, aba(q, v, command), is a = -alpha k v with one alpha in (0, 1) for every joint: no joint is
    sped up by another's saturation."""
    tick = make_tick()
    centre = MODEL.neutral_configuration()
    tick.f.centre[:] = centre
    gain = 20.0
    tick.f.brake_gain[:] = gain
    tick.s[T.S_BRAKE_SPEED] = 1.0
    step(tick, 0.0, centre, np.zeros(NV))
    q = centre + 0.3
    v = np.array([1.0, 6.0, -2.0, 4.0, 3.0, -5.0, 8.0])
    step(tick, 1.0, q, v, anchor=True)
    assert tick.s[T.S_BRAKING_FIRST] == 1.0
    unscaled = pin.rnea(PIN, PIN_DATA, q, v, -gain * v)
    assert (np.abs(unscaled) > LIMITS).any(), "the case must saturate"
    command = tick.f.command
    assert (np.abs(command) <= LIMITS + 1e-9).all()
    a = pin.aba(PIN, PIN_DATA, q, v, command)
    alpha = a / (-gain * v)
    assert 0.0 < alpha.min() and alpha.max() < 1.0
    np.testing.assert_allclose(alpha, alpha[0], rtol=1e-9)
