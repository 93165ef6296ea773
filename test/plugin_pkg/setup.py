"""A third-party package adding closed-chain mappings to dyn_control, for test_five_bar.py.

It declares two entry points in the group dyn_control.mappings: a working mechanism and one whose
module fails to import (to check that the failure is reported by the plugin's name)."""
from setuptools import setup

setup(
    name="dyn-control-test-plugin",
    version="0.1.0",
    packages=["dc_test_plugin"],
    entry_points={
        "dyn_control.mappings": [
            "elbow_driven_five_bar = dc_test_plugin.elbow_driven:ElbowDrivenFiveBar",
            "broken_test_mapping = dc_test_plugin.broken:BrokenMapping",
        ],
    },
)
