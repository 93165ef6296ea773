"""Inertial parameters phi = [m, hx, hy, hz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz] (h = m c, I about the
frame origin): mesh-based inertia and its vertex derivatives, frame changes, the derivative of a
transformed inertia, and physical-consistency checks."""
from .mesh import mesh_inertia, mesh_inertia_derivatives
from .parameters import (check_physical_consistency, phi_to_spatial_inertia, spatial_inertia_to_phi,
                         transform_phi, translated_inertia_derivative)

__all__ = [
    "check_physical_consistency", "mesh_inertia", "mesh_inertia_derivatives", "phi_to_spatial_inertia",
    "spatial_inertia_to_phi", "transform_phi", "translated_inertia_derivative",
]
