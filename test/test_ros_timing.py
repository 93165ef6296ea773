"""The nodes' real-time loop (dyn_control.nodes.timing), without ROS: the thread calls the tick,
pauses garbage collection while any loop runs, accounts for overruns, stops on an exception, and
applies scheduler settings best effort. No assertion on how punctual the loop is."""
import gc
import os
import threading
import time

import pytest

from dyn_control.nodes.timing import RealtimeLoop, apply_realtime

pytestmark = pytest.mark.ros


def wait_for(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    assert condition()


def test_ticks_run_with_gc_paused_and_gc_comes_back():
    seen = []
    loop = RealtimeLoop("test", 0.002, lambda now: seen.append((now, gc.isenabled())))
    assert gc.isenabled()
    loop.start()
    wait_for(lambda: len(seen) >= 20)
    other = RealtimeLoop("other", 0.002, lambda now: None)
    other.start()
    wait_for(lambda: other.stats.count > 5)
    loop.stop()
    assert not gc.isenabled(), "one loop still runs: the collector stays off"
    other.stop()
    assert gc.isenabled()
    assert not any(enabled for _, enabled in seen)
    starts = [now for now, _ in seen]
    assert starts == sorted(starts) and loop.stats.count == len(seen)


def test_overruns_count_as_deadline_misses():
    """A tick that works for 3.5 periods lets at least 3 deadlines pass; without catch-up the loop
    then skips them (next tick at once, for the latest deadline)."""
    period = 0.002
    ticks = []

    def tick(now):
        ticks.append(now)
        if len(ticks) == 3:
            time.sleep(3.5 * period)
    loop = RealtimeLoop("test", period, tick)
    loop.start()
    wait_for(lambda: len(ticks) >= 6)
    loop.stop()
    assert loop.stats.deadline_misses >= 3
    assert loop.stats.slips == 0


def test_catch_up_beyond_max_lag_is_a_slip():
    ticks = []

    def tick(now):
        ticks.append(now)
        if len(ticks) == 2:
            time.sleep(0.05)
    loop = RealtimeLoop("test", 0.001, tick, catch_up=True, max_lag=0.01)
    loop.start()
    wait_for(lambda: len(ticks) >= 5)
    loop.stop()
    assert loop.stats.slips == 1


def test_an_exception_stops_the_loop_and_is_reported():
    errors = []

    def tick(now):
        raise RuntimeError("boom")
    loop = RealtimeLoop("test", 0.001, tick, on_error=errors.append)
    loop.start()
    wait_for(lambda: not loop.running)
    assert isinstance(loop.error, RuntimeError) and errors == [loop.error]
    assert gc.isenabled()


def test_realtime_settings_are_best_effort():
    """Refused settings (an invalid priority, a CPU that does not exist) give warnings, not errors;
    an allowed affinity applies to the calling thread only."""
    warnings, result = [], {}

    def body():
        apply_realtime(200, 100000, warnings.append)
        apply_realtime(0, 0, warnings.append)
        result["affinity"] = os.sched_getaffinity(0)
    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert len(warnings) == 2
    assert "realtime.priority 200" in warnings[0] and "realtime.cpu 100000" in warnings[1]
    assert result["affinity"] == {0}
    assert os.sched_getaffinity(0) != {0} or os.cpu_count() == 1


@pytest.mark.parametrize("busy", [False, True])
def test_tick_cpu_time_is_the_threads_own(busy):
    """The statistics keep each tick's duration and the loop thread's CPU time in it apart: a tick
    that sleeps 4 ms uses next to no CPU; one that computes for 4 ms uses about that much."""
    def tick(now):
        end = time.monotonic() + 0.004
        if not busy:
            time.sleep(0.004)
        while time.monotonic() < end:
            pass
    loop = RealtimeLoop("test", 0.010, tick)
    loop.start()
    wait_for(lambda: loop.stats.count >= 8)
    loop.stop()
    s = loop.stats.summary()
    assert s["compute_p50"] >= 0.004
    if busy:
        assert s["cpu_p50"] > 0.5 * s["compute_p50"]
    else:
        assert s["cpu_p50"] < 0.25 * s["compute_p50"]
