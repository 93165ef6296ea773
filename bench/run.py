"""`make bench`: every benchmark module, side by side with Pinocchio in one run.

Each module in this folder named bench_*.py has `run() -> list of common.Row`. Ratios are
ours / reference: below 1.0 we are faster.
"""
import importlib
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")


def main(selected=None):
    modules = sorted(f[:-3] for f in os.listdir(HERE) if f.startswith("bench_") and f.endswith(".py"))
    if selected:
        modules = [m for m in modules if any(s in m for s in selected)]
    print(f"{'case':44s} {'ours [us]':>12s} {'ref [us]':>12s} {'ratio':>7s}")
    per_robot = {}
    for name in modules:
        start = time.perf_counter()
        print(f"-- {name}")
        for row in importlib.import_module(name).run():
            print(row.format(), flush=True)
            if row.robot is not None:
                per_robot.setdefault(row.robot, []).append(row)
        print(f"   ({time.perf_counter() - start:.0f} s)")
    if per_robot:
        print("-- per call against Pinocchio: geometric mean of the median ratios (goal: <= 0.6, each <= 1.0)")
        for robot, rows in per_robot.items():
            ratios = np.array([row.ratio for row in rows])
            above = ", ".join(f"{row.case.split(' ')[0]} {row.ratio:.2f}" for row in rows if row.ratio > 1.0)
            print(f"{robot:20s} {np.exp(np.mean(np.log(ratios))):.2f} over {len(rows)} functions; "
                  f"above 1.0: {above or 'none'}")


if __name__ == "__main__":
    main(sys.argv[1:])
