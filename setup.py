import glob
import os

from setuptools import find_packages, setup

package_name = "dyn_control"


def tree(folder):
    """data_files entries installing every file below `folder` under share/<pkg>/<folder>."""
    entries = []
    for root, _, files in os.walk(folder):
        if files:
            target = os.path.join("share", package_name, root)
            entries.append((target, [os.path.join(root, f) for f in sorted(files)]))
    return entries


setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*", "bench"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob.glob("launch/*.launch.py")),
    ]
    + tree("config"),
    python_requires=">=3.11",
    # The ROS 2 client library and message packages are deliberately absent: on a ROS 2 install they
    # come from the distribution, on a plain machine the Makefile installs the ros-* wheels.
    install_requires=["numpy>=1.24", "scipy", "numba>=0.59", "pyyaml"],
    extras_require={
        # inertia_from_link_meshes reads STL/OBJ (and DAE with pycollada) through trimesh
        "meshes": ["trimesh"],
        # the simulator's independent physics backend
        "mujoco": ["mujoco"],
        # dyn-control excite / record / identify: ROS 2 bags without ROS, the consistent fit's convex program
        "identification": ["rosbags", "cvxpy", "clarabel", "scipy"],
        "test": ["pytest", "hypothesis", "pin", "example-robot-data", "trimesh", "mujoco", "rosbags", "cvxpy",
                 "clarabel"],
    },
    zip_safe=True,
    maintainer="dyn_control developers",
    maintainer_email="dev@dyn-control.invalid",
    description="Real-time model-based control with Numba rigid-body dynamics for ROS 2",
    license="BSD-3-Clause",
    tests_require=["pytest"],
    entry_points={
        "console_scripts": [
            "dyn-control = dyn_control.nodes.cli:main",
            "controller = dyn_control.nodes.controller:main",
            "simulator = dyn_control.nodes.simulator:main",
        ],
        "dyn_control.mappings": [
            "five_bar = dyn_control.mappings.five_bar:FiveBarMapping",
        ],
    },
)
