"""What a simulated robot does around its physics, as a real one's drives and safety would, without
ROS: the simulator node (nodes/simulator.py) hands it each command it took and calls `tick` once a
period; it answers with the stamp and the applied wrench of the state to publish.

- Waiting (wait_for_command): until the first command the robot is held still and its time does
  not run (the stamp is the clock's now); simulated time starts at the first command.
- Commands go to the commanded coordinates, clamped to the drives' effort limits (counted).
- Command timeout: the last command is held for command_timeout, then `brake` locks every joint
  where it is (held at (q, 0), not integrated) until a command comes again, or `zero` applies zero
  effort and the arm falls.
- gravity_by_robot: the robot adds g(q) to every command (Franka's and UR's torque interfaces).
- External wrench: one given by `set_wrench` (held until the next), else the schedule's entry whose
  window [start, end) holds the simulated time.
- Divergence: a state that is not finite, a joint faster than max_velocity (or moved more than
  max_velocity dt in one step), a step the backend refuses or MuJoCo resetting itself stops the
  integration for good (until the next activate): the robot held at rest at its last finite state,
  `diverged` says why and on_diverge() is called once.
Stamps are start + k dt for step k: the time of the state, whatever the wall clock did.
"""
import logging

import numpy as np

from ..dynamics import gravity
from .closed_chain import ClosedChainSimulator
from .guards import clamp_efforts, diverged_joint

TIMEOUT_ACTIONS = ("brake", "zero")


def hold_at_rest(sim, q):
    """The backend's robot at rest at q (builtin, MuJoCo: reset to (q, 0)); a closed chain at rest
    where it is (its state must close the loop: only its velocities are zeroed). Effort zero."""
    if isinstance(sim, ClosedChainSimulator):
        sim.dtheta[:] = 0.0
        sim.v[:] = 0.0
        sim.effort[:] = 0.0
    else:
        sim.reset(q, np.zeros(sim.nv))


def self_reset_detector(sim):
    """MuJoCo resets its state silently after a non-finite or huge (1e10) position, velocity or
    acceleration, counting a warning in mj_data: a function telling whether it did since the
    backend's last reset. The other backends raise instead: a function that says False."""
    data = getattr(sim, "mj_data", None)
    if data is None:
        return lambda: False
    import mujoco
    w = mujoco.mjtWarning
    kinds = np.array([int(w.mjWARN_BADQPOS), int(w.mjWARN_BADQVEL), int(w.mjWARN_BADQACC)])
    warnings = data.warning
    return lambda: bool(warnings.number[kinds].any())


class SimulatedRobot:
    """A backend (builtin, MuJoCo, closed chain) behind drives and safety (module docstring).
    commanded: the coordinates a command's entries go to, in order; effort_limit (nv,) the drives'
    clamp; schedule [(start, end, frame, wrench (6,))]; log: .info/.warning/.error(text) (the node's
    logger; Python's logging by default)."""

    def __init__(self, sim, model, commanded, effort_limit, max_velocity, gravity_by_robot=False, schedule=(),
                 log=logging.getLogger(__name__), on_diverge=lambda: None):
        self.sim, self.model, self.commanded = sim, model, commanded
        self.effort_limit, self.max_velocity = effort_limit, max_velocity
        self.gravity_by_robot, self.schedule = gravity_by_robot, list(schedule)
        self.log, self.on_diverge = log, on_diverge
        self.gravity_data = model.create_data()
        self.command = np.zeros(model.nv)
        self.tau = np.zeros(model.nv)
        self.q_before = np.array(sim.q)
        self.backend_reset_itself = self_reset_detector(sim)
        self.clamped_commands = 0
        self.brake_engagements = 0
        self.step = 0
        self.start_ns = 0
        self.wrench = None          # (frame, wrench) from set_wrench, held until the next
        self.activate(0.1, "brake", True)
        clamp_efforts(np.zeros(model.nv), effort_limit)      # compile (or load) the guards now
        diverged_joint(self.q_before, self.q_before, self.q_before, max_velocity, sim.dt)

    def activate(self, command_timeout, timeout_action, wait_for_command, clock_ns=0):
        """A fresh start of commands (their timeout, its action; waiting for the first, or the
        clock running from clock_ns [ns]); the divergence is forgotten."""
        self.set_timeout(command_timeout, timeout_action)
        self.waiting = wait_for_command
        self.command_time = None
        self.timed_out, self.braked, self.diverged = True, False, None
        if not wait_for_command:
            self._start_clock(clock_ns)

    def set_timeout(self, command_timeout, timeout_action):
        if timeout_action not in TIMEOUT_ACTIONS:
            raise ValueError(f"command_timeout_action: must be one of {', '.join(TIMEOUT_ACTIONS)}, "
                             f"got {timeout_action!r}")
        self.command_timeout, self.timeout_action = command_timeout, timeout_action

    def take_command(self, values, now):
        """A valid command (one effort per commanded coordinate) received at `now` [s]: held from
        now on, clamped to the effort limits. True when it was beyond them."""
        self.command[self.commanded] = values
        self.command_time = now
        clamped = clamp_efforts(self.command, self.effort_limit)
        self.clamped_commands += clamped
        return clamped

    def set_wrench(self, frame, wrench):
        """An external wrench [n; f] (6,) at `frame`'s origin from now on (None or zero: none)."""
        self.wrench = None if wrench is None or not np.any(wrench) else (frame, np.array(wrench, dtype=float))

    def tick(self, now, clock_ns):
        """One period at `now` [s] (the commands' clock); clock_ns() the wall clock [ns], read while
        waiting and at the start: (the stamp [ns] of the state to publish, the applied wrench
        (frame, wrench) or None)."""
        if self.waiting:
            if self.command_time is None:
                return clock_ns(), None     # held still, time frozen
            self.waiting = False
            self._start_clock(clock_ns())
        timed_out = self.command_time is None or now - self.command_time > self.command_timeout
        if timed_out != self.timed_out:
            self.timed_out = timed_out
            if timed_out and self.command_time is not None:
                self.log.warning(f"no command for {self.command_timeout} s: "
                                 + ("brakes engaged" if self.timeout_action == "brake" else "zero effort"))
        applied = None
        if self.diverged is None:
            t = self.step * self.sim.dt
            applied = self.wrench
            if applied is None:
                applied = next(((frame, w) for start, end, frame, w in self.schedule if start <= t < end), None)
            self._brake(timed_out and self.timeout_action == "brake")
            if not self.braked:
                self._step(timed_out, applied)
        self.step += 1
        return self.start_ns + round(self.step * self.sim.dt * 1e9), applied

    def _start_clock(self, clock_ns):
        """Stamps from now on: now + (steps to come) dt; simulated time goes on where it stopped."""
        self.start_ns = clock_ns - round(self.step * self.sim.dt * 1e9)

    def _brake(self, engage):
        """Engage the brakes (the robot held at rest where it is, not integrated) or release them."""
        if engage == self.braked:
            return
        self.braked = engage
        if engage:
            self.brake_engagements += 1
            hold_at_rest(self.sim, self.sim.q)
        else:
            self.log.info("commands again: brakes released")

    def _step(self, timed_out, applied):
        """One step under the command (zero effort when timed out), the torque clamped to the drives'
        limits; a diverged state stops the simulation (_diverge)."""
        sim, tau = self.sim, self.tau
        if timed_out:
            tau[:] = 0.0
        else:
            tau[:] = self.command
        if self.gravity_by_robot:
            tau += gravity(self.model, self.gravity_data, np.array(sim.q))   # MuJoCo's q is read-only
        clamp_efforts(tau, self.effort_limit)
        self.q_before[:] = sim.q
        try:
            if applied is None:
                sim.step(tau)
            else:
                sim.step(tau, applied[1], applied[0])
        except ValueError as error:         # the backend refused the step: a non-finite or singular state
            joint = diverged_joint(sim.q, sim.v, self.q_before, np.inf, np.inf)
            self._diverge(self._joint_text(joint) if joint >= 0 else
                          f"{error} (the step from q = {np.array2string(self.q_before, precision=4)} under "
                          f"tau = {np.array2string(tau, precision=4)})")
            return
        joint = diverged_joint(sim.q, sim.v, self.q_before, self.max_velocity, sim.dt)
        if joint >= 0:
            self._diverge(self._joint_text(joint))
        elif self.backend_reset_itself():
            self._diverge("MuJoCo found the state unstable (non-finite or huge position, velocity or acceleration) "
                          "and reset it")

    def _joint_text(self, k):
        sim = self.sim
        return (f"joint {self.model.actuated_joints[k]} at {sim.v[k]:.4g} rad/s (divergence_velocity "
                f"{self.max_velocity:g}), q {sim.q[k]:.6g} (before the step {self.q_before[k]:.6g})")

    def _diverge(self, reason):
        """Stop integrating for good (until the next activate): the robot held at rest at its state
        before the step, reported at once."""
        self.diverged = f"diverged: {reason}"
        hold_at_rest(self.sim, self.q_before)
        self.log.error(f"simulation stopped, {self.diverged}; the robot is held at its last finite state")
        self.on_diverge()
