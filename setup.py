import glob
import os
import subprocess
import sys

from setuptools import find_packages, setup
from setuptools.command.develop import develop
from setuptools.command.install import install

package_name = "dyn_control"


def tree(folder):
    """data_files entries installing every file below `folder` under share/<pkg>/<folder>."""
    entries = []
    for root, _, files in os.walk(folder):
        if files:
            target = os.path.join("share", package_name, root)
            entries.append((target, [os.path.join(root, f) for f in sorted(files)]))
    return entries


def compile_kernels(package_root, prefix=None):
    """After an install (or develop): `dyn-control compile` on the copy in `package_root` (the folder
    holding dyn_control/), so that its nodes start with their kernels compiled. They go to that copy's
    kernel cache (dyn_control/__kernel_cache__ beside its modules, or NUMBA_CACHE_DIR when set:
    dyn_control/kernel_cache.py), which every entry point of that copy reads, also where the install
    tree is read-only at run time. `prefix`: the install prefix, for the ament index (where the
    bundled robots are found). DYN_CONTROL_COMPILE: unset or "all", every kernel; "none", skip; else
    names of `dyn-control compile` (e.g. "simulator"). A failure is a warning: the nodes then compile
    at their first start."""
    names = os.environ.get("DYN_CONTROL_COMPILE", "all").replace(",", " ").split()
    if names == ["none"]:
        return
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])))
    if prefix is not None:
        env["AMENT_PREFIX_PATH"] = os.pathsep.join(filter(None, [prefix, os.environ.get("AMENT_PREFIX_PATH")]))
    command = [sys.executable, "-m", "dyn_control.nodes.cli", "compile"] + ([] if names == ["all"] else names)
    # run from package_root: the copy compiled is the one there, not a checkout in the current folder
    if subprocess.run(command, cwd=package_root, env=env).returncode != 0:
        print("WARNING: compiling the loop kernels failed (see above): the nodes will compile them at their "
              "first start; run `dyn-control compile` to do it beforehand", file=sys.stderr)


class InstallAndCompile(install):
    """setup.py install (colcon build), then the loop kernels compiled for the installed copy; not in a
    staged install (--root: the files are not where they will run)."""

    def run(self):
        super().run()
        if self.root is None:
            compile_kernels(self.install_lib, self.install_data)
        else:
            print(f"not compiling the loop kernels in a staged install (--root {self.root}): run `dyn-control "
                  "compile` once installed")


class DevelopAndCompile(develop):
    """setup.py develop (colcon build --symlink-install), then the loop kernels compiled for the
    sources it links."""

    def run(self):
        super().run()
        if not getattr(self, "uninstall", False):      # (older setuptools: develop --uninstall)
            compile_kernels(os.path.dirname(os.path.abspath(__file__)))


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
    cmdclass={"install": InstallAndCompile, "develop": DevelopAndCompile},
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
