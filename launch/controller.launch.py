"""The controller alone, for real hardware or Gazebo (anything that publishes joint states and
takes efforts on the command topic, e.g. a ros2_control forward_command_controller/ForwardCommandController
with interface_name: effort).

    ros2 launch dyn_control controller.launch.py description_file:=/path/robot.urdf.xacro \
        [config:=/path/params.yaml] [use_sim_time:=true] [autostart:=true] [namespace:=robot1] \
        [joint_states_topic:=franka/joint_states] [command_topic:=forward_effort_controller/commands]

description_file: a URDF, or a xacro file (processed with the xacro module; xacro_args:="name:=value
..." are passed to it); its XML becomes the robot_description parameter. config: a ROS 2 parameter
file with a dyn_controller entry (default: the package's config/controller.yaml). autostart: drive
the lifecycle to active (configure, then activate, with Fast DDS 4 s later: README, "Joint states
late in transit"); false leaves the node unconfigured for a
lifecycle manager or `ros2 lifecycle set /dyn_controller configure`. namespace: the node's namespace
(the config's `/**/dyn_controller` entry applies there, and relative topics resolve in it).
joint_states_topic and command_topic (when not empty) override the config's.
"""
import os
import shlex

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, OpaqueFunction, RegisterEventHandler, TimerAction
from launch.conditions import IfCondition
from launch.events import matches_action
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode
from launch_ros.event_handlers import OnStateTransition
from launch_ros.events.lifecycle import ChangeState
from lifecycle_msgs.msg import Transition

from dyn_control.nodes.cli import discovery_settle
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
    use_sim_time = LaunchConfiguration("use_sim_time").perform(context).lower() == "true"
    autostart = IfCondition(LaunchConfiguration("autostart"))
    overrides = {"robot_description": description, "use_sim_time": use_sim_time}
    for name in ("command_topic", "joint_states_topic"):
        topic = LaunchConfiguration(name).perform(context)
        if topic:
            overrides[name] = topic
    controller = LifecycleNode(
        package="dyn_control", executable="controller", name="dyn_controller",
        namespace=LaunchConfiguration("namespace"), output="screen",
        parameters=[LaunchConfiguration("config"), overrides])
    activate = EmitEvent(event=ChangeState(lifecycle_node_matcher=matches_action(controller),
                                           transition_id=Transition.TRANSITION_ACTIVATE))
    return [
        controller,
        RegisterEventHandler(OnStateTransition(target_lifecycle_node=controller, goal_state="inactive",
                                               entities=[TimerAction(period=discovery_settle(), actions=[activate])]),
                             condition=autostart),
        EmitEvent(event=ChangeState(lifecycle_node_matcher=matches_action(controller),
                                    transition_id=Transition.TRANSITION_CONFIGURE), condition=autostart),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("description_file", default_value=os.path.join(config_dir(), "urdf", "arm7.urdf"),
                              description="robot URDF or xacro file"),
        DeclareLaunchArgument("xacro_args", default_value="", description="xacro arguments, name:=value ..."),
        DeclareLaunchArgument("config", default_value=os.path.join(config_dir(), "controller.yaml"),
                              description="ROS 2 parameter file with a dyn_controller entry"),
        DeclareLaunchArgument("use_sim_time", default_value="false", description="use /clock (Gazebo)"),
        DeclareLaunchArgument("autostart", default_value="true", description="configure and activate at start"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the node"),
        DeclareLaunchArgument("joint_states_topic", default_value="",
                              description="where the joint states come from (empty: the config's joint_states_topic)"),
        DeclareLaunchArgument("command_topic", default_value="",
                              description="where the efforts go (empty: the config's command_topic)"),
        OpaqueFunction(function=controller_actions),
    ])
