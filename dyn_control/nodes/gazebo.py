"""A URDF made ready for Gazebo (gz sim) with gz_ros2_control, used by launch/gazebo.launch.py.

Adds a <ros2_control> system with gz_ros2_control's GazeboSimSystem hardware: every controlled joint
gets an `effort` command interface and position / velocity / effort state interfaces (so
joint_state_broadcaster publishes /joint_states with all three), and the gz_ros2_control plugin
that starts a controller_manager with the parameters of `controllers_yaml`. An existing
<ros2_control> element or gz_ros2_control plugin of the URDF is replaced.
"""
import xml.etree.ElementTree as ET

GZ_SYSTEM = "gz_ros2_control/GazeboSimSystem"
GZ_PLUGIN_FILE = "gz_ros2_control-system"
GZ_PLUGIN_NAME = "gz_ros2_control::GazeboSimROS2ControlPlugin"


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
