"""A URDF made ready for Gazebo (gz sim) with gz_ros2_control, used by launch/gazebo.launch.py.

Adds a <ros2_control> system with gz_ros2_control's GazeboSimSystem hardware: every controlled joint
gets an `effort` command interface and position / velocity / effort state interfaces (so
joint_state_broadcaster publishes /joint_states with all three), and the gz_ros2_control plugin
that starts a controller_manager with the parameters of `controllers_yaml`. An existing
<ros2_control> element or gz_ros2_control plugin of the URDF is replaced.

require_packages: the ROS packages the launch file starts, all checked before anything starts.
"""
import os
import xml.etree.ElementTree as ET

GZ_SYSTEM = "gz_ros2_control/GazeboSimSystem"
GZ_PLUGIN_FILE = "gz_ros2_control-system"
GZ_PLUGIN_NAME = "gz_ros2_control::GazeboSimROS2ControlPlugin"
# what gazebo.launch.py starts: gz sim and its spawner, the /clock bridge, the ros2_control plugin,
# robot_state_publisher, the controller_manager's spawner and the two controllers it spawns
GAZEBO_PACKAGES = ("ros_gz_sim", "ros_gz_bridge", "gz_ros2_control", "robot_state_publisher", "controller_manager",
                   "joint_state_broadcaster", "forward_command_controller")


def require_packages(packages, what):
    """A RuntimeError naming every package of `packages` (ROS package names) that the ament index
    (AMENT_PREFIX_PATH) does not know, with the apt line that installs them all."""
    from ament_index_python.packages import get_packages_with_prefixes
    try:
        installed = get_packages_with_prefixes()
        unset = ""
    except OSError:         # AMENT_PREFIX_PATH unset: no ROS 2 environment sourced
        installed, unset = {}, " (AMENT_PREFIX_PATH is not set: source your ROS 2 setup.bash first)"
    missing = [name for name in packages if name not in installed]
    if missing:
        distro = os.environ.get("ROS_DISTRO") or "$ROS_DISTRO"
        apt = " ".join(f"ros-{distro}-{name.replace('_', '-')}" for name in missing)
        raise RuntimeError(f"{what} needs ROS packages that are not installed: {', '.join(missing)}{unset}; "
                           f"install them with: sudo apt install {apt}")


def with_gz_ros2_control(urdf_xml, joints, controllers_yaml, initial_positions=None):
    """urdf_xml (text) with the ros2_control system and Gazebo plugin for `joints` (names);
    initial_positions (optional, one per joint) become the position state's initial_value."""
    root = ET.fromstring(urdf_xml)
    known = {j.get("name") for j in root.iter("joint") if j.get("type") != "fixed"}
    for joint in joints:
        if joint not in known:
            raise ValueError(f"joints: {joint!r} is not a movable joint of the URDF")
    if initial_positions is not None and len(initial_positions) != len(joints):
        raise ValueError(f"initial_positions: {len(initial_positions)} values for {len(joints)} joints")
    for element in root.findall("ros2_control"):
        root.remove(element)
    for gazebo in root.findall("gazebo"):
        for plugin in gazebo.findall("plugin"):
            if plugin.get("filename") == GZ_PLUGIN_FILE:
                gazebo.remove(plugin)
        if len(gazebo) == 0:
            root.remove(gazebo)
    system = ET.SubElement(root, "ros2_control", name="GazeboSimSystem", type="system")
    ET.SubElement(ET.SubElement(system, "hardware"), "plugin").text = GZ_SYSTEM
    for k, name in enumerate(joints):
        joint = ET.SubElement(system, "joint", name=name)
        ET.SubElement(joint, "command_interface", name="effort")
        position = ET.SubElement(joint, "state_interface", name="position")
        if initial_positions is not None:
            ET.SubElement(position, "param", name="initial_value").text = repr(float(initial_positions[k]))
        ET.SubElement(joint, "state_interface", name="velocity")
        ET.SubElement(joint, "state_interface", name="effort")
    plugin = ET.SubElement(ET.SubElement(root, "gazebo"), "plugin", filename=GZ_PLUGIN_FILE, name=GZ_PLUGIN_NAME)
    ET.SubElement(plugin, "parameters").text = controllers_yaml
    return ET.tostring(root, encoding="unicode")
