"""The reality gap (`dyn-control demo --mismatch`): the bundled arm's controller on a simulated robot
with joint friction, armature and a 1.5 kg payload its URDF lacks, nominal and with the true values
(--matched, the joint terms on in the tick): tracking, the false force (no force applied), the
10 N push's estimate error, and the controller's tick CPU time from its /diagnostics (beside the
demo's, joint terms off)."""
import tempfile

from common import Row

from dyn_control.nodes.demo import run_demo


def run():
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for label, mismatch, matched in (("demo (no mismatch)", False, False), ("mismatch, nominal model", True, False),
                                         ("mismatch, true values", True, True)):
            code, f = run_demo(7.0, folder, "arm", mismatch=mismatch, matched=matched)
            if code != 0:
                rows.append(Row.value(f"{label}: bringup exit code", float(code), "failed"))
                continue
            rows.append(Row.value(f"{label}: tick CPU p99 [ms]", f.get("tick cpu p99 [ms]", float("nan")),
                                  f"p50 {f.get('tick cpu p50 [ms]', float('nan')):.3f} ms"))
            rows.append(Row.value(f"{label}: false force mean [N]", f["false force mean"],
                                  f"p95 {f['false force p95']:.3f} N, max {f['false force max']:.3f} N"))
            rows.append(Row.value(f"{label}: push error mean [N]", f["force error mean"],
                                  f"p95 {f['force error p95']:.3f} N of 10 N; tracking rms "
                                  f"{f['tracking before'] * 1e3:.3f} mrad"))
    return rows
