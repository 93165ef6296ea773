"""The loops' compiled kernels, loaded (or compiled) ahead of the configure transition.

Numba compiles per argument type, never per robot, so running a loop's compiled calls once on the
bundled arm leaves in the process (and in the Numba cache) exactly what a configure on any tree
robot then calls with its own buffers: that configure finds them loaded. A node process starts this
at once, on a thread of its own (`in_background`), so that the work (about 0.6 s CPU with a warm
cache: Numba's first use and the cache loads; about a minute with an empty one) runs while the
process is still being discovered and its configure request is on its way, not after it. A
configure that comes earlier waits on Numba's compiler lock for what is still loading. A load that
takes longer than PROGRESS_PERIOD (Numba compiling what its cache lacks) says so in the log every
PROGRESS_PERIOD, with the number of functions compiled so far.

`dyn-control compile` runs the loaders here (LOADERS, all by default), each in a process of its own
that calls its public functions before anything else (their entry kernels compile what they call
without Numba's runtime: kernels/__init__.py); the package's install step runs it (setup.py), so
that an installed package starts with a filled cache (kernel_cache.py).
"""
import contextlib
import threading
import time

import numpy as np
from numba.core import event

PROGRESS_PERIOD = 10.0      # [s] between the progress lines of a long load
COMPILE_ESTIMATE = "about 1-2 minutes on a 2-core machine"     # a node's loop into an empty cache (make bench)


def dynamics_kernels():
    """The entry kernels of the public functions (rnea, aba, crba, ..., their derivatives, the
    contacts), run once on the bundled arm. Compiled without Numba's runtime (kernels/__init__.py),
    they compile what they call the same way when they come first, as here; so `dyn-control
    compile` loads them before the loops' kernels, which then find those callees compiled."""
    from .. import contact, derivatives, dynamics, task_space
    from ..robots import bundled_urdf
    from ..urdf import load_urdf
    model = load_urdf(bundled_urdf("arm7"))
    data = model.create_data()
    q, zero, forces = np.full(model.nv, 0.3), np.zeros(model.nv), np.zeros((model.nv, 6))
    frame = model.frame_names[-1]
    for f_ext in (None, forces):
        dynamics.rnea(model, data, q, zero, zero, f_ext)
        dynamics.aba(model, data, q, zero, zero, f_ext)
    dynamics.crba(model, data, q)
    dynamics.nonlinear_effects(model, data, q, zero)
    dynamics.gravity(model, data, q)
    dynamics.coriolis_matrix(model, data, q, zero)
    dynamics.forward_kinematics(model, data, q)
    dynamics.jacobian(model, data, q, frame)
    derivatives.regressor(model, data, q, zero, zero)
    derivatives.rnea_derivatives(model, data, q, zero, zero)
    derivatives.minverse(model, data, q)
    derivatives.aba_derivatives(model, data, q, zero, zero)
    task_space.frame_jacobian_time_variation(model, data, q, zero, frame)
    for kind in ("point", "frame"):
        contacts = [contact.Contact(frame, kind)]
        contact.constrained_dynamics(model, data, q, zero, zero, contacts)
        contact.impulse_dynamics(model, data, q, zero, contacts, 0.0)
        contact.constrained_dynamics_derivatives(model, data, q, zero, zero, contacts)
        contact.impulse_dynamics_derivatives(model, data, q, zero, contacts, 0.0)


def controller_kernels(closed_chain=False):
    """The controller's loop: the tick kernel with every branch (a tree's, or the five-bar's for a
    closed chain), the joint-state parser, the rcl calls of its taking and publishing; the parsing
    and building of trajectories (their checks, building and joining), the fourier reference, and a
    Cartesian target's pose (its quaternion, its frame's pose)."""
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    from ..control import fourier
    from ..control import trajectory as trajectories
    from ..control.tick import ControllerTick
    from ..robots import bundled_urdf
    from ..urdf import load_urdf
    from . import rcl_io, trajectory_input
    from .inputs import JointStateReader
    model = load_urdf(bundled_urdf("five_bar" if closed_chain else "arm7"))
    nv = model.nv
    sample = JointState(name=list(model.joint_names), position=[0.0] * nv, velocity=[0.0] * nv, effort=[0.0] * nv)
    JointStateReader(model.joint_names, np.zeros(nv), np.zeros(nv), np.zeros(nv)).read(serialize_message(sample), 1)
    if closed_chain:
        from ..control.closed_chain_tick import ClosedChainTick
        from ..mappings import load_mapping
        mapping = load_mapping("five_bar", model)
        ClosedChainTick(model, mapping, mapping.active_indices, "end_effector", 2).warm_up()
    else:
        from ..dynamics import frame_pose, gravity
        from ..task_space import quaternion_to_rotation
        # the public functions first (their entry kernels compile what they call without Numba's
        # runtime, kernels/__init__.py), then the tick
        gravity(model, model.create_data(), np.zeros(nv))      # the rate limit's seed (controller_assembly.py)
        quaternion_to_rotation(np.array([0.0, 0.0, 0.0, 1.0]))  # ~/target_pose (inputs.py)
        frame_pose(model, model.create_data(), np.zeros(nv), model.frame_names[-1])
        ControllerTick(model, np.arange(nv), model.frame_names[-1], 2).warm_up()
    trajectory_input.warm_up()
    trajectories.warm_up()      # a trajectory's checks (~/joint_trajectory, the action), building and joining
    fourier.warm_up()
    rcl_io.preload()


def simulator_kernels(closed_chain=False):
    """The simulator's step with and without an external wrench (the builtin one on a tree, the
    five-bar's for a closed chain), a payload's inertia, g(q) (a robot that compensates gravity), the
    command parser, the clamp and divergence checks, the rcl calls."""
    from rclpy.serialization import serialize_message
    from std_msgs.msg import Float64MultiArray

    from ..dynamics import gravity
    from ..robots import bundled_urdf
    from ..simulation.builtin import BuiltinSimulator
    from ..simulation.guards import clamp_efforts, diverged_joint
    from ..urdf import load_urdf
    from . import rcl_io
    from .wire import message_view, parse_float64_array
    if closed_chain:
        from ..mappings import load_mapping
        from ..simulation.closed_chain import ClosedChainSimulator
        model = load_urdf(bundled_urdf("five_bar"))
        mapping = load_mapping("five_bar", model)
        simulator = ClosedChainSimulator(mapping, model, 1e-3,
                                         mapping.active_configuration(mapping.reference_configuration))
        simulator.step(np.zeros(model.nv), np.zeros(6), "end_effector")
    else:
        model = load_urdf(bundled_urdf("arm7"))
        # the public function first (its entry kernel compiles what it calls without Numba's runtime,
        # kernels/__init__.py), then the step
        gravity(model, model.create_data(), np.zeros(model.nv))   # gravity_compensation: robot (simulator.py)
        model.with_payload(model.frame_names[-1], 1.0, [0.0, 0.0, 0.1], np.eye(3) * 1e-3)   # payload.*
        simulator = BuiltinSimulator(model, 1e-3)
        simulator.step(np.zeros(model.nv))
        simulator.step(np.zeros(model.nv), np.zeros(6), model.frame_names[-1])
    parse_float64_array(message_view(serialize_message(Float64MultiArray(data=[0.0]))), np.zeros(1))
    clamp_efforts(np.zeros(1), np.ones(1))
    diverged_joint(np.zeros(1), np.zeros(1), np.zeros(1), 1.0, 1e-3)
    rcl_io.preload()


# the CPU time of each loader into an empty cache of its own (make bench: bench_compile.py), in
# seconds: `dyn-control compile` starts the longest first
COMPILE_COST = {"dynamics": 150.0, "closed_chain_controller": 108.0, "controller": 95.0,
                "closed_chain_simulator": 60.0, "simulator": 40.0}

# what `dyn-control compile` can load, by name: every one by default
LOADERS = {
    "dynamics": dynamics_kernels,
    "controller": lambda: controller_kernels(False),
    "simulator": lambda: simulator_kernels(False),
    "closed_chain_controller": lambda: controller_kernels(True),
    "closed_chain_simulator": lambda: simulator_kernels(True),
}


class _Compiles(event.Listener):
    """Counts the functions Numba compiles in this process (a load from its cache is no compile),
    keeps the name of the latest and calls first() at the first."""

    def __init__(self, first):
        self.count = 0
        self.latest = None
        self.first = first

    def on_start(self, ev):
        if self.latest is None:
            self.first()
        self.latest = ev.data["dispatcher"].py_func.__qualname__

    def on_end(self, ev):
        self.count += 1


def _compiling_notice(what):
    from ..kernel_cache import cache_dirs
    return (f"{what}: the kernel cache ({cache_dirs()[0]}) lacks some of them: compiling them now, "
            f"{COMPILE_ESTIMATE} (`dyn-control compile` after an install or an edit does this beforehand; "
            "colcon build and make run it)")


@contextlib.contextmanager
def progress(report, what, notice=True):
    """Within: at the first function Numba compiles, report(line) says so at once, roughly for how
    long and how to avoid it (unless not `notice`); then every PROGRESS_PERIOD seconds, for how long
    `what` has been going on and how many functions Numba has compiled so far. Yields the counter
    (its .count)."""
    compiles = _Compiles(lambda: report(_compiling_notice(what)) if notice else None)
    done = threading.Event()
    start = time.monotonic()

    def reporting():
        while not done.wait(PROGRESS_PERIOD):
            report(f"{what}: {time.monotonic() - start:.0f} s so far; Numba has compiled {compiles.count} functions "
                   f"its cache lacked (the latest: {compiles.latest})")

    event.register("numba:compile", compiles)
    reporter = threading.Thread(target=reporting, name="compile progress", daemon=True)
    reporter.start()
    try:
        yield compiles
    finally:
        done.set()
        event.unregister("numba:compile", compiles)


def in_background(loader, logger):
    """Run `loader` on a daemon thread, reporting through `logger` (an rclpy logger) its progress
    (see progress) and how long it took; a failure is a warning only (configure then compiles,
    and reports, what it needs)."""
    def run():
        start = time.perf_counter()
        try:
            with progress(logger.info, "loading the loop kernels") as compiles:
                loader()
        except Exception as error:  # noqa: BLE001 - a preload is an optimisation, never a failure
            logger.warning(f"preloading the loop kernels failed ({error}); configure will compile them")
            return
        compiled = f", {compiles.count} functions compiled (Numba's cache lacked them)" if compiles.count else ""
        logger.info(f"loop kernels preloaded in {time.perf_counter() - start:.2f} s{compiled}")
    thread = threading.Thread(target=run, name="preload kernels", daemon=True)
    thread.start()
    return thread
