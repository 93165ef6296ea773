"""The robot model of a node, from its robot_description / urdf_path parameters."""
import os
import sys

import numpy as np

from ..robots import config_dir
from ..urdf import load_urdf
from . import param_files


def resolve_path(path):
    """A file path, with package://PKG/REL resolved (dyn_control: its share or source folder;
    other packages: through the ament index, when there is one)."""
    if not path.startswith("package://"):
        return os.path.expanduser(path)
    package, _, relative = path[len("package://"):].partition("/")
    if package == "dyn_control":
        return os.path.join(os.path.dirname(config_dir()), relative)
    try:
        from ament_index_python.packages import get_package_share_directory
        return os.path.join(get_package_share_directory(package), relative)
    except Exception as error:  # ImportError, PackageNotFoundError
        raise ValueError(f"urdf_path {path!r}: cannot find package {package!r} ({error})") from None


def load_robot(robot_description, urdf_path):
    """(model, urdf) where urdf is the XML text or the file path MuJoCo can read; a ValueError
    naming the parameter when neither is usable."""
    if robot_description.strip():
        source, name = robot_description, "robot_description"
    elif urdf_path:
        source, name = resolve_path(urdf_path), f"urdf_path {urdf_path!r}"
        if not os.path.isfile(source):
            raise ValueError(f"{name}: no such file {source!r}")
    else:
        raise ValueError("no robot: set the parameter robot_description (URDF XML) or urdf_path")
    try:
        return load_urdf(source), source
    except (ValueError, OSError) as error:   # URDFError is a ValueError
        raise ValueError(f"{name}: cannot build the robot model: {error}") from None


def joint_indices(model, joints, parameter="joints"):
    """Indices of `joints` (names) among the model's coordinates (model.actuated_joints), all of
    them when `joints` is empty; a ValueError names an unknown or repeated joint."""
    names = list(model.actuated_joints)
    if not joints:
        return np.arange(len(names))
    indices = []
    for joint in joints:
        if joint not in names:
            raise ValueError(f"{parameter}: unknown joint {joint!r}: robot {model.name!r} has the joints "
                             f"{', '.join(names)}")
        if names.index(joint) in indices:
            raise ValueError(f"{parameter}: joint {joint!r} is listed twice")
        indices.append(names.index(joint))
    return np.array(indices)


def coordinate_effort_limits(model):
    """Effort limits in the order of the model's coordinates (actuated joints)."""
    return np.array([model.effort_limit[model.joint_names.index(n)] for n in model.actuated_joints])


def per_joint(name, values, n, default=None):
    """A list of one number (the same for all) or n numbers as an (n,) array; [] gives `default`."""
    if len(values) == 0 and default is not None:
        return np.array(np.broadcast_to(default, (n,)), dtype=np.float64)
    if len(values) not in (1, n):
        raise ValueError(f"parameter {name}: expected one number or {n} (one per joint), got {len(values)}")
    return np.array(np.broadcast_to(np.asarray(values, dtype=np.float64), (n,)))


def parameter_files(argv):
    """The files of every `--params-file FILE` in a command line (what ros2 launch and bringup pass)."""
    return param_files.files_in(argv)


def check_forward_controller_joints(command_topic, joints, files, namespace=None):
    """ValueError when a parameter file of `files` configures the ros2_control controller that
    listens on `command_topic` (`<name>/commands`, resolved in `namespace`) with other joints, or
    another order, than `joints` (the command array's order). namespace None: the one this
    process's command line gives its node (`-r __ns:=NS`, as ros2 launch and bringup pass it)."""
    if namespace is None:
        namespace = param_files.namespace_in(sys.argv)
    topic = command_topic if command_topic.startswith("/") else param_files.node_name(namespace, command_topic)
    parts = topic.strip("/").split("/")
    if len(parts) < 2 or parts[-1] != "commands":
        return
    controller = "/" + "/".join(parts[:-1])    # the forward controller's node: the topic's namespace
    for path in files:
        try:
            entries = param_files.applying(param_files.load(path), controller)
        except param_files.ParameterFileError:
            continue
        theirs = param_files.merged(entries).get("joints")
        if theirs is not None and list(theirs) != list(joints):
            raise ValueError(f"parameter joints: {controller} in {path} commands the joints {list(theirs)}, but this "
                             f"controller sends efforts for {list(joints)} on {topic} (same joints, same "
                             "order needed)")
