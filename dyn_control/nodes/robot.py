"""The robot model of a node, from its robot_description / urdf_path parameters."""
import os
import sys

import numpy as np

from ..robots import config_dir
from .params import Param
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


def joint_term_parameters(prefix, whose):
    """The Param declarations of a node's joint terms under `prefix` (model. or robot.)."""
    return (
        Param(prefix + "armature", [], "numbers", "configure",
              f"{whose} reflected rotor inertia per joint [kg m^2] (one number or one per joint; empty: 0)"),
        Param(prefix + "viscous_friction", [], "numbers", "configure",
              f"{whose} viscous friction F_v per joint [N m s/rad] (empty: the URDF's <dynamics damping>)"),
        Param(prefix + "coulomb_friction", [], "numbers", "configure",
              f"{whose} Coulomb friction F_c per joint [N m] (empty: the URDF's <dynamics friction>)"),
    )


def with_joint_terms(model, values, prefix):
    """The model with the joint terms of parameters `prefix`armature, viscous_friction and
    coulomb_friction (one number or one per joint of model.joint_names); empty: armature 0 and the
    URDF's <dynamics damping friction>. A ValueError names the parameter."""
    terms = {}
    for key, argument, default in (("armature", "armature", 0.0), ("viscous_friction", "viscous", model.damping),
                                   ("coulomb_friction", "coulomb", model.friction)):
        value = values[prefix + key]
        if len(value) not in (0, 1, model.nbodies):
            raise ValueError(f"parameter {prefix + key}: one number or one per joint "
                             f"({', '.join(model.joint_names)}), got {len(value)}")
        terms[argument] = default if not value else value[0] if len(value) == 1 else value
    try:
        return model.with_joint_dynamics(**terms)
    except ValueError as error:
        raise ValueError(f"parameters {prefix}*: {error}") from None


def payload_parameters(prefix, whose):
    """The Param declarations of a payload under `prefix` (payload. or model.payload.)."""
    return (
        Param(prefix + "link", "", "string", "configure",
              f"link (or joint) carrying a payload the URDF lacks, on {whose} model (empty: none)"),
        Param(prefix + "mass", 0.0, "number", "configure", "payload mass [kg]", 0.0, 1000.0),
        Param(prefix + "center_of_mass", [], "numbers", "configure",
              "payload centre of mass in the link's frame [m], 3 numbers (empty: the link's origin)"),
        Param(prefix + "inertia", [], "numbers", "configure",
              "payload inertia about its centre of mass in the link's axes [kg m^2]: ixx, iyy, izz, ixy, ixz, "
              "iyz (empty: a point mass)"),
    )


def with_payload(model, values, prefix):
    """The model with the payload of parameters `prefix`link, mass, center_of_mass and inertia
    (Model.with_payload); unchanged when `prefix`link is empty. A ValueError names the parameters."""
    if not values[prefix + "link"]:
        return model
    com, inertia = values[prefix + "center_of_mass"] or [0.0, 0.0, 0.0], values[prefix + "inertia"]
    if len(com) != 3 or len(inertia) not in (0, 6):
        raise ValueError(f"parameters {prefix}*: center_of_mass needs 3 numbers and inertia none or 6 "
                         f"(ixx, iyy, izz, ixy, ixz, iyz), got {len(com)} and {len(inertia)}")
    ixx, iyy, izz, ixy, ixz, iyz = inertia or [0.0] * 6
    try:
        return model.with_payload(values[prefix + "link"], values[prefix + "mass"], com,
                                  [[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    except ValueError as error:
        raise ValueError(f"parameters {prefix}*: {error}") from None
