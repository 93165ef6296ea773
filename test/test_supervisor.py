"""The control loop's policy without ROS (control/supervisor.py), rule by rule as doc/controller.md
gives them: what a joint state starts, restarts and re-anchors, and the watchdog's safe mode. The
ROS tests (test_ros_safety.py) check the same rules end to end on a running controller."""
import numpy as np
import pytest

from dyn_control.control.flags import (NS, S_ANCHOR, S_BLEND_TIME, S_DT, S_HAS_EFFORT, S_NEW_SAMPLE, S_RESET, S_SAFE,
                                       S_SAFE_ZERO)
from dyn_control.control.supervisor import Supervisor
from recording_log import RecordingLog

MS = 1_000_000      # [ns]


def _supervisor(**settings):
    s = np.zeros(NS)
    s[S_BLEND_TIME] = 0.5
    sup = Supervisor(s, RecordingLog())
    for name, value in settings.items():
        setattr(sup, name, value)
    return sup, s


def _sample(sup, s, now, stamp, has_effort=True):
    s[S_NEW_SAMPLE] = s[S_RESET] = s[S_ANCHOR] = 0.0     # the tick clears them after each call
    return sup.on_sample(now, stamp, has_effort)


def test_the_first_sample_starts_the_clock_and_the_estimators_and_anchors_the_reference():
    sup, s = _supervisor()
    assert _sample(sup, s, 10.0, 5_000 * MS, has_effort=False)
    assert (s[S_NEW_SAMPLE], s[S_RESET], s[S_ANCHOR], s[S_DT], s[S_HAS_EFFORT]) == (1.0, 1.0, 1.0, 0.0, 0.0)
    assert sup.time(5_000 * MS) == 0.0 and sup.time(5_250 * MS) == pytest.approx(0.25)
    assert sup.estimator_restarts == 0


def test_a_sample_within_the_watchdog_timeout_steps_the_estimators():
    sup, s = _supervisor(watchdog_timeout=0.05)
    _sample(sup, s, 10.0, 5_000 * MS)
    assert not _sample(sup, s, 10.001, 5_001 * MS)
    assert (s[S_NEW_SAMPLE], s[S_RESET], s[S_ANCHOR], s[S_HAS_EFFORT]) == (1.0, 0.0, 0.0, 1.0)
    assert s[S_DT] == pytest.approx(0.001)
    assert sup.estimator_restarts == 0


def test_a_sample_after_a_gap_restarts_the_estimators_and_re_anchors():
    sup, s = _supervisor(watchdog_timeout=0.05)
    _sample(sup, s, 10.0, 5_000 * MS)
    _sample(sup, s, 10.08, 5_080 * MS)            # 80 ms after the one before: the loop paused
    assert (s[S_RESET], s[S_ANCHOR]) == (1.0, 1.0)
    assert s[S_DT] == pytest.approx(0.08)
    assert sup.estimator_restarts == 1


def test_stamps_that_jump_back_start_a_new_time_base_and_the_reference_goes_on():
    sup, s = _supervisor()
    _sample(sup, s, 10.0, 5_000 * MS)
    _sample(sup, s, 10.001, 5_001 * MS)           # 1 ms on the reference clock
    _sample(sup, s, 10.002, 1_000 * MS)           # the robot's clock was reset
    assert sup.time(1_000 * MS) == pytest.approx(0.001)
    assert (s[S_RESET], s[S_ANCHOR]) == (1.0, 1.0) and sup.estimator_restarts == 1
    assert [level for level, _ in sup.log.lines] == ["warning"] and "jumped back by 4.001 s" in sup.log.lines[0][1]


@pytest.mark.parametrize("safe_mode, zero", [("gravity", 0.0), ("zero", 1.0)])
def test_stale_joint_states_hold_g_q_or_zero_and_count_one_trip(safe_mode, zero):
    sup, s = _supervisor(watchdog_timeout=0.05, safe_mode_timeout=1.0, safe_mode=safe_mode)
    _sample(sup, s, 10.0, 5_000 * MS)
    assert not sup.watchdog(10.049) and s[S_SAFE] == 0.0 and not sup.safe     # 49 ms: not yet stale
    for now in (10.051, 10.2, 10.5):
        assert not sup.watchdog(now)              # holding: the hold torque is published
        assert (s[S_SAFE], s[S_SAFE_ZERO]) == (1.0, zero) and sup.safe
    assert sup.watchdog_trips == 1
    assert sup.log.lines == [("error", f"safe mode ({safe_mode}): no valid joint state for 0.051 s")]


def test_silent_falls_quiet_only_once_the_hold_torque_went_out_whole():
    sup, s = _supervisor(watchdog_timeout=0.05, safe_mode_timeout=0.05, safe_mode_final="silent")
    _sample(sup, s, 10.0, 5_000 * MS)
    assert not sup.watchdog(10.06)                # stale and final, but the rate limit still ramps
    assert sup.silent and s[S_SAFE] == 1.0 and s[S_SAFE_ZERO] == 0.0
    sup.hold_published = True                     # the node: the hold torque went out unlimited
    assert sup.watchdog(10.07)
    assert [level for level, _ in sup.log.lines] == ["error", "error"]
    assert "safe_mode_final silent" in sup.log.lines[1][1]


def test_final_zero_holds_zero_after_safe_mode_timeout_and_final_hold_goes_on():
    sup, s = _supervisor(watchdog_timeout=0.05, safe_mode_timeout=0.2, safe_mode_final="zero")
    _sample(sup, s, 10.0, 5_000 * MS)
    sup.watchdog(10.1)
    assert (s[S_SAFE], s[S_SAFE_ZERO]) == (1.0, 0.0) and not sup.silent
    assert not sup.watchdog(10.3)
    assert (s[S_SAFE], s[S_SAFE_ZERO]) == (1.0, 1.0) and sup.silent
    sup, s = _supervisor(watchdog_timeout=0.05, safe_mode_timeout=0.2, safe_mode_final="hold")
    _sample(sup, s, 10.0, 5_000 * MS)
    sup.hold_published = True
    assert not sup.watchdog(12.0)
    assert (s[S_SAFE], s[S_SAFE_ZERO]) == (1.0, 0.0)


def test_fresh_joint_states_leave_safe_mode_re_anchored_and_say_how_long_the_outage_was():
    sup, s = _supervisor(watchdog_timeout=0.05, safe_mode_timeout=1.0)
    _sample(sup, s, 10.0, 5_000 * MS)
    sup.watchdog(10.3)
    s[S_ANCHOR] = 0.0
    _sample(sup, s, 10.4, 5_400 * MS)             # the outage ends
    assert (s[S_RESET], s[S_ANCHOR]) == (1.0, 1.0)
    assert not sup.watchdog(10.4, lambda: "; late in transit")
    assert not sup.safe and s[S_SAFE] == 0.0 and s[S_ANCHOR] == 1.0
    assert sup.outage == pytest.approx(0.4) and sup.stamp_before_outage == 5_000 * MS
    assert sup.log.lines[-1] == ("info", "joint states are back after 0.400 s; late in transit: leaving safe mode, "
                                         "blending back to the reference over 0.5 s")
    sup.watchdog(10.5)                            # stale again: a second trip
    assert sup.watchdog_trips == 2


def test_restart_forgets_the_clock_and_safe_mode_but_keeps_the_counts():
    sup, s = _supervisor(watchdog_timeout=0.05)
    _sample(sup, s, 10.0, 5_000 * MS)
    sup.watchdog(11.0)
    sup.restart()
    assert not sup.safe and not sup.silent and sup.start_stamp is None and sup.watchdog_trips == 1
    assert _sample(sup, s, 20.0, 9_000 * MS)      # the first sample again
