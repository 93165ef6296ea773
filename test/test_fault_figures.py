"""The fault scenarios' recovery figure (dyn_control.nodes.faults.recovery_time) on recordings
built here: a sine tracked exactly, tracking excursions, gaps of the commands and ~/desired that
carry an old state. An excursion that begins within 0.3 s after a gap over 5 ms, or after the
controller acted on a state over 5 ms old (a stall of the machine), is counted apart; one without
either, one that began before the stall, or one after the fault's own silence sets the recovery
time."""
import numpy as np
import pytest

from dyn_control.nodes import faults

MS = 1_000_000


class Recording:
    """rows as faults.FaultMonitor keeps them: states and ~/desired at 1 kHz (source timestamp,
    stamp, position, velocity) tracking the sine exactly, commands at 1 kHz but for `gaps`
    [(start, end)] in ms, `excursions` {ms: error [rad]} added to the states' positions, and
    `stale` {ms: age [ms]}: the ~/desired sent then carries the state of `age` ms before."""

    def __init__(self, duration_ms, gaps=(), excursions=None, stale=None):
        omega = 2 * np.pi * faults.FREQUENCY
        self.rows = {"states": [], "desired": [], "commands": []}
        for k in range(duration_ms):
            t = k * MS
            q = np.full(2, faults.AMPLITUDE * np.sin(omega * k * 1e-3))
            age = (stale or {}).get(k, 0)
            q_then = np.full(2, faults.AMPLITUDE * np.sin(omega * (k - age) * 1e-3))
            self.rows["desired"].append((t, t - age * MS, q_then, np.zeros(2)))
            self.rows["states"].append((t, t, q + (excursions or {}).get(k, 0.0), np.zeros(2)))
            if not any(start < k < end for start, end in gaps):
                self.rows["commands"].append((t, np.zeros(2)))


def test_tracking_within_tolerance_recovers_at_once():
    assert faults.recovery_time(Recording(4000), 1000 * MS) == (0.0, 0)


def test_an_excursion_without_a_stall_is_the_recovery():
    recovery, excused = faults.recovery_time(Recording(4000, excursions={2500: 2e-3}), 1000 * MS)
    assert recovery == pytest.approx(1.5) and excused == 0


def test_an_excursion_after_a_stall_is_counted_apart():
    recording = Recording(4000, gaps=[(2480, 2498)], excursions={2500: 2e-3, 2600: 2e-3})
    assert faults.recovery_time(recording, 1000 * MS) == (0.0, 2)


def test_an_excursion_after_the_controller_acted_on_an_old_state_is_counted_apart():
    recording = Recording(4000, stale={2480: 10}, excursions={2500: 2e-3})
    assert faults.recovery_time(recording, 1000 * MS) == (0.0, 1)


def test_a_state_five_ms_old_or_less_is_no_stall():
    recording = Recording(4000, stale={2480: 5}, excursions={2500: 2e-3})
    recovery, excused = faults.recovery_time(recording, 1000 * MS)
    assert recovery == pytest.approx(1.5) and excused == 0


def test_a_stall_excuses_no_excursion_that_began_before_it():
    recording = Recording(4000, gaps=[(1200, 1220)], excursions={k: 2e-3 for k in range(1000, 1400)})
    recovery, excused = faults.recovery_time(recording, 1000 * MS)
    assert recovery == pytest.approx(0.399) and excused == 0


def test_a_gap_of_five_periods_or_less_is_no_stall():
    recording = Recording(4000, gaps=[(2494, 2499)], excursions={2500: 2e-3})
    recovery, excused = faults.recovery_time(recording, 1000 * MS)
    assert recovery == pytest.approx(1.5) and excused == 0


def test_the_faults_own_silence_excuses_nothing():
    recording = Recording(4000, gaps=[(500, 1000)], excursions={1100: 2e-3})
    recovery, excused = faults.recovery_time(recording, 1000 * MS)
    assert recovery == pytest.approx(0.1) and excused == 0


def test_an_excursion_still_there_at_the_end_never_recovers():
    recording = Recording(4000, excursions={k: 2e-3 for k in range(3500, 4000)})
    assert faults.recovery_time(recording, 1000 * MS)[0] == float("inf")
