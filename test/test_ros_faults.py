"""Acceptance of the controller's fault behaviour (issue: a safe mode that is safe), judged from
outside on the simulated arm (dyn_control.nodes.faults: the nodes and a relay in their own
processes, real DDS on loopback): outages of the joint states of 0.05, 0.2, 0.5 and 1 s while the
robot goes on (and 0.1 and 1 s on a robot that holds the last command it received), SIGSTOP of the
controller for 1 s, deactivate with the command held by the robot for 2 s, and lifecycle shutdown
from active.

For each fault, from its start to 2 s after its end: no joint faster than 1.5 times its peak speed
of the 2 s before (or 0.5 rad/s) nor its URDF velocity limit, the kinetic energy (Pinocchio's
M(q)) below 1.2 times its value at the start, tracking back below 1e-3 rad within 2 s (after the
stop: within 2 s of the next activation; a later excursion within 0.3 s of a stall of the machine,
over 5 ms without states or commands or a controller acting on a state over 5 ms old, is counted
apart: faults.recovery_time), and no command step above the torque-rate limit. The 1 s
outage on the robot that holds commands is judged from the joint states' return (the arm fell
while the controller was blind): no joint faster than the fastest one in the first 0.1 s after the
return (or the blend's 1 rad/s), the energy below 1.2 times its value then: the controller brakes
before it re-engages.
A fault whose window holds a stall of the machine itself (a gap of the simulator's states or of
the controller's commands outside the fault over 20 ms: the simulated robot's command timeout, after
which it brakes, or applies a command 20 periods old where it holds commands) is run again, up to
three runs in all; stalled in each, it is reported, not judged, and more than half of the faults
must be judged.
"""
import pytest
import ros_harness  # noqa: F401  (this process's own ROS domain)

from dyn_control.nodes import faults

pytestmark = pytest.mark.ros

STALL_MS = 20.0     # faults.configuration's command_timeout of the robot that brakes
ATTEMPTS = 3


@pytest.fixture(scope="module")
def scenarios():
    return faults.run_scenarios(faults.RobotOracle(), stall_limit=STALL_MS, attempts=ATTEMPTS)


def test_every_run_ends_cleanly(scenarios):
    _, codes = scenarios
    assert len(codes) >= len(faults.RUNS) and all(code == 0 for code in codes), codes


FAULTS = ([f"outage {d:g} s" for d in faults.OUTAGES] + [faults.HELD_OUTAGE, faults.HELD_LONG_OUTAGE]
          + ["SIGSTOP 1 s", "deactivate", "shutdown"])


@pytest.mark.parametrize("fault", FAULTS)
def test_a_fault_adds_no_energy_and_tracking_comes_back(scenarios, fault):
    figures, _ = scenarios
    values = figures[fault]
    print(f"{fault}: " + ", ".join(f"{k} {v:.3g}" for k, v in values.items()))
    # a command step above the rate limit is the controller's whatever the machine does
    assert values["command step / rate limit"] <= 1.0 + 1e-9
    if values["stall [ms]"] > STALL_MS:
        pytest.skip(f"{fault}: in each of {ATTEMPTS} runs the machine stalled over the robot's {STALL_MS:g} ms "
                    f"command timeout around the fault (DDS source timestamps; {values['stall [ms]']:.0f} ms in the "
                    "last): its figures are the machine's")
    assert values["peak speed / allowed"] <= 1.0
    if fault != faults.HELD_LONG_OUTAGE:      # there the arm fell while the controller was blind
        assert values["peak speed / URDF limit"] <= 1.0
    assert values["energy / energy at t0"] <= 1.2
    if "recovery [s]" in values:
        assert values["recovery [s]"] <= 2.0


def test_most_faults_were_judged(scenarios):
    """The stall excuse above cannot empty the suite: more than half of the faults must be judged."""
    figures, _ = scenarios
    judged = [name for name in FAULTS if figures[name]["stall [ms]"] <= STALL_MS]
    assert len(judged) > len(FAULTS) / 2, f"only {judged} were judged (the others: the machine stalled)"
