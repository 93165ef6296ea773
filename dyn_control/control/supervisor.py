"""The control loop's policy around the compiled tick, without ROS: what a new joint state starts,
restarts or re-anchors, and the watchdog's safe mode (doc/controller.md: the safety rules).

The controller node calls it once a tick: `on_sample` for a joint state it accepted, then `watchdog`;
the supervisor sets the tick's input flags (flags.py) and logs what it decides through `log` (an
object with info, warning and error, such as an rclpy logger). Times `now` are the loop's clock [s];
stamps are the joint states' [ns].

- The first sample since `restart` (activate) starts the reference clock (`time`) and the
  estimators; a sample more than watchdog_timeout after the one before, or stamped before it,
  restarts the estimators and re-anchors the reference at the measured state (the loop paused, or
  the robot's clock was reset); stamped before it, the reference clock moves with the new time base,
  so that the reference goes on from where it was.
- Safe mode: no new sample for watchdog_timeout -> hold g(q) at the newest sample (safe_mode
  "gravity"), or zero (safe_mode "zero"); for safe_mode_timeout -> safe_mode_final ("hold" goes on
  holding, "zero" holds zero, "silent" stops publishing once the hold torque has gone out whole, so
  that a robot which holds its last command holds one without a velocity term). Leaving safe mode
  re-anchors the reference, which blends back from the measured state.
"""
from .flags import S_ANCHOR, S_BLEND_TIME, S_DT, S_HAS_EFFORT, S_NEW_SAMPLE, S_RESET, S_SAFE, S_SAFE_ZERO


class Supervisor:
    """The policy of one configured controller. `flags`: the tick's `s`; the settings (attributes,
    which live parameters change): watchdog_timeout, safe_mode_timeout [s], safe_mode ("gravity" |
    "zero"), safe_mode_final ("silent" | "zero" | "hold")."""

    def __init__(self, flags, log):
        self.s = flags
        self.log = log
        self.watchdog_timeout = 0.05
        self.safe_mode_timeout = 0.05
        self.safe_mode = "gravity"
        self.safe_mode_final = "silent"
        self.watchdog_trips = 0
        self.estimator_restarts = 0         # restarts after a gap or a stamp that went back
        self.restart()

    def restart(self):
        """On activate: no sample yet, not in safe mode."""
        self.start_stamp = None             # [ns] the reference clock's zero
        self.previous_stamp = None          # [ns] of the newest accepted sample
        self.last_sample_time = None        # [s] when it was accepted (the loop's clock)
        self.safe = False
        self.silent = False                 # past safe_mode_timeout
        self.hold_published = False         # in safe mode: the hold torque has gone out whole
        self.outage = 0.0                   # [s] without a sample before the one that ended the last trip
        self.stamp_before_outage = 0        # [ns] of the sample before that outage

    def time(self, stamp):
        """[s] on the reference clock at `stamp` [ns]."""
        return (stamp - self.start_stamp) * 1e-9

    def on_sample(self, now, stamp, has_effort):
        """A joint state accepted at `now`, stamped `stamp`, carrying efforts or not: the tick's sample
        flags (new sample, the step since the one before, restart, re-anchor). True for the first
        since restart (the caller sets up its reference then)."""
        first = self.start_stamp is None
        if first:
            self.start_stamp = stamp
            reset, dt = True, 0.0
        else:
            dt = (stamp - self.previous_stamp) * 1e-9
            reset = not 0.0 < dt <= self.watchdog_timeout   # after a gap the momentum balance starts over
            self.estimator_restarts += reset
            if dt <= 0.0:
                # a new time base (a simulator reset): the reference goes on from where it was
                self.start_stamp = stamp - (self.previous_stamp - self.start_stamp)
                self.log.warning(f"joint-state stamps jumped back by {-dt:.3f} s: new time base, "
                                 "the reference continues from where it was")
        s = self.s
        s[S_NEW_SAMPLE] = 1.0
        s[S_RESET] = reset
        if reset:       # the first sample, or one after a gap (the loop paused): re-anchor the reference
            s[S_ANCHOR] = 1.0
        s[S_DT] = dt
        s[S_HAS_EFFORT] = has_effort
        if self.safe:   # the sample that ends a watchdog trip: the outage it ends, for the log
            self.stamp_before_outage, self.outage = self.previous_stamp, now - self.last_sample_time
        self.previous_stamp = stamp
        self.last_sample_time = now
        return first

    def watchdog(self, now, verdict=lambda: ""):
        """Safe mode from the age of the newest sample (the module's docstring); `verdict()`: what the
        log says of the outage on leaving it. True when no command is to be published."""
        s = self.s
        age = now - self.last_sample_time
        stale = age > self.watchdog_timeout
        final = stale and age > self.safe_mode_timeout
        if stale != self.safe:
            self.safe = stale
            if stale:
                self.watchdog_trips += 1
                self.hold_published = False
                self.log.error(f"safe mode ({self.safe_mode}): no valid joint state for {age:.3f} s")
            else:
                s[S_ANCHOR] = 1.0
                self.log.info(f"joint states are back after {self.outage:.3f} s{verdict()}: leaving safe mode, "
                              f"blending back to the reference over {s[S_BLEND_TIME]:g} s")
        if final != self.silent:
            self.silent = final
            if final:
                self.log.error(f"no valid joint state for {age:.3f} s: safe_mode_final {self.safe_mode_final}")
        s[S_SAFE] = stale
        s[S_SAFE_ZERO] = self.safe_mode == "zero" or (final and self.safe_mode_final == "zero")
        return final and self.safe_mode_final == "silent" and self.hold_published
