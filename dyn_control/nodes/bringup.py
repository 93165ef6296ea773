"""dyn-control bringup: starts each node of a ROS 2 parameter file (the `node_name: ros__parameters: {...}` format
that the launch files pass too) in a process of its own, as ros2 launch does (one interpreter
cannot run two 1 kHz loops: one GIL), and drives their lifecycles through the lifecycle services
from this process: configure every node at once, then activate the controllers and then the
simulators. At the end (--duration, Ctrl-C, SIGTERM) it deactivates the controllers first (each
publishes its safe command), then ends the processes (SIGINT: each deactivates itself); a node
process that dies is reported and ends the bringup with exit code 1; a node that reports a fatal
error on /diagnostics (a simulator that diverged, a loop stopped by an exception: FatalReports) makes
it exit with code 3 at the end (the run goes on: the diverged robot is held), or at once when a
transition fails after such a report and no process died. The file reaches the nodes
through rcl's own parser (`--ros-args --params-file CONFIG.yaml`), so wildcards (`/**`) and
namespaces behave as under ros2 launch: an entry `/robot1/dyn_controller:` starts that node in
/robot1, `/**/dyn_controller:` applies to all of them and starts one in --namespace (default /)
when no entry names its namespace. Before any node starts, the file is checked as the nodes would
check it (check_config): a file rcl cannot read, a parameter a node does not have, a wrong type
or a value out of range end the bringup with exit code 2 and one line naming the problem. Entries
for other nodes (e.g. a controller_manager) are skipped.
"""
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time

from . import param_files
from .discovery import announcing_often, discovery_settle

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
    from .controller_parameters import PARAMETERS as CONTROLLER
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
    with announcing_often():
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
                if stop.is_set():
                    return 130
                # a node that went fatal as it came up (a simulator diverging at once) may leave its
                # transition unanswered: the fatal report says why, unless a process died
                died = any(child.process.poll() is not None for child in children)
                return FATAL_EXIT_CODE if fatal.seen and not died else 1
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


def _discovery_settle(children):
    """[s] still to wait before activating the controllers: discovery_settle from the moment the last
    node joined the graph (its lifecycle service found; a process's start was 0.6-1.0 s earlier, the
    imports)."""
    return max(0.0, max(child.discovered for child in children) + discovery_settle() - time.monotonic())


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
