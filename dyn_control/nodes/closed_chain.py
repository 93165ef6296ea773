"""Closed chains in the nodes: the mapping plugin named by the `mapping.name` parameter, and the
simulated plant of a closed chain (simulation/closed_chain.py, compiled; reduced coordinates like
dyn_control.mappings.simulate_closed_chain).
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
        return mapping.active_configuration(mapping.reference_configuration)
    values = np.asarray(initial_positions, dtype=np.float64)
    if values.size == mapping.active_indices.size:
        return values
    if values.size == model.nq:
        return mapping.active_configuration(values)
    raise ValueError(f"parameter initial_positions: {values.size} numbers; a closed chain takes one per active "
                     f"joint ({', '.join(mapping.active_joints)}) or one per tree joint ({model.nq})")
