"""The compile: each loader of `dyn-control compile` into an empty kernel cache of its own (wall and
CPU time, functions compiled), the demo's two nodes and every loader together as `dyn-control
compile` runs them (one process per core), and the load of everything from a warm cache.

Each figure is one run of a fresh process (a compile is long and its spread small next to the growth
this watches for); nothing else runs meanwhile.
"""
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

from common import Row

from dyn_control.nodes.preload import LOADERS

COMMAND = [sys.executable, "-m", "dyn_control.nodes.cli", "compile"]


def _compile(names, cache, jobs):
    """(wall s, CPU s of the processes, functions compiled) of `dyn-control compile NAMES` into `cache`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(COMMAND + ["--jobs", str(jobs)] + names, env=dict(os.environ, NUMBA_CACHE_DIR=cache),
                         capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    compiled = sum(int(n) for n in re.findall(r": (\d+) functions compiled", out.stdout))
    return wall, cpu, compiled


def _row(label, wall, cpu, compiled):
    return Row.value(f"compile {label}", wall, f"s wall, {cpu:.0f} s CPU, {compiled} functions")


def run():
    rows = []
    jobs = os.cpu_count() or 1
    for name in LOADERS:
        with tempfile.TemporaryDirectory() as cache:
            rows.append(_row(f"{name} (empty cache)", *_compile([name], cache, 1)))
    with tempfile.TemporaryDirectory() as cache:
        rows.append(_row(f"demo's nodes (controller + simulator, {jobs} processes)",
                         *_compile(["controller", "simulator"], cache, jobs)))
    with tempfile.TemporaryDirectory() as cache:
        rows.append(_row(f"all (dyn-control compile, {jobs} processes)", *_compile([], cache, jobs)))
        rows.append(_row("all, warm cache (load only)", *_compile([], cache, 1)))
    return rows
