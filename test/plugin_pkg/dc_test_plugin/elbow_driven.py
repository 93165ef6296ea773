"""The spherical five-bar driven at joint1 and at the elbow joint2 (joints 3, 4, 5 passive)."""
from dyn_control.mappings.five_bar import FiveBarMapping


class ElbowDrivenFiveBar(FiveBarMapping):
    def __init__(self, model, active_joints=("joint1", "joint2"), **params):
        super().__init__(model, active_joints=active_joints, **params)
