"""package.xml declares what the package uses (issue 22.4), and gazebo.launch.py names every ROS
package it needs that is missing, at once, with the apt line.

Imports of dyn_control/ and launch/ are read with ast (every import statement, also those inside
functions); each module outside the standard library and this package maps to the rosdep key that
provides it: a ROS package of the same name, or a python3-* key. Modules provided here by a `ros-*`
wheel are ROS packages by that wheel (importlib.metadata), an independent check of the mapping.
"""
import ast
import glob
import importlib.metadata
import os
import sys
import xml.etree.ElementTree as ET

import pytest

from dyn_control.nodes.gazebo import GAZEBO_PACKAGES, require_packages

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON_KEYS = {"numpy": "python3-numpy", "scipy": "python3-scipy", "numba": "python3-numba",
               "llvmlite": "python3-numba",        # numba's compiler, installed with it
               "yaml": "python3-yaml", "matplotlib": "python3-matplotlib"}
OPTIONAL = {"mujoco": "setup.py extra 'mujoco' (the simulator's second backend)",
            "trimesh": "setup.py extra 'meshes' (inertia from mesh files)",
            "rosbags": "setup.py extra 'identification' (bags without ROS)",
            "cvxpy": "setup.py extra 'identification' (the consistent fit)",
            "pinocchio": "an independent oracle of `dyn-control faults` where installed (the test extra)"}
# ROS packages that this machine builds itself (not a ros-* wheel): control_msgs from interfaces/
LOCAL_BUILDS = {"control_msgs"}
# needed without being imported: the `ros2 launch` command and the Gazebo launch's packages
NOT_IMPORTED = {"ros2launch", *GAZEBO_PACKAGES}


def imported_modules():
    modules = {}
    for path in glob.glob(os.path.join(ROOT, "dyn_control", "**", "*.py"), recursive=True) + \
            glob.glob(os.path.join(ROOT, "launch", "*.py")):
        for node in ast.walk(ast.parse(open(path).read())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            for name in names:
                modules.setdefault(name.split(".")[0], os.path.relpath(path, ROOT))
    return {m: p for m, p in modules.items() if m not in sys.stdlib_module_names and m != "dyn_control"}


def exec_depends():
    root = ET.parse(os.path.join(ROOT, "package.xml")).getroot()
    return {e.text.strip() for tag in ("exec_depend", "depend") for e in root.findall(tag)}


def test_package_xml_declares_every_import():
    declared = exec_depends()
    missing = []
    for module, path in sorted(imported_modules().items()):
        if module in OPTIONAL:
            continue
        key = PYTHON_KEYS.get(module, module)   # anything else is a ROS package of the module's name
        if key not in declared:
            missing.append(f"{key} (import {module} in {path})")
    assert not missing, f"package.xml lacks exec_depend {', '.join(missing)}"
    assert NOT_IMPORTED <= declared, f"package.xml lacks {sorted(NOT_IMPORTED - declared)}"


def test_ros_wheels_confirm_which_imports_are_ros_packages():
    """Every imported module that a ros-* wheel provides here is one the mapping takes for a ROS
    package, and the reverse for those installed: the python3-* ones come from elsewhere."""
    distributions = importlib.metadata.packages_distributions()
    for module in imported_modules():
        wheels = distributions.get(module)
        if not wheels or module in LOCAL_BUILDS:
            continue          # launch, launch_ros, xacro: only in a ROS 2 distribution
        from_ros_wheel = any(w.lower().startswith("ros-") for w in wheels)
        assert from_ros_wheel == (module not in PYTHON_KEYS and module not in OPTIONAL), (module, wheels)


def fake_ament_index(tmp_path, packages):
    for name in packages:
        marker = tmp_path / "share" / "ament_index" / "resource_index" / "packages" / name
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("")
    return str(tmp_path)


def test_gazebo_launch_names_every_missing_package_with_the_apt_line(tmp_path, monkeypatch):
    monkeypatch.setenv("AMENT_PREFIX_PATH", fake_ament_index(tmp_path, ["ros_gz_sim", "robot_state_publisher"]))
    monkeypatch.setenv("ROS_DISTRO", "kilted")
    with pytest.raises(RuntimeError) as refused:
        require_packages(GAZEBO_PACKAGES, "gazebo.launch.py")
    message = str(refused.value)
    missing = [p for p in GAZEBO_PACKAGES if p not in ("ros_gz_sim", "robot_state_publisher")]
    assert f"not installed: {', '.join(missing)};" in message, message
    assert message.endswith("sudo apt install " + " ".join(f"ros-kilted-{p.replace('_', '-')}" for p in missing))
    monkeypatch.setenv("AMENT_PREFIX_PATH", fake_ament_index(tmp_path, GAZEBO_PACKAGES))
    require_packages(GAZEBO_PACKAGES, "gazebo.launch.py")


def test_gazebo_launch_without_a_ros_environment(monkeypatch):
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    monkeypatch.delenv("ROS_DISTRO", raising=False)
    with pytest.raises(RuntimeError, match=r"AMENT_PREFIX_PATH is not set.*apt install ros-\$ROS_DISTRO-ros-gz-sim"):
        require_packages(GAZEBO_PACKAGES, "gazebo.launch.py")


def test_the_gazebo_launch_checks_before_it_starts_anything():
    """gazebo_actions() calls require_packages(GAZEBO_PACKAGES, ...) as its first statement."""
    tree = ast.parse(open(os.path.join(ROOT, "launch", "gazebo.launch.py")).read())
    actions = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "gazebo_actions")
    first = actions.body[0].value
    assert isinstance(first, ast.Call) and first.func.id == "require_packages"
    assert first.args[0].id == "GAZEBO_PACKAGES"
    started = {k.value for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "Node"
               for k in (kw.value for kw in n.keywords if kw.arg == "package")}
    started |= {"ros_gz_sim"}   # its launch file, through get_package_share_directory
    assert started <= set(GAZEBO_PACKAGES), started - set(GAZEBO_PACKAGES)
