"""Control laws on ndarrays (no ROS): computed torque, the momentum observer of external torques
and wrenches, online gradients of the inertial parameters and their safe adaptation."""
from .adaptation import InertialAdaptation
from .computed_torque import ComputedTorque, clamp_effort
from .momentum_observer import MomentumObserver, wrench_from_joint_torque
from .parameter_gradient import AccelerationFilter, ParameterGradient

__all__ = ["AccelerationFilter", "ComputedTorque", "InertialAdaptation", "MomentumObserver",
           "ParameterGradient", "clamp_effort", "wrench_from_joint_torque"]
