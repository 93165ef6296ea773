"""The loops' compiled kernels, loaded (or compiled) ahead of the configure transition.

Numba compiles per argument type, never per robot, so running a loop's compiled calls once on the
bundled arm leaves in the process (and in the Numba cache) exactly what a configure on any tree
robot then calls with its own buffers: that configure finds them loaded. A node process starts this
at once, on a thread of its own (`in_background`), so that the work (about 0.6 s CPU with a warm
cache: Numba's first use and the cache loads; about a minute with an empty one) runs while the
process is still being discovered and its configure request is on its way, not after it. A
configure that comes earlier waits on Numba's compiler lock for what is still loading.

`dyn-control compile` runs every loader here in the foreground, closed chains included.
"""
import threading
import time

import numpy as np


def controller_kernels(closed_chain=False):
    """The controller's loop: the tick kernel with every branch (a tree's, or the five-bar's for a
    closed chain), the joint-state parser, the rcl calls of its taking and publishing; and the
    parsing and building of trajectories."""
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

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
        ControllerTick(model, np.arange(nv), model.frame_names[-1], 2).warm_up()
    trajectory_input.warm_up()
    rcl_io.preload()


def simulator_kernels(closed_chain=False):
    """The simulator's step with and without an external wrench (the builtin one on a tree, the
    five-bar's for a closed chain), the command parser, the clamp and divergence checks, the rcl calls."""
    from rclpy.serialization import serialize_message
    from std_msgs.msg import Float64MultiArray

    from ..robots import bundled_urdf
    from ..simulation.builtin import BuiltinSimulator
    from ..urdf import load_urdf
    from . import rcl_io
    from .simulator import clamp_efforts, diverged_joint
    from .wire import message_view, parse_float64_array
    if closed_chain:
        from ..mappings import load_mapping
        from ..simulation.closed_chain import ClosedChainSimulator
        model = load_urdf(bundled_urdf("five_bar"))
        mapping = load_mapping("five_bar", model)
        simulator = ClosedChainSimulator(mapping, model, 1e-3,
                                         mapping.reference_configuration[mapping.active_indices])
        simulator.step(np.zeros(model.nv), np.zeros(6), "end_effector")
    else:
        model = load_urdf(bundled_urdf("arm7"))
        simulator = BuiltinSimulator(model, 1e-3)
        simulator.step(np.zeros(model.nv))
        simulator.step(np.zeros(model.nv), np.zeros(6), model.frame_names[-1])
    parse_float64_array(message_view(serialize_message(Float64MultiArray(data=[0.0]))), np.zeros(1))
    clamp_efforts(np.zeros(1), np.ones(1))
    diverged_joint(np.zeros(1), np.zeros(1), np.zeros(1), 1.0, 1e-3)
    rcl_io.preload()


def all_kernels():
    """Every loader above: what `dyn-control compile` puts in the Numba cache."""
    for closed_chain in (False, True):
        controller_kernels(closed_chain)
        simulator_kernels(closed_chain)


def in_background(loader, logger):
    """Run `loader` on a daemon thread, reporting through `logger` (an rclpy logger) how long it
    took; a failure is a warning only (configure then compiles, and reports, what it needs)."""
    def run():
        start = time.perf_counter()
        try:
            loader()
        except Exception as error:  # noqa: BLE001 - a preload is an optimisation, never a failure
            logger.warning(f"preloading the loop kernels failed ({error}); configure will compile them")
            return
        logger.info(f"loop kernels preloaded in {time.perf_counter() - start:.2f} s")
    thread = threading.Thread(target=run, name="preload kernels", daemon=True)
    thread.start()
    return thread
