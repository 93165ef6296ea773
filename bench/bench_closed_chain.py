"""The spherical five-bar's compiled closed-chain step (simulation/closed_chain.py: RK4 in the actuated
coordinates, Newton loop closure warm-started at each stage) against the builtin simulator's step of
the same URDF as a tree (simulation/builtin.py, RK4 of ABA, the loop left open, the massless cut copy
given link3's inertia), and the closed-chain
controller tick (control/closed_chain_tick.py) against the tree tick (control/tick.py), both with the
observer and the gradient window on a new sample. The reference column is the tree's time: the ratio
is what closing the loop costs. Also the Python step it replaces (mapping.forward_dynamics in RK4)."""
import numpy as np

from common import Row, per_call_us


def run():
    import dyn_control as dc
    from dyn_control.control import tick as T
    from dyn_control.control.closed_chain_tick import ClosedChainTick
    from dyn_control.mappings import simulate_closed_chain
    from dyn_control.simulation.builtin import BuiltinSimulator
    from dyn_control.simulation.closed_chain import ClosedChainSimulator

    model = dc.load_urdf(dc.bundled_urdf("five_bar"))
    mapping = dc.load_mapping("five_bar", model)
    theta0 = np.array([0.1, -0.2])
    tau = np.zeros(model.nv)
    tau[mapping.active_indices] = [0.01, -0.01]

    closed = ClosedChainSimulator(mapping, model, 1e-3, theta0)
    # the open tree's M is singular with the massless cut copy (link3_cut): give it link3's inertia
    phi = model.phi.copy()
    phi[model.body_names.index("link3_cut")] = phi[model.body_names.index("link3")]
    tree = BuiltinSimulator(model._replace(inertial_parameters=phi), 1e-3, mapping.complete(theta0))

    def closed_step():
        closed.step(tau)
        if closed.f.dtheta @ closed.f.dtheta > 1.0:   # stay inside the workspace: back to the start
            closed.reset()

    def tree_step():
        tree.step(tau)
        if tree.v @ tree.v > 1.0:
            tree.reset(mapping.complete(theta0))

    def python_step():
        simulate_closed_chain(mapping, model, lambda t: (theta0, np.zeros(2), np.zeros(2)), 1e-3, 1e-3,
                              400.0, 40.0)

    rows = [Row("five_bar: closed-chain step (compiled)", per_call_us(closed_step), per_call_us(tree_step),
                "tree step (builtin RK4)"),
            Row("five_bar: closed-chain step (Python, 2 steps)", per_call_us(python_step, min_time=0.5),
                per_call_us(closed_step), "compiled step")]

    ticks = []
    for kind in ("closed", "tree"):
        if kind == "closed":
            tick = ClosedChainTick(model, mapping, mapping.active_indices, "end_effector", 200)
        else:
            tick = T.ControllerTick(model, np.arange(model.nv), "end_effector", 200)
        tick.warm_up()
        f, s = tick.f, tick.f.s
        f.q[:] = closed.q
        f.v[:] = closed.v
        s[T.S_ESTIMATE] = s[T.S_GRADIENTS] = s[T.S_NEW_SAMPLE] = 1.0
        s[T.S_DT] = 1e-3
        ticks.append(per_call_us(tick.tick))
    rows.append(Row("five_bar: controller tick, closed chain", ticks[0], ticks[1], "tree tick (twist gradient off)"))
    return rows
