"""The controller against a robot simulated by Gazebo (gz sim) through gz_ros2_control.

    ros2 launch dyn_control gazebo.launch.py [description_file:=...] [config:=...] \
        [initial_positions:="0 -0.785 0 -2.356 0 1.571 0.785"] [world:=empty.sdf]

Needs (not installable on a plain Python machine, hence untested here): ros_gz_sim, ros_gz_bridge,
gz_ros2_control, controller_manager, joint_state_broadcaster, forward_command_controller,
robot_state_publisher. They are all checked before anything starts; the error names every missing
one with the apt line that installs them (dyn_control.nodes.gazebo.require_packages).

What it starts:
1. gz sim with `world`, and a /clock bridge;
2. robot_state_publisher with the URDF plus a <ros2_control> GazeboSimSystem (effort command,
   position/velocity/effort state interfaces for the controlled joints) and the gz_ros2_control
   plugin, whose controller_manager reads `config` (dyn_control.nodes.gazebo.with_gz_ros2_control);
3. the robot spawned from /robot_description, then the spawners of joint_state_broadcaster and
   effort_controller (forward_command_controller/ForwardCommandController, interface effort, on
   effort_controller/commands);
4. dyn_controller (controller.launch.py) with use_sim_time, configured and activated.
`config` holds all of it: controller_manager, effort_controller and dyn_controller entries (see
config/controller.yaml); the controlled joints are dyn_controller's `joints` (default: all movable).
"""
import os

from launch import LaunchDescription
from launch.actions import (DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction,
                            RegisterEventHandler)
from launch.event_handlers import OnProcessExit
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from dyn_control.nodes import param_files
from dyn_control.nodes.gazebo import GAZEBO_PACKAGES, require_packages, with_gz_ros2_control
from dyn_control.robots import config_dir
from dyn_control.urdf import load_urdf

ARM7_READY = "0 -0.785 0 -2.356 0 1.571 0.785"


def gazebo_actions(context):
    require_packages(GAZEBO_PACKAGES, "gazebo.launch.py")
    from ament_index_python.packages import get_package_share_directory

    description_file = LaunchConfiguration("description_file").perform(context)
    config = LaunchConfiguration("config").perform(context)
    with open(description_file) as f:
        urdf = f.read()
    entries = param_files.applying(param_files.load(config), "/dyn_controller")
    joints = param_files.merged(entries).get("joints") or list(load_urdf(urdf).actuated_joints)
    initial = LaunchConfiguration("initial_positions").perform(context).split()
    description = with_gz_ros2_control(urdf, joints, config, [float(x) for x in initial] or None)
    here = os.path.dirname(os.path.abspath(__file__))
    spawn = Node(package="ros_gz_sim", executable="create", output="screen",
                 arguments=["-topic", "robot_description", "-name", "dyn_control_robot"])
    broadcaster = Node(package="controller_manager", executable="spawner", arguments=["joint_state_broadcaster"])
    effort = Node(package="controller_manager", executable="spawner", arguments=["effort_controller"])
    return [
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(os.path.join(get_package_share_directory("ros_gz_sim"), "launch",
                                                       "gz_sim.launch.py")),
            launch_arguments={"gz_args": ["-r -v 1 ", LaunchConfiguration("world")]}.items()),
        Node(package="ros_gz_bridge", executable="parameter_bridge", output="screen",
             arguments=["/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock"]),
        Node(package="robot_state_publisher", executable="robot_state_publisher", output="screen",
             parameters=[{"robot_description": description, "use_sim_time": True}]),
        spawn,
        RegisterEventHandler(OnProcessExit(target_action=spawn, on_exit=[broadcaster])),
        RegisterEventHandler(OnProcessExit(target_action=broadcaster, on_exit=[effort])),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(os.path.join(here, "controller.launch.py")),
            launch_arguments={"description_file": description_file, "config": config,
                              "use_sim_time": "true"}.items()),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("description_file", default_value=os.path.join(config_dir(), "urdf", "arm7.urdf"),
                              description="robot URDF (plain URDF; run xacro beforehand)"),
        DeclareLaunchArgument("config", default_value=os.path.join(config_dir(), "controller.yaml"),
                              description="parameters of controller_manager, effort_controller and dyn_controller"),
        DeclareLaunchArgument("initial_positions", default_value=ARM7_READY,
                              description="initial joint positions, space separated ('' for zeros)"),
        DeclareLaunchArgument("world", default_value="empty.sdf", description="gz sim world"),
        OpaqueFunction(function=gazebo_actions),
    ])
