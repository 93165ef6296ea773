"""What the controller and the simulator nodes share: a lifecycle node with declared parameters, a
loop thread (timing.RealtimeLoop) and 1 Hz diagnostics, a watch of Numba's compiles while it is
active (CompileWatch), and the `main` of a console script, which preloads the loop's kernels while
the node waits for its configure (preload.py).

Services answer at any moment, a first configure compiling for a minute included: the node's
callbacks run on a MultiThreadedExecutor in two groups (see LoopNode._group_callbacks)."""
import os
import signal
import sys
import threading
import time

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, KeyValue
from lifecycle_msgs.srv import GetAvailableStates, GetAvailableTransitions, GetState
from numba.core import event
from rcl_interfaces.srv import (DescribeParameters, GetParameters, GetParameterTypes, ListParameters, SetParameters,
                                SetParametersAtomically)
from rclpy.callback_groups import CallbackGroup, ReentrantCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.duration import Duration
from rclpy.executors import MultiThreadedExecutor
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.signals import SignalHandlerOptions

from . import param_files, params, preload, qos
from .discovery import discovery_settle
from .spinner import Spinner
from .stop_flag import StopFlag

# services that only read (the lifecycle state and transitions; parameter values, types, names and
# descriptions): answered at any moment, beside any callback
QUERIES = (GetState, GetAvailableStates, GetAvailableTransitions, DescribeParameters, GetParameters,
           GetParameterTypes, ListParameters)
PARAMETER_SETS = (SetParameters, SetParametersAtomically)
ACK_TIMEOUT = 0.5        # [s] longest wait for the subscribers' acknowledgement of a stop's last message
EXECUTOR_THREADS = 2     # a transition (a first configure may compile for a minute), and the rest beside it


class LoopNode(LifecycleNode):
    """A lifecycle node whose work runs on `self.loop` while active. Subclasses provide
    `_on_set_parameters`, `_publish_diagnostics` and `_destroy_entities`, `_configure` (what configure
    does with the parameters' values), the activate and deactivate transitions, and KERNELS: the
    preload.py loader of their loop's kernels."""

    KERNELS = None
    SETTLE_DISCOVERY = False     # autostart activates discovery_settle() after the process's rclpy.init

    def __init__(self, node_name, parameters, parameter_prefix, **kwargs):
        super().__init__(node_name, **kwargs)
        self._group_callbacks()
        self._parameter_table = parameters
        params.declare(self, parameters)
        params.declare_group(self, parameter_prefix)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.state = "unconfigured"
        self.loop = None
        self._configured = None              # objects of a configured node (see _build)
        self.compiles = CompileWatch(self.get_logger().warning)
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", qos.STATE)
        # a steady clock: diagnostics go on with use_sim_time and no /clock (a paused simulation)
        self._diagnostics_timer = self.create_timer(1.0, self._publish_diagnostics,
                                                    clock=Clock(clock_type=ClockType.STEADY_TIME))

    @property
    def state(self):
        """The lifecycle state as the subclasses set it: unconfigured, configuring, inactive, active, finalized."""
        return self._state

    @state.setter
    def state(self, value):
        self._state = value
        if self.executor is not None:
            self.executor.wake()      # its next wait may take parameter sets beside a configure, or no longer

    def _group_callbacks(self):
        """The queries (QUERIES) in a reentrant group: answered at once, also while a transition runs.
        Everything else (change_state, parameter sets, timers, subscriptions) in the node's default
        group, one callback at a time as rclpy's, except that parameter sets run beside a configure
        (_OneAtATimeButConfigure). rclpy puts the lifecycle and parameter services in the default
        group, which a first configure compiling the kernels would hold for a minute."""
        queries = ReentrantCallbackGroup()
        rclpys = self._default_callback_group
        self._default_callback_group = _OneAtATimeButConfigure(lambda: self._state == "configuring")
        for entity in (*self.services, *self.subscriptions, *self.timers, *self.clients, *self.waitables):
            if entity.callback_group is rclpys:
                group = queries if getattr(entity, "srv_type", None) in QUERIES else self._default_callback_group
                entity.callback_group = group
                group.add_entity(entity)

    def preload_kernels(self):
        """Start loading the loop's compiled kernels (for a tree or, with mapping.name set, a closed
        chain) on a thread of their own, ahead of configure."""
        closed_chain = bool(self.get_parameter("mapping.name").value)
        return preload.in_background(lambda: self.KERNELS(closed_chain), self.get_logger())

    def on_configure(self, state):
        """Every parameter read, then `_configure(values)`; a failure fails the transition (logged, the
        entities made so far destroyed) and the node lives on, unconfigured."""
        self.state = "configuring"
        try:
            self._configure(params.read(self, self._parameter_table, params.PHASES))
        except Exception as error:  # noqa: BLE001 - any failure fails the transition, the node lives
            self.get_logger().error(f"configure failed: {error}")
            self._destroy_entities()
            self.state = "unconfigured"
            return TransitionCallbackReturn.FAILURE
        self.state = "inactive"
        return super().on_configure(state)

    def on_activate(self, state):
        """The subclasses call this last before their loop starts: the compile watch starts."""
        self.compiles.start()
        return super().on_activate(state)

    def on_deactivate(self, state):
        """The subclasses call this once their loop has stopped (and the controller's arm with it)."""
        self.compiles.stop()
        return super().on_deactivate(state)

    def on_cleanup(self, state):
        self._destroy_entities()
        self.state = "unconfigured"
        return super().on_cleanup(state)

    def on_shutdown(self, state):
        self._tear_down("finalized")
        return super().on_shutdown(state)

    def on_error(self, state):
        self._tear_down("unconfigured")
        return TransitionCallbackReturn.SUCCESS

    def _tear_down(self, new_state):
        """Loop stopped, compile watch off, entities destroyed, whatever state the node was in."""
        self._stop_loop()
        self.compiles.stop()
        self._destroy_entities()
        self.state = new_state

    def _send_diagnostics(self, status, level, message, values):
        """Publish `status` (a DiagnosticStatus) with its level, message and key/value pairs, and the
        compile watch's figures."""
        values["compiles after activate"] = self.compiles.count
        if self.compiles.count:
            values["last compile after activate"] = self.compiles.latest
        status.level, status.message = level, message
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics.publish(array)

    def _stop_loop(self):
        if self.loop is not None and self.loop.running:
            self.loop.stop()

    def _deliver(self, publisher, what):
        """Wait (at most ACK_TIMEOUT) until every reliable subscriber of `publisher` has
        acknowledged what it published, `what` (a phrase) naming it in the warning when one has
        not: a stop publishes its last message, and the process may end next, and a publisher
        destroyed before the acknowledgement takes its unsent messages with it (measured on this
        2-core machine with both cores busy: the controller's last commands lost in 1 to 8 of 16-24
        Ctrl-Cs)."""
        if not publisher.wait_for_all_acked(Duration(seconds=ACK_TIMEOUT)):
            self.get_logger().warning(f"{what} on {publisher.topic_name} was not acknowledged by every reliable "
                                      f"subscriber within {ACK_TIMEOUT:g} s")


class CompileWatch(event.Listener):
    """Numba's compiles between start() (activate) and stop() (deactivate): nothing may compile once
    a loop runs (every function a node can call after activate is loaded before, preload.py), as a
    compile holds the calling thread, and Numba's lock every other thread, for milliseconds to
    seconds. Each is logged through `warn` naming the function, and counted (`count`, the latest's
    name `latest`), for /diagnostics. A load from the kernel cache is no compile."""

    def __init__(self, warn):
        self.warn = warn
        self.count = 0
        self.latest = ""
        self._watching = False

    def start(self):
        if not self._watching:
            event.register("numba:compile", self)
            self._watching = True

    def stop(self):
        if self._watching:
            event.unregister("numba:compile", self)
            self._watching = False

    def on_start(self, ev):
        function = ev.data["dispatcher"].py_func
        self.count += 1
        self.latest = f"{function.__module__}.{function.__qualname__}"
        self.warn(f"Numba is compiling {self.latest}{tuple(ev.data['args'])} after activate (compile number "
                  f"{self.count}): the loop waits for it; preload.py's loader of this node should run it")

    def on_end(self, ev):
        pass


class _OneAtATimeButConfigure(CallbackGroup):
    """rclpy's MutuallyExclusiveCallbackGroup (one callback at a time), except that while
    `configuring()` (a configure transition runs) a parameter set may run beside it. A configure
    has read its parameters at its start: one read on configure is refused while it runs
    (params.refusal), the others are stored and read on activate; a set never interleaves with
    the other transitions, which read and apply the parameters."""

    def __init__(self, configuring):
        super().__init__()
        self._configuring = configuring
        self._running = []
        self._lock = threading.Lock()

    def _may_start(self, entity):
        return not self._running or (len(self._running) == 1 and getattr(entity, "srv_type", None) in PARAMETER_SETS
                                     and self._configuring())

    def can_execute(self, entity):
        with self._lock:
            return self._may_start(entity)

    def beginning_execution(self, entity):
        with self._lock:
            if not self._may_start(entity):
                return False
            self._running.append(entity)
            return True

    def ending_execution(self, entity):
        with self._lock:
            self._running.remove(entity)


def spin(node_class, args=None):
    """`ros2 run dyn_control <node>` (and each process of `dyn-control bringup`): spin one node,
    configured and activated at once when its `autostart` parameter is true (a controller no earlier
    than discovery.discovery_settle() after this process joined the graph, as the bringup and the launch
    files do: doc/running.md, "Joint states late in transit"). The loop's kernels start loading at once
    (preload.py), while the node is being discovered.

    SIGINT and SIGTERM (Ctrl-C, ros2 launch stopping it) end the process cleanly: an active node
    is deactivated first (the controller publishes its safe command while the ROS context still
    stands), then the node and the context are shut down; exit code 0, at once even while a
    transition (a first configure) still runs. rclpy's own signal handler is not installed: it
    would invalidate the context before the safe command goes out. A Ctrl-C in the terminal of
    `ros2 launch` reaches a node twice (from the terminal and forwarded by launch): signals after
    the first only raise the flag again, and once the node is down they are ignored, since Python's
    exit restores the default handlers, and a signal in the last milliseconds of the interpreter
    would end a clean stop as a crash (exit code -2).

    The node logs which entries of its parameter files apply to it, and warns when none does."""
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    joined = time.monotonic()
    stop = StopFlag()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, stop.raise_)
    node = node_class()
    node.preload_kernels()
    params.report_parameter_files(node, param_files.files_in(sys.argv if args is None else args))
    executor = MultiThreadedExecutor(num_threads=EXECUTOR_THREADS)
    executor.add_node(node)
    spinner = Spinner(executor, "executor")
    if node.get_parameter("autostart").value:
        # on a thread of its own, so that a signal during a long first configure (Numba compiling)
        # ends the process at once
        threading.Thread(target=_autostart, args=(node, stop, joined), name="autostart", daemon=True).start()
    while not stop.wait(0.1):
        pass
    if node.state == "configuring":
        # a first configure compiling the kernels for a minute, in an executor thread that nothing
        # can interrupt: nothing was ever commanded, leave at once
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    if node.state == "active":
        node.trigger_deactivate()
    node._stop_loop()
    spinner.stop()
    node.destroy_node()
    rclpy.try_shutdown()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_IGN)     # kept through the interpreter's exit


def _autostart(node, stop, joined):
    node.trigger_configure()
    if node.SETTLE_DISCOVERY:
        stop.wait(max(0.0, joined + discovery_settle() - time.monotonic()))
    if node.state == "inactive" and not stop.is_set():
        node.trigger_activate()
