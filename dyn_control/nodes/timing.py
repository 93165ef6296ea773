"""The real-time loop of the nodes: a dedicated thread that runs a tick function at absolute
deadlines (not an rclpy timer), with timing statistics for /diagnostics.

Waiting: sleep until `spin` seconds before the deadline (time.monotonic based), then spin. The
thread asks the kernel for a 1 ns timer slack (prctl PR_SET_TIMERSLACK, Linux), which cuts the
oversleep of time.sleep from ~60 us to a few us. Spinning the last part of the period keeps the
thread's core awake: on the development VM a publish then cost 22 us instead of 59 us after a
sleep. default_cpu() gives the loop a core of its own where the process may use two or more. Optional SCHED_FIFO
priority and CPU affinity are best effort: refused (no CAP_SYS_NICE, no such CPU) they log a
warning and the loop runs anyway.

Garbage collection is off while any loop runs (gc.freeze() first, so the objects that exist are
never scanned again; no collection before: a full one takes ~50 ms with Numba loaded, and held the
GIL as the activate reply was to go out); it comes back when the last loop stops, and the frozen
garbage with it. The loop body should allocate
little: the nodes preallocate their buffers and messages.

Statistics: each tick's duration on the wall clock ("compute", what a deadline sees) and the loop
thread's CPU time in it (time.thread_time, 0.85 us a call here: without the time the thread was
preempted or waited for the GIL).

Deadline misses: tick k is due at D_k = D_0 + k P; every deadline that passes while a tick is
still working counts as a miss. Without catch-up (the controller) the loop then runs one tick at
once, for the latest deadline passed, and skips the others; with catch-up (the simulator, whose
clock must keep pace with the wall clock) the overdue ticks run back to back as long as the loop is
less than `max_lag` behind; beyond that it drops the backlog (a "slip") and restarts its schedule.
"""
import ctypes
import gc
import os
import threading
import time

import numpy as np

SPIN_MARGIN = 1e-4      # [s] default: sleep until this long before the deadline, then spin
STATS_WINDOW = 2048     # ticks kept for the period and compute-time percentiles
PR_SET_TIMERSLACK = 29

_gc_lock = threading.Lock()
_gc_pausers = 0


def pause_gc():
    """Disable the garbage collector (process-wide) until every pause_gc() is matched by resume_gc()."""
    global _gc_pausers
    with _gc_lock:
        if _gc_pausers == 0:
            gc.freeze()
            gc.disable()
        _gc_pausers += 1


def resume_gc():
    global _gc_pausers
    with _gc_lock:
        _gc_pausers -= 1
        if _gc_pausers == 0:
            gc.unfreeze()
            gc.enable()


def reduce_timer_slack():
    """1 ns timer slack for the calling thread (Linux); False where unavailable."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def apply_realtime(priority, cpu, warn, exclusive=False):
    """SCHED_FIFO `priority` (0: leave the scheduler alone) and affinity to `cpu` (-1: any) for the
    calling thread, best effort: each refusal is reported through warn(message). With `exclusive`,
    the process's other threads (executor, DDS) move to its other CPUs, so that they never preempt
    the calling thread (threads they start later inherit their affinity). Returns
    (moved thread ids, their affinity before) for restore_affinity()."""
    if priority > 0:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        except (OSError, AttributeError) as error:
            warn(f"realtime.priority {priority}: SCHED_FIFO refused ({error}); running with the default "
                 "scheduler (grant CAP_SYS_NICE or an rtprio limit, e.g. in /etc/security/limits.conf)")
    if cpu >= 0:
        try:
            others = os.sched_getaffinity(0) - {cpu}
            os.sched_setaffinity(0, {cpu})
        except (OSError, AttributeError, ValueError) as error:
            warn(f"realtime.cpu {cpu}: affinity refused ({error}); running on any CPU")
            return [], set()
        if exclusive and others:
            me, moved = threading.get_native_id(), []
            for task in map(int, os.listdir("/proc/self/task")):
                if task != me:
                    try:
                        os.sched_setaffinity(task, others)
                        moved.append(task)
                    except OSError:
                        pass    # the thread ended meanwhile
            return moved, others | {cpu}
    return [], set()


def restore_affinity(moved, affinity):
    """Undo the exclusive part of apply_realtime (when the loop stops)."""
    for task in moved:
        try:
            os.sched_setaffinity(task, affinity)
        except OSError:
            pass


def default_cpu():
    """The CPU a loop thread gets by default: the last one this process may use when it may use two
    or more (the others keep the executor and DDS's threads), else -1 (any)."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return -1
    return cpus[-1] if len(cpus) >= 2 else -1


def wait_until(deadline, spin=SPIN_MARGIN):
    """Sleep until `spin` seconds before `deadline` (time.monotonic), then spin to it. The spin
    yields the GIL on every turn (sleep(0)), so that it never holds up another thread of the process."""
    remaining = deadline - time.monotonic()
    if remaining > spin:
        time.sleep(remaining - spin)
    while time.monotonic() < deadline:
        time.sleep(0)


class LoopStats:
    """Period and compute time of the recent ticks, and counters. Written by the loop thread only;
    readers (the diagnostics timer) take snapshots, a torn read costs one sample at most."""

    def __init__(self, window=STATS_WINDOW):
        self.periods = np.zeros(window)    # [s] start-to-start of consecutive ticks
        self.computes = np.zeros(window)   # [s] tick work, wall clock (what the deadline sees)
        self.cpu = np.zeros(window)        # [s] CPU time of the loop thread during the tick
        self.count = 0                     # ticks recorded so far (the ring is full once >= window)
        self.deadline_misses = 0
        self.slips = 0                     # backlogs dropped by a catch-up loop
        self.last_start = None

    def record(self, start, compute, cpu):
        k = self.count % self.periods.shape[0]
        self.periods[k] = start - self.last_start if self.last_start is not None else np.nan
        self.computes[k] = compute
        self.cpu[k] = cpu
        self.last_start = start
        self.count += 1

    def summary(self):
        """{"period_p50", "period_p99", "period_max", "compute_p50", "compute_p99", "cpu_p50", "cpu_p99"}
        in seconds over the recent ticks (NaN before there are two), plus "ticks", "deadline_misses"
        and "slips"."""
        n = min(self.count, self.periods.shape[0])
        periods = self.periods[:n].copy()
        periods = periods[np.isfinite(periods)]
        computes = self.computes[:n].copy()
        cpu = self.cpu[:n].copy()
        out = {"ticks": self.count, "deadline_misses": self.deadline_misses, "slips": self.slips}
        if periods.size:
            out["period_p50"], out["period_p99"] = np.percentile(periods, [50, 99])
            out["period_max"] = periods.max()
        else:
            out["period_p50"] = out["period_p99"] = out["period_max"] = np.nan
        out["compute_p50"], out["compute_p99"] = np.percentile(computes, [50, 99]) if n else (np.nan, np.nan)
        out["cpu_p50"], out["cpu_p99"] = np.percentile(cpu, [50, 99]) if n else (np.nan, np.nan)
        return out


class RealtimeLoop:
    """Calls tick(now) every `period` seconds on its own thread, at absolute deadlines.

    tick(now) gets the tick's start (time.monotonic). An exception in tick stops the loop: it is
    reported through on_error(exception) (the node then publishes its safe command) and kept in
    `error`."""

    def __init__(self, name, period, tick, *, catch_up=False, max_lag=0.05, priority=0, cpu=-1,
                 exclusive=False, spin=SPIN_MARGIN, warn=print, on_error=None):
        if not period > 0.0:
            raise ValueError(f"period must be > 0, got {period!r}")
        self.name = name
        self.period = float(period)
        self.tick = tick
        self.catch_up = catch_up
        self.max_lag = max_lag
        self.priority = priority
        self.cpu = cpu
        self.exclusive = exclusive
        self.spin = spin
        self.warn = warn
        self.on_error = on_error
        self.stats = LoopStats()
        self.error = None
        self._stop = threading.Event()
        self._thread = None

    @property
    def running(self):
        return self._thread is not None and self._thread.is_alive()

    def start(self):
        self._stop.clear()
        self.error = None
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout=1.0):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self):
        moved, affinity = apply_realtime(self.priority, self.cpu, self.warn, self.exclusive)
        reduce_timer_slack()
        stats, period, stop, spin = self.stats, self.period, self._stop, self.spin
        pause_gc()
        try:
            deadline = time.monotonic()
            while not stop.is_set():
                wait_until(deadline, spin)
                start = time.monotonic()
                cpu_start = time.thread_time()
                self.tick(start)
                cpu = time.thread_time() - cpu_start
                end = time.monotonic()
                stats.record(start, end - start, cpu)
                deadline += period
                if end > deadline:
                    # the next tick was due before this one ended; `late` more deadlines passed too
                    late = int((end - deadline) / period)
                    if not self.catch_up:
                        stats.deadline_misses += 1 + late
                        deadline += late * period   # run once now, for the latest deadline passed
                    else:
                        stats.deadline_misses += 1
                        if end - deadline > self.max_lag:
                            stats.slips += 1
                            deadline = end
        except Exception as error:  # noqa: BLE001 - any failure must stop the loop, not kill it silently
            self.error = error
            if self.on_error is not None:
                self.on_error(error)
        finally:
            resume_gc()
            restore_affinity(moved, affinity)
