"""The controller under injected faults (dyn_control.nodes.faults, `dyn-control faults`): per fault
the peak joint speed against the allowed one, the kinetic energy against its value at the fault's
start, the recovery time of the tracking and the largest command step against the rate limit, from
outside. Not a timing against a reference: figures of behaviour (ratios below 1 pass the issue's
acceptance, recovery below 2 s)."""
from common import Row

from dyn_control.nodes import faults


def run():
    figures, codes = faults.run_scenarios()
    rows = []
    for name, values in figures.items():
        recovery = values.get("recovery [s]")
        rows.append(Row.value(
            f"fault {name}: peak speed / allowed", values["peak speed / allowed"],
            f"speed {values['peak speed [rad/s]']:.2f} rad/s, energy {values['energy / energy at t0']:.2f} x, "
            + (f"recovery {recovery:.2f} s, " if recovery is not None else "")
            + f"command step {values['command step / rate limit']:.2f} x limit, stall {values['stall [ms]']:.0f} ms"))
    rows.append(Row.value("fault runs: bringup exit codes", float(max(codes)), f"{codes}"))
    return rows
