"""Simulated robots for closed-loop runs without hardware: BuiltinSimulator (dyn_control's own ABA)
and MujocoSimulator (MuJoCo, imported on first use so that MuJoCo stays optional)."""
from .builtin import BuiltinSimulator

__all__ = ["BuiltinSimulator", "MujocoSimulator"]


def __getattr__(name):
    if name == "MujocoSimulator":
        from .mujoco_backend import MujocoSimulator
        return MujocoSimulator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
