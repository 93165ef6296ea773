"""dyn-control: start the package's nodes without ros2 launch.

    dyn-control bringup CONFIG.yaml [--duration S] [--namespace NS]
    dyn-control demo [--robot arm|five_bar] [--duration S] [--output DIR] [--mismatch [--matched | --identify]]
                     [--backend builtin|mujoco] [--record [PATH]]
    dyn-control compile [KERNELS ...]

bringup starts each node of a ROS 2 parameter file (the `node_name: ros__parameters: {...}` format
that the launch files pass too) in a process of its own, as ros2 launch does (one interpreter
cannot run two 1 kHz loops: one GIL), and drives their lifecycles through the lifecycle services
from this process: configure every node at once, then activate the controllers and then the
simulators. At the end (--duration, Ctrl-C, SIGTERM) it deactivates the controllers first (each
publishes its safe command), then ends the processes (SIGINT: each deactivates itself); a node
process that dies is reported and ends the bringup with exit code 1; a node that reports a fatal
error on /diagnostics (a simulator that diverged, a loop stopped by an exception: FatalReports) makes
it exit with code 3 at the end (the run goes on: the diverged robot is held). The file reaches the nodes
through rcl's own parser (`--ros-args --params-file CONFIG.yaml`), so wildcards (`/**`) and
namespaces behave as under ros2 launch: an entry `/robot1/dyn_controller:` starts that node in
/robot1, `/**/dyn_controller:` applies to all of them and starts one in --namespace (default /)
when no entry names its namespace. Before any node starts, the file is checked as the nodes would
check it (check_config): a file rcl cannot read, a parameter a node does not have, a wrong type
or a value out of range end the bringup with exit code 2 and one line naming the problem. Entries
for other nodes (e.g. a controller_manager) are skipped.

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
import contextlib
import ctypes
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from . import param_files

NODE_TYPES = {"dyn_controller": "controller", "dyn_simulator": "simulator"}
STATUS_PERIOD = 0.25     # [s] between status-line updates
CONFIGURE_TIMEOUT = 600.0    # [s] a first configure compiles the Numba kernels
TRANSITION_TIMEOUT = 10.0    # [s] for the other transitions
ASK_STATE_AFTER = 3.0        # [s] without an answer: ask the node's state (a reply may have been lost)
POLL_PERIOD = 0.005          # [s] between looks at the pending requests
# lifecycle_msgs/State ids a transition goes from and to
TRANSITION_STATES = {"configure": (1, 2), "activate": (2, 3), "deactivate": (3, 2)}
STOPPED_STATES = {1: "unconfigured", 2: "inactive", 4: "finalized"}   # a deactivate has nothing to do
PR_SET_PDEATHSIG = 1
FATAL_EXIT_CODE = 3          # a node reported a fatal error on /diagnostics (FatalReports)
ANNOUNCEMENT_PERIOD_NS = 250_000_000   # the bringup participant's announcements (Fast DDS default: 3 s)
# [s] from a controller's joining the graph to its activation with Fast DDS. A participant hears of
# those that were there before it at their next announcement (every 3 s by default), and its
# discovery then stalls every subscription of its process for up to 0.34 s (README, "Joint states
# late in transit"): measured up to 3.08 s after the nodes' first log lines, so over 3.42 s after
# them; those lines come up to 0.06 s after the bringup found the nodes (measured under the suite's
# load). 0.5 s of margin.
DISCOVERY_SETTLE = 4.0
PROFILES_VARIABLE = "FASTDDS_DEFAULT_PROFILES_FILE"
FAST_ANNOUNCEMENTS_PROFILE = f"""<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns="http://www.eprosima.com">
  <profiles>
    <participant profile_name="dyn_control_bringup" is_default_profile="true">
      <rtps><builtin><discovery_config>
        <leaseAnnouncement><sec>0</sec><nanosec>{ANNOUNCEMENT_PERIOD_NS}</nanosec></leaseAnnouncement>
      </discovery_config></builtin></rtps>
    </participant>
  </profiles>
</dds>
"""


def nodes_in_config(path, namespace="/"):
    """[(namespace, name)] of the dyn_control nodes to start for the parameter file at `path`, and
    the keys of the entries for other nodes (param_files.load: a ParameterFileError says why a file
    is unreadable). A node's entry keyed with a namespace (`/robot1/dyn_controller`, or nested
    `robot1: dyn_controller:`) or none (`dyn_controller:`) starts that node there; an entry with
    wildcards (`/**/dyn_controller`) applies to every such node, and starts one in `namespace` when
    no entry names a place for it. A ParameterFileError when an entry would apply to none of the
    nodes started, or names a place outside `namespace` (when one is given)."""
    entries = param_files.load(path)
    found, others = [], []
    for entry in entries:
        if entry.node_name in NODE_TYPES:
            place = (entry.namespace, entry.node_name)
            if not entry.has_wildcards and place not in found:
                found.append(place)
        elif entry.names_the_node:
            others.append(entry.key)
    for name in NODE_TYPES:
        if any(e.node_name == name for e in entries) and not any(n == name for _, n in found):
            found.append((namespace, name))
    started = [param_files.node_name(*place) for place in found]
    for entry in entries:
        if entry.node_name not in NODE_TYPES:
            continue
        if namespace != "/" and not entry.has_wildcards and entry.namespace != namespace:
            raise param_files.ParameterFileError(
                f"{path}: the entry {entry.key} is for a node outside the namespace {namespace}: key it "
                f"/**/{entry.node_name} to apply in any namespace")
        if not any(entry.applies_to(node) for node in started):
            raise param_files.ParameterFileError(
                f"{path}: the entry {entry.key} applies to none of the nodes to start ({', '.join(started)}): "
                "start them in a namespace it matches (--namespace)")
    return found, others


def check_config(path, namespace="/"):
    """The nodes to start and the other entries of parameter file `path` (nodes_in_config), after
    checking, before any node starts, what the nodes would refuse: the file as rcl reads it, and
    for each node every parameter its entries set (a name it does not have, with the nearest one;
    a wrong type; a value outside its range). A ParameterFileError (one line) says what is wrong."""
    found, others = nodes_in_config(path, namespace)
    _check_with_rcl(path)
    from . import params
    from .closed_chain import PARAMETER_PREFIX
    from .controller import PARAMETERS as CONTROLLER
    from .simulator import PARAMETERS as SIMULATOR
    tables = {"controller": CONTROLLER, "simulator": SIMULATOR}
    entries = param_files.load(path)
    for place in found:
        node = param_files.node_name(*place)
        mine = param_files.applying(entries, node)
        own = {name for entry in mine if entry.names_the_node for name in entry.parameters}
        try:
            params.check_file_values(tables[NODE_TYPES[place[1]]], param_files.merged(mine), own, (PARAMETER_PREFIX,))
        except ValueError as error:
            raise param_files.ParameterFileError(f"{path}: {node}: {error}") from None
    return found, others


def _check_with_rcl(path):
    """A ParameterFileError with rcl's reason when rcl's parser refuses the file (a node process
    would die of it at its start), rcl's own error log kept off the terminal."""
    import rclpy
    from rclpy.impl.implementation_singleton import rclpy_implementation
    from rclpy.signals import SignalHandlerOptions
    context = rclpy.Context()
    try:
        with _stderr_silenced():
            rclpy.init(args=["--ros-args", "--params-file", path], context=context,
                       signal_handler_options=SignalHandlerOptions.NO)
    except rclpy_implementation.RCLError as error:
        reason = (str(error).partition("Error: ")[2] or str(error)).split(", at /")[0]
        raise param_files.ParameterFileError(f"{path}: rcl cannot read it: {reason}") from None
    rclpy.try_shutdown(context=context)


@contextlib.contextmanager
def _stderr_silenced():
    """Within: file descriptor 2 goes to /dev/null (rcl logs there directly)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def bringup(config, duration=None, monitor=None, namespace="/"):
    """Run the dyn_control nodes of parameter file `config`, each in its own process, for
    `duration` seconds after activation (None: until Ctrl-C or SIGTERM); nodes keyed by wildcards
    alone start in `namespace`. monitor (optional): an object with start(node) (an rclpy node of
    this process to subscribe with), status(phase, elapsed) called every STATUS_PERIOD from its own
    thread, and stop(). Returns an exit code; 2, with one line saying why, for a file the nodes
    would refuse (check_config) or without dyn_control nodes."""
    from .stop_flag import StopFlag
    try:
        found, others = check_config(config, namespace)
    except param_files.ParameterFileError as error:
        print(f"bringup: {error}", file=sys.stderr)
        return 2
    if not found:
        print(f"{config}: no dyn_control node ({', '.join(NODE_TYPES)}) in this file", file=sys.stderr)
        return 2
    if others:
        print(f"bringup: skipping the other nodes of {os.path.basename(config)}: {', '.join(others)}")
    stop = StopFlag()
    previous = {number: signal.signal(number, stop.raise_) for number in (signal.SIGINT, signal.SIGTERM)}
    # the node processes first: their imports (about a second) overlap this process's
    children = [_NodeProcess(place, name, config) for place, name in found]
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions
    from .spinner import Spinner
    context = rclpy.Context()
    with _announcing_often():
        rclpy.init(args=[], context=context, signal_handler_options=SignalHandlerOptions.NO)
        node = rclpy.create_node("dyn_control_bringup", context=context)
    fatal = FatalReports(node)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    spinner = Spinner(executor, "bringup executor")
    phase = {"name": "configure", "since": time.monotonic()}
    status = None
    code = 0
    try:
        for child in children:
            child.connect(node)
        if monitor is not None:
            monitor.start(node)
            status = _StatusThread(monitor, phase)
            status.start()
        # configure all at once (each in its process), then activate the controllers first, so that
        # they listen when the simulators start publishing
        controllers = [child for child in children if child.kind == "controller"]
        simulators = [child for child in children if child.kind != "controller"]
        for group, step in ((children, "configure"), (controllers, "activate"), (simulators, "activate")):
            if group is controllers and stop.wait(_discovery_settle(children)):
                return 130
            if not transition(group, step, children, stop):
                return 130 if stop.is_set() else 1
        phase.update(name="run", since=time.monotonic())
        deadline = None if duration is None else time.monotonic() + duration
        while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
            dead = [child for child in children if child.process.poll() is not None]
            if dead:
                for child in dead:
                    print(f"bringup: {child.name} exited with code {child.process.returncode}", file=sys.stderr)
                code = 1
                break
            stop.wait(0.05 if deadline is None else max(0.0, min(0.05, deadline - time.monotonic())))
        if stop.is_set():
            code = 130
    finally:
        phase.update(name="stop", since=time.monotonic())
        transition([child for child in children if child.kind == "controller" and child.state == "active"],
                   "deactivate", children)
        if status is not None:
            status.stop()
            monitor.stop()
        for child in children:       # all at once: a simulator left alone drops its robot
            child.interrupt()
        for child in children:
            child.end()
        spinner.stop()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        for number, handler in previous.items():
            signal.signal(number, handler)
    return fatal.exit_code(code)


class FatalReports:
    """Fatal reports on /diagnostics during a bringup: a status at ERROR with the value fatal = true (a
    simulator that diverged, a loop stopped by an exception). Other ERRORs are states a node recovers
    from (a controller in safe mode on stale joint states) and do not count."""

    def __init__(self, node):
        from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
        self.error_level = DiagnosticStatus.ERROR
        self.seen = {}          # status name -> message of its first fatal report
        node.create_subscription(DiagnosticArray, "/diagnostics", self.add, 100)

    def add(self, array):
        for status in array.status:
            if status.level == self.error_level and status.name not in self.seen and any(
                    kv.key == "fatal" and kv.value == "true" for kv in status.values):
                self.seen[status.name] = status.message
                print(f"bringup: {status.name}: {status.message} (fatal)", file=sys.stderr)

    def exit_code(self, code):
        """FATAL_EXIT_CODE after a fatal report in a run that ended normally or was interrupted;
        otherwise `code`."""
        return FATAL_EXIT_CODE if self.seen and code in (0, 130) else code


def discovery_settle():
    """[s] from a controller's joining the graph to its activation: DISCOVERY_SETTLE with Fast DDS
    (the default RMW), none with another RMW. autostart (which the launch files set) waits it from
    rclpy.init."""
    fast_dds = os.environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp").startswith("rmw_fastrtps")
    return DISCOVERY_SETTLE if fast_dds else 0.0


def _discovery_settle(children):
    """[s] still to wait before activating the controllers: discovery_settle from the moment the last
    node joined the graph (its lifecycle service found; a process's start was 0.6-1.0 s earlier, the
    imports)."""
    return max(0.0, max(child.discovered for child in children) + discovery_settle() - time.monotonic())


@contextlib.contextmanager
def _announcing_often():
    """Within: a participant created here announces itself every ANNOUNCEMENT_PERIOD_NS (through a
    Fast DDS default profile, unless the user names one). A node process started after this
    process's first announcements finds it only at the next one, and only then its lifecycle
    services (measured: 2.5-3.5 s after the node was up with Fast DDS's 3 s period; 0.1-0.3 s with
    0.25 s). The node processes keep the defaults: they are started before, with the environment
    as it was."""
    if PROFILES_VARIABLE in os.environ:
        yield
        return
    with tempfile.TemporaryDirectory(prefix="dyn_control_bringup_") as folder:
        path = os.path.join(folder, "fastdds_profile.xml")
        with open(path, "w") as f:
            f.write(FAST_ANNOUNCEMENTS_PROFILE)
        os.environ[PROFILES_VARIABLE] = path
        try:
            yield
        finally:
            del os.environ[PROFILES_VARIABLE]


class _NodeProcess:
    """One node in its own process (`python -m dyn_control.nodes.<kind>`), with clients of its
    lifecycle services."""

    def __init__(self, namespace, name, config):
        self.kind = NODE_TYPES[name]
        self.name = name if namespace == "/" else f"{namespace}/{name}"
        self.path = f"{namespace.rstrip('/')}/{name}"
        command = [sys.executable, "-m", f"dyn_control.nodes.{self.kind}", "--ros-args", "--params-file", config,
                   "-r", f"__node:={name}", "-r", f"__ns:={namespace}"]
        # its own process group: a Ctrl-C reaches this process, which stops the nodes in order;
        # and it ends with this process, however that ends
        self.process = subprocess.Popen(command, start_new_session=True, preexec_fn=_end_with_parent)
        self.discovered = None          # time.monotonic() when its lifecycle service was first found
        self.state = "unconfigured"

    def connect(self, node):
        from lifecycle_msgs.srv import ChangeState, GetState
        self.client = node.create_client(ChangeState, f"{self.path}/change_state")
        self.state_client = node.create_client(GetState, f"{self.path}/get_state")

    def interrupt(self):
        """SIGINT: the node deactivates itself (a controller publishes its safe command) and exits."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)

    def end(self, timeout=5.0):
        """interrupt(), then wait for the process; SIGKILL after `timeout` seconds."""
        if self.process.poll() is None:
            self.interrupt()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def transition(nodes, transition, everyone, stop=None):
    """Request a lifecycle transition of every node of `nodes` at once and wait for the answers
    (configure: up to CONFIGURE_TIMEOUT, it compiles the kernels the first time). False when one
    fails, a node process of `everyone` dies first, or `stop` is set."""
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState, GetState
    request = ChangeState.Request()
    request.transition.id = getattr(Transition, f"TRANSITION_{transition.upper()}")
    deadline = time.monotonic() + (CONFIGURE_TIMEOUT if transition == "configure" else TRANSITION_TIMEOUT)
    pending = {child: None for child in nodes}      # child -> its request's future
    asked = {}                                      # child -> (when we last asked it, state query)
    start_state, goal_state = TRANSITION_STATES[transition]
    while pending and time.monotonic() < deadline and not (stop is not None and stop.is_set()):
        dead = [child.name for child in everyone if child.process.poll() is not None]
        if dead:
            print(f"bringup: {', '.join(dead)} exited during {transition}", file=sys.stderr)
            return False
        for child, future in list(pending.items()):
            if future is None:
                if child.client.service_is_ready():
                    if child.discovered is None:
                        child.discovered = time.monotonic()
                    pending[child] = child.client.call_async(request)
                    asked[child] = (time.monotonic(), None)
            elif future.done():
                if not future.result().success:
                    state = _current_state(child) if transition == "deactivate" else None
                    if state in STOPPED_STATES:     # stopped elsewhere (ros2 lifecycle set, a lifecycle manager)
                        print(f"bringup: {child.name} was already {STOPPED_STATES[state]}, not active")
                        child.state = STOPPED_STATES[state]
                        del pending[child]
                        continue
                    print(f"bringup: {child.name} failed to {transition} (see its log above)", file=sys.stderr)
                    return False
                child.state = "active" if goal_state == 3 else "inactive"
                del pending[child]
            else:
                # a request sent right as the service was discovered can lose its reply (or the request
                # itself): after a while ask the node where it is, and finish or send again accordingly
                since, query = asked[child]
                if time.monotonic() - since > ASK_STATE_AFTER:    # no answer (nor to the last query)
                    asked[child] = (time.monotonic(), child.state_client.call_async(GetState.Request()))
                elif query is not None and query.done():
                    state = query.result().current_state.id
                    if state == goal_state:
                        child.state = "active" if goal_state == 3 else "inactive"
                        del pending[child]
                    elif state == start_state:
                        pending[child] = child.client.call_async(request)
                    asked[child] = (time.monotonic(), None)
        time.sleep(POLL_PERIOD)
    if pending and (stop is None or not stop.is_set()):
        print(f"bringup: no answer to {transition} from {', '.join(c.name for c in pending)}", file=sys.stderr)
    return not pending


def _current_state(child):
    """`child`'s lifecycle state id (lifecycle_msgs/State), None without an answer within
    TRANSITION_TIMEOUT."""
    from lifecycle_msgs.srv import GetState
    query = child.state_client.call_async(GetState.Request())
    deadline = time.monotonic() + TRANSITION_TIMEOUT
    while not query.done() and time.monotonic() < deadline:
        time.sleep(POLL_PERIOD)
    return query.result().current_state.id if query.done() else None


def _end_with_parent():
    """In the child before exec: SIGTERM when the bringup process dies (Linux)."""
    try:
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class _StatusThread:
    """Calls monitor.status(phase, seconds in it) every STATUS_PERIOD."""

    def __init__(self, monitor, phase):
        self.monitor, self.phase = monitor, phase
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="status", daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join(2.0)

    def _run(self):
        while not self._stop.wait(STATUS_PERIOD):
            self.monitor.status(self.phase["name"], time.monotonic() - self.phase["since"])


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
    from ..identification import cli as identification
    identification.add_commands(commands)     # excite, record, identify
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
