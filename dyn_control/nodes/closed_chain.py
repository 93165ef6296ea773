"""Closed chains in the nodes: the mapping plugin named by the `mapping.name` parameter, and the
simulated plant of a closed chain (reduced coordinates, like dyn_control.mappings.simulate_closed_chain).
"""
import numpy as np

from ..mappings import load_mapping
from . import params

PARAMETER_PREFIX = "mapping.parameters."


def node_mapping(node, model, name):
    """The closed-chain mapping `name` on the equivalent tree `model`, with the node's
    mapping.parameters.* as keyword arguments; a ValueError names the parameter on failure."""
    kwargs = params.read_group(node, PARAMETER_PREFIX)
    try:
        return load_mapping(name, model, **kwargs)
    except (ValueError, TypeError, RuntimeError) as error:
        raise ValueError(f"parameter mapping.name {name!r} (with mapping.parameters {sorted(kwargs)}): "
                         f"{error}") from None


def active_theta(mapping, model, initial_positions):
    """theta_a from the parameter initial_positions: one number per active joint, or one per tree
    joint (the active entries are used, the passive ones follow from the loop closure);
    empty: the mapping's reference configuration."""
    if not initial_positions:
        return mapping.reference_configuration[mapping.active_indices].copy()
    values = np.asarray(initial_positions, dtype=np.float64)
    if values.size == mapping.active_indices.size:
        return values
    if values.size == model.nv:
        return values[mapping.active_indices]
    raise ValueError(f"parameter initial_positions: {values.size} numbers; a closed chain takes one per active "
                     f"joint ({', '.join(mapping.active_joints)}) or one per tree joint ({model.nv})")


class ClosedChainSimulator:
    """A closed chain integrated in its actuated coordinates theta_a: each step holds the actuator
    torques and takes one classical Runge-Kutta step of ddtheta_a = mapping.forward_dynamics(...);
    the tree state (q, v: every joint, passive ones from the loop closure, Newton to 1e-12) is
    recomputed after every step, so the passive joints never drift. The interface of the
    simulation backends the simulator node uses: q, v, effort, dt, step(tau), reset(q0)."""

    def __init__(self, mapping, model, dt, theta0):
        self.mapping, self.model, self.dt = mapping, model, float(dt)
        self.data = model.create_data()
        self.active = mapping.active_indices
        self.theta0 = np.array(theta0, dtype=np.float64)
        self.effort = np.zeros(model.nv)
        self.reset()

    def reset(self, q0=None):
        self.theta = self.theta0.copy()
        self.dtheta = np.zeros(self.active.size)
        self.q = self.mapping.complete(self.theta)
        self.v = np.zeros(self.model.nv)
        self.effort[:] = 0.0

    def step(self, tau):
        """One step under tree torques tau (nv,): the actuators' entries drive the chain, the
        passive joints' entries must be zero (nothing acts there)."""
        mapping, model, data, q, dt = self.mapping, self.model, self.data, self.q, self.dt
        tau_a = np.array(tau[self.active], dtype=np.float64)

        def acceleration(theta, dtheta):
            return mapping.forward_dynamics(model, data, theta, dtheta, tau_a, guess=q)

        theta, dtheta = self.theta, self.dtheta
        k1_x, k1_v = dtheta, acceleration(theta, dtheta)
        k2_x, k2_v = dtheta + 0.5 * dt * k1_v, acceleration(theta + 0.5 * dt * k1_x, dtheta + 0.5 * dt * k1_v)
        k3_x, k3_v = dtheta + 0.5 * dt * k2_v, acceleration(theta + 0.5 * dt * k2_x, dtheta + 0.5 * dt * k2_v)
        k4_x, k4_v = dtheta + dt * k3_v, acceleration(theta + dt * k3_x, dtheta + dt * k3_v)
        self.theta = theta + dt / 6.0 * (k1_x + 2.0 * k2_x + 2.0 * k3_x + k4_x)
        self.dtheta = dtheta + dt / 6.0 * (k1_v + 2.0 * k2_v + 2.0 * k3_v + k4_v)
        self.q, self.v, _ = mapping.tree_state(self.theta, self.dtheta, np.zeros(self.active.size), guess=q)
        self.effort[:] = 0.0
        self.effort[self.active] = tau_a
