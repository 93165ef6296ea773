"""dyn-control: start the package's nodes without ros2 launch.

    dyn-control bringup CONFIG.yaml [--duration S] [--namespace NS]
    dyn-control demo [--robot arm|five_bar] [--duration S] [--output DIR] [--mismatch [--matched | --identify]]
                     [--backend builtin|mujoco] [--record [PATH]]
    dyn-control compile [KERNELS ...]
    dyn-control record OUTPUT [--duration S] [--topics T ...]
    dyn-control excite | identify ...   (identification/cli.py)

bringup starts each node of a ROS 2 parameter file in a process of its own and drives their
lifecycles (bringup.py).

demo is bringup of the bundled config/demo.yaml (7-DoF arm, builtin simulator, sine reference, a
10 N force at the tool between 3 s and 6 s) with a live status line and, at the end, a plot of
tracking and wrench estimation in demo_output/ and the loop's figures measured from outside.

compile fills the kernel cache (kernel_cache.py) with every kernel the public functions and the
nodes' loops call, ahead of a first configure that would otherwise compile them (minutes into an
empty cache, in one process per core; after an edit only what it touched; seconds when all is
cached). The package's install step (setup.py install / develop, as colcon build runs them) does it
for the installed copy. The kernels do not depend on the robot (Numba compiles per argument type),
so the bundled robots serve for all.

DDS discovery stays on this machine: main() sets ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST unless the
environment already sets it.
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import time

from .bringup import bringup


def compile_kernels(names=None, jobs=None):
    """Compile (or load) the kernels of the loops named (preload.LOADERS; default: every one) into
    the kernel cache; prints the progress and the time. With `jobs` > 1 (default: one per core, at
    most one per loader) each loader runs in a process of its own, `jobs` at once, the longest first
    (preload.COMPILE_COST): a fresh process, so that each loader's public functions compile what they
    call for themselves (kernels/__init__.py), whatever another loader compiled before; the processes
    share the cache, so a kernel one of them saved is loaded by the others."""
    from ..kernel_cache import cache_dirs
    from .preload import COMPILE_COST, LOADERS, progress
    names = names or list(LOADERS)
    unknown = [name for name in names if name not in LOADERS]
    if unknown:
        print(f"compile: no kernels named {', '.join(unknown)}; choose among {', '.join(LOADERS)}", file=sys.stderr)
        return 2
    jobs = min(jobs or os.cpu_count() or 1, len(names))
    start = time.perf_counter()
    print(f"compiling the loop kernels ({', '.join(names)}) into the kernel cache {cache_dirs()[0]}"
          + (f", {jobs} processes at once" if jobs > 1 else ""), flush=True)
    if jobs > 1:
        waiting = sorted(names, key=lambda n: -COMPILE_COST[n])
        running, failed = {}, []
        while waiting or running:
            while waiting and len(running) < jobs:
                name = waiting.pop(0)
                running[name] = subprocess.Popen([sys.executable, "-m", "dyn_control.nodes.cli", "compile", "--jobs",
                                                  "1", name])
            time.sleep(0.1)
            for name, process in list(running.items()):
                if process.poll() is not None:
                    del running[name]
                    if process.returncode != 0:
                        failed.append(name)
        if failed:
            print(f"compile: failed for {', '.join(failed)} (see above)", file=sys.stderr)
            return 1
        print(f"all done in {time.perf_counter() - start:.1f} s", flush=True)
        return 0
    with progress(lambda line: print(line, flush=True), "compiling", notice=False) as compiles:
        for name in names:
            LOADERS[name]()
    print(f"done in {time.perf_counter() - start:.1f} s ({', '.join(names)}: {compiles.count} functions compiled, "
          "the rest loaded from the cache)", flush=True)
    return 0


# the optional dependencies of a command (setup.py's extras): (modules, extra)
_RECORDING = (("rosbags",), "identification")
_IDENTIFYING = (("rosbags", "cvxpy", "clarabel"), "identification")
_MUJOCO = (("mujoco",), "mujoco")


def _missing_extra(args):
    """One line naming what `args`' command needs and is not installed, and how to install it; None
    when nothing is missing. Checked before anything starts, so that no node process is left with a
    traceback."""
    needs = []
    if args.command == "record" or getattr(args, "record", None) is not None:
        needs.append(_RECORDING)
    if args.command == "identify" or getattr(args, "identify", False):
        needs.append(_IDENTIFYING)
    if getattr(args, "backend", None) == "mujoco":
        needs.append(_MUJOCO)
    for modules, extra in needs:
        absent = [name for name in modules if importlib.util.find_spec(name) is None]
        if absent:
            return (f"needs {', '.join(absent)}, not installed: the package's {extra!r} extra (in a checkout: "
                    f"pip install -e '.[{extra}]', which `make test` does)")
    return None


def main(argv=None):
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    parser = argparse.ArgumentParser(prog="dyn-control", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("bringup", help="start the nodes of a ROS 2 parameter file")
    up.add_argument("config", help="parameter YAML (node_name: ros__parameters: ...)")
    up.add_argument("--duration", type=float, default=None, help="seconds to run after activation "
                    "(default: until Ctrl-C)")
    up.add_argument("--namespace", default="/", help="namespace of the nodes keyed by wildcards "
                    "(/**/dyn_controller:); default /")
    compile_args = commands.add_parser("compile", help="compile the loops' kernels into the Numba cache (ahead of "
                                       "a first configure; the install step does it)")
    compile_args.add_argument("kernels", nargs="*", metavar="KERNELS", help="some of dynamics, controller, "
                              "simulator, closed_chain_controller, closed_chain_simulator (default: all)")
    compile_args.add_argument("--jobs", type=int, default=None, help="processes compiling at once (default: one "
                              "per core)")
    commands.add_parser("faults", help="the controller under injected faults (outages of its joint states, a "
                        "paused process, deactivate and shutdown), judged from outside")
    demo_args = commands.add_parser("demo", help="closed-loop demo on the bundled 7-DoF arm or spherical five-bar")
    demo_args.add_argument("--robot", choices=("arm", "five_bar"), default="arm",
                           help="arm: config/demo.yaml (default); five_bar: config/five_bar_demo.yaml")
    demo_args.add_argument("--duration", type=float, default=10.0, help="seconds to run (default 10)")
    demo_args.add_argument("--output", default="demo_output", help="folder for the plot (default demo_output)")
    demo_args.add_argument("--mismatch", action="store_true",
                           help="the arm on a simulated robot with joint friction, armature and a 1.5 kg payload "
                           "its URDF lacks (config/demo_mismatch.yaml)")
    demo_args.add_argument("--matched", action="store_true",
                           help="with --mismatch: the controller is given the simulated robot's true values")
    demo_args.add_argument("--identify", action="store_true",
                           help="with --mismatch: identify the simulated robot through ROS first (excite, record a "
                           "bag, identify), then run the demo on the identified model")
    demo_args.add_argument("--backend", choices=("builtin", "mujoco"), default=None,
                           help="the simulated robot's physics: builtin (dyn_control's ABA) or mujoco (MuJoCo, an "
                           "independent engine; the arm only); default: the config's (builtin)")
    demo_args.add_argument("--record", nargs="?", const="", default=None, metavar="PATH",
                           help="record the joint states, the commands and ~/desired into an MCAP bag at PATH (a new "
                           "folder; default OUTPUT/<config name>_bag, replaced on each run)")
    record_args = commands.add_parser("record", help="record joint states and commands into an MCAP bag")
    record_args.add_argument("output", help="the bag to write (a new folder)")
    record_args.add_argument("--duration", type=float, default=None, help="seconds (default: until Ctrl-C)")
    record_args.add_argument("--topics", nargs="+", help="topics (default /joint_states, /effort_controller/commands, "
                             "/dyn_controller/desired); TOPIC:pkg/msg/Type to give a type")
    from ..identification import cli as identification
    identification.add_commands(commands)     # excite, identify
    args = parser.parse_args(argv)
    missing = _missing_extra(args)
    if missing:
        print(f"dyn-control {args.command}: {missing}", file=sys.stderr)
        return 2
    if args.command in identification.COMMANDS:
        return identification.run(args)
    if args.command == "bringup":
        if not os.path.isfile(args.config):
            parser.error(f"no such file: {args.config}")
        return bringup(os.path.abspath(args.config), args.duration, namespace="/" + args.namespace.strip("/"))
    if args.command == "record":
        from .bag_recorder import record
        try:
            return record(args.output, args.duration, args.topics)
        except ValueError as error:         # the bag or a topic refused (bag_recorder.BagRecorder)
            print(f"record: {error}", file=sys.stderr)
            return 1
    if args.command == "compile":
        if args.jobs is not None and args.jobs < 1:
            parser.error("--jobs must be at least 1")
        return compile_kernels(args.kernels, args.jobs)
    if args.command == "faults":
        from .faults import main as faults
        return faults()
    if (args.matched or args.identify) and not args.mismatch:
        parser.error("--matched and --identify go with --mismatch")
    if args.backend not in (None, "builtin") and args.robot != "arm":
        parser.error("--backend mujoco goes with the arm (a closed chain is simulated by the builtin backend)")
    if args.identify:
        from .demo import identify_demo
        return identify_demo(args.duration, args.output, backend=args.backend, record=args.record)[0]
    from .demo import run_demo
    return run_demo(args.duration, args.output, args.robot, args.mismatch, args.matched, args.backend, args.record)[0]


if __name__ == "__main__":
    sys.exit(main())
