"""Identification of the bundled arm7 (with joint terms): `dyn-control identify` on a bag of 20 s of
1 kHz joint states of the simulated robot of the tests (test/identification_truth.py), the API's
identify() on the same samples, and `dyn-control excite`'s design at its defaults (goal: identify
under 10 s on the 2-core machine)."""
import contextlib
import io
import os
import tempfile
import time

from common import Row

DURATION = 20.0   # [s] of 1 kHz samples, two periods of the excitation


def _seconds(case, seconds, note=""):
    return Row(case, seconds * 1e6, note=f"= {seconds:.2f} s {note}".rstrip())


def run():
    import dyn_control as dc
    from dyn_control.identification.bag import write_joint_states
    from dyn_control.identification.excitation import design_excitation
    from dyn_control.identification.identify import identify
    from dyn_control.identification.synthetic import track
    from dyn_control.nodes.cli import main
    from identification_truth import NOISE, excitation, nominal, truth

    rows = []
    model = nominal()
    states = track(truth(), model, excitation(), DURATION, noise=NOISE)
    identify(model, states)        # compiles what the first call needs
    start = time.perf_counter()
    result = identify(model, states)
    worst = 100 * result.errors["identified"].relative.max()
    rows.append(_seconds("identify() arm7, 20 s at 1 kHz", time.perf_counter() - start,
                         f"(held-out error <= {worst:.2f} % of torque RMS)"))
    with tempfile.TemporaryDirectory() as folder:
        bag = os.path.join(folder, "arm7")
        write_joint_states(bag, states.t, model.joint_names, states.q, states.v, states.effort)
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):    # its report
            code = main(["identify", bag, "--urdf", dc.bundled_urdf("arm7"), "-o", os.path.join(folder, "p.yaml")])
        rows.append(_seconds("dyn-control identify (bag in, YAML out)", time.perf_counter() - start,
                             f"(exit code {code})"))
    start = time.perf_counter()
    design = design_excitation(model, 10.0, 5, restarts=3, max_iterations=100)
    rows.append(_seconds("dyn-control excite arm7 (defaults)", time.perf_counter() - start,
                         f"(condition number {design.condition_number:.1f})"))
    return rows


if __name__ == "__main__":
    for row in run():
        print(row.format())
