"""dyn_control: real-time model-based control with Numba rigid-body dynamics.

    import dyn_control as dc
    model = dc.load_urdf("robot.urdf")
    data = model.create_data()
    tau = dc.rnea(model, data, q, v, a)

The public names load on first use (PEP 562): a node process or the bringup that imports
`dyn_control.nodes...` pays only for the modules it uses (the whole API takes Numba and SciPy, about
0.7 s to import).
"""
import importlib

_PUBLIC = {
    ".centroidal": ("center_of_mass", "centroidal_momentum", "centroidal_momentum_matrix",
                    "centroidal_momentum_time_variation", "jacobian_center_of_mass"),
    ".configuration": ("difference", "difference_jacobians", "integrate", "integrate_jacobians", "neutral", "normalize",
                       "random_configuration"),
    ".constrained_second_order": ("constrained_dynamics_second_derivatives", "impulse_dynamics_second_derivatives"),
    ".contact": ("Contact", "constrained_dynamics", "constrained_dynamics_derivatives", "impulse_dynamics",
                 "impulse_dynamics_derivatives"),
    ".derivatives": ("aba_batch", "aba_derivatives", "minverse", "regressor", "regressor_batch",
                     "regressor_normal_equations", "residual_gradient_batch", "rnea_batch", "rnea_derivatives",
                     "rnea_derivatives_batch"),
    ".dynamics": ("aba", "coriolis_matrix", "crba", "forward_kinematics", "frame_pose", "gravity", "jacobian",
                  "nonlinear_effects", "rnea"),
    ".identification.parameters_file": ("load_parameters",),
    ".inertia": ("mesh_inertia", "mesh_inertia_derivatives"),
    ".kernels.joint_terms": ("COULOMB_VELOCITY_SCALE",),
    ".mappings": ("load_mapping",),
    ".model": ("JOINT_PARAMETER_NAMES", "PARAMETER_NAMES", "Data", "Model"),
    ".model_derivatives": ("inertia_from_link_meshes", "twist_derivatives"),
    ".robots": ("bundled_urdf",),
    ".second_order": ("aba_second_derivatives", "rnea_second_derivatives"),
    ".task_space": ("frame_classical_acceleration", "frame_jacobian_time_variation", "frame_velocity",
                    "nullspace_projector", "operational_space_inertia", "pose_error", "quaternion_to_rotation",
                    "rotation_to_quaternion"),
    ".urdf": ("URDFError", "load_urdf"),
}
_MODULE_OF = {name: module for module, names in _PUBLIC.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name):
    """A public name, or a subpackage (dc.kernels, dc.nodes...), imported on first use."""
    module = _MODULE_OF.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module, __name__), name)
    else:
        try:
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module 'dyn_control' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
