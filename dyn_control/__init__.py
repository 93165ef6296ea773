"""dyn_control: real-time model-based control with Numba rigid-body dynamics.

    import dyn_control as dc
    model = dc.load_urdf("robot.urdf")
    data = model.create_data()
    tau = dc.rnea(model, data, q, v, a)
"""
from .contact import (Contact, constrained_dynamics, constrained_dynamics_derivatives, impulse_dynamics,
                      impulse_dynamics_derivatives)
from .derivatives import (aba_derivatives, minverse, regressor, regressor_batch, rnea_batch,
                          rnea_derivatives, rnea_derivatives_batch)
from .dynamics import (aba, coriolis_matrix, crba, forward_kinematics, frame_pose, gravity, jacobian,
                       nonlinear_effects, rnea)
from .inertia import mesh_inertia, mesh_inertia_derivatives
from .mappings import load_mapping
from .model import PARAMETER_NAMES, Data, Model
from .model_derivatives import inertia_from_link_meshes, twist_derivatives
from .robots import bundled_urdf
from .second_order import aba_second_derivatives, rnea_second_derivatives
from .urdf import URDFError, load_urdf

__all__ = [
    "Data", "Model", "PARAMETER_NAMES", "URDFError", "aba", "aba_derivatives", "bundled_urdf",
    "coriolis_matrix", "crba",
    "forward_kinematics", "frame_pose", "gravity", "jacobian", "load_urdf", "mesh_inertia",
    "mesh_inertia_derivatives", "minverse", "nonlinear_effects", "regressor", "regressor_batch", "rnea",
    "rnea_batch", "rnea_derivatives", "rnea_derivatives_batch",
    "inertia_from_link_meshes", "twist_derivatives", "load_mapping",
    "aba_second_derivatives", "rnea_second_derivatives", "Contact", "constrained_dynamics",
    "constrained_dynamics_derivatives", "impulse_dynamics", "impulse_dynamics_derivatives",
]
