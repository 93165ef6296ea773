"""The controller alone, for real hardware or Gazebo (anything that publishes joint states and
takes efforts on the command topic, e.g. a ros2_control forward_command_controller/ForwardCommandController
with interface_name: effort).

    ros2 launch dyn_control controller.launch.py description_file:=/path/robot.urdf.xacro \
        [config:=/path/params.yaml] [use_sim_time:=true] [autostart:=true] [namespace:=robot1] \
        [joint_states_topic:=franka/joint_states] [command_topic:=forward_effort_controller/commands]

description_file: a URDF, or a xacro file (processed with the xacro module; xacro_args:="name:=value
..." are passed to it); its XML becomes the robot_description parameter. config: a ROS 2 parameter
file with a dyn_controller entry (default: the package's config/controller.yaml). autostart: the
node's `autostart` parameter (it overrides the config's): the node configures itself once at start-up
and activates once, no earlier than 4 s after its process joined the graph with Fast DDS (README,
"Joint states late in transit"). Launch drives no transition itself: a later deactivate, by hand or
by a lifecycle manager, stays, and no launch action waits on the node's lifecycle service, which a
node that died would never answer. false leaves the node unconfigured for a lifecycle manager or
`ros2 lifecycle set /dyn_controller configure`. namespace: the node's namespace (the config's
`/**/dyn_controller` entry applies there, and relative topics resolve in it). joint_states_topic and
command_topic (when not empty) override the config's.
"""
import os
import shlex

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode

from dyn_control.robots import config_dir


def robot_description(path, xacro_args=""):
    """The URDF XML of a .urdf file, or of a .xacro file processed with `xacro_args`."""
    if path.endswith(".xacro"):
        import xacro
        mappings = dict(arg.split(":=", 1) for arg in shlex.split(xacro_args))
        return xacro.process_file(path, mappings=mappings).toxml()
    with open(path) as f:
        return f.read()


def controller_actions(context):
    description = robot_description(LaunchConfiguration("description_file").perform(context),
                                    LaunchConfiguration("xacro_args").perform(context))
    overrides = {"robot_description": description,
                 "use_sim_time": LaunchConfiguration("use_sim_time").perform(context).lower() == "true",
                 "autostart": LaunchConfiguration("autostart").perform(context).lower() == "true"}
    for name in ("command_topic", "joint_states_topic"):
        topic = LaunchConfiguration(name).perform(context)
        if topic:
            overrides[name] = topic
    return [LifecycleNode(package="dyn_control", executable="controller", name="dyn_controller",
                          namespace=LaunchConfiguration("namespace"), output="screen",
                          parameters=[LaunchConfiguration("config"), overrides])]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("description_file", default_value=os.path.join(config_dir(), "urdf", "arm7.urdf"),
                              description="robot URDF or xacro file"),
        DeclareLaunchArgument("xacro_args", default_value="", description="xacro arguments, name:=value ..."),
        DeclareLaunchArgument("config", default_value=os.path.join(config_dir(), "controller.yaml"),
                              description="ROS 2 parameter file with a dyn_controller entry"),
        DeclareLaunchArgument("use_sim_time", default_value="false", description="use /clock (Gazebo)"),
        DeclareLaunchArgument("autostart", default_value="true", description="configure and activate once at "
                              "start-up (false: leave the node to a lifecycle manager)"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the node"),
        DeclareLaunchArgument("joint_states_topic", default_value="",
                              description="where the joint states come from (empty: the config's joint_states_topic)"),
        DeclareLaunchArgument("command_topic", default_value="",
                              description="where the efforts go (empty: the config's command_topic)"),
        OpaqueFunction(function=controller_actions),
    ])
