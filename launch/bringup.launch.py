"""Controller and simulator, as `dyn-control bringup` starts them, under ros2 launch.

    ros2 launch dyn_control bringup.launch.py [config:=/path/to/params.yaml]

Both nodes are lifecycle nodes: this file configures them at start-up and activates each one once it
is inactive (the simulator holds the robot still until the controller's first command, so the order
does not matter). config: a ROS 2 parameter file with `dyn_controller` and `dyn_simulator` entries;
default: the package's config/demo.yaml.
"""
import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, RegisterEventHandler
from launch.events import matches_action
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode
from launch_ros.event_handlers import OnStateTransition
from launch_ros.events.lifecycle import ChangeState
from lifecycle_msgs.msg import Transition

from dyn_control.robots import config_dir


def lifecycle_autostart(node):
    """Configure `node` now and activate it once it reaches inactive."""
    return [
        RegisterEventHandler(OnStateTransition(
            target_lifecycle_node=node, goal_state="inactive",
            entities=[EmitEvent(event=ChangeState(lifecycle_node_matcher=matches_action(node),
                                                  transition_id=Transition.TRANSITION_ACTIVATE))])),
        EmitEvent(event=ChangeState(lifecycle_node_matcher=matches_action(node),
                                    transition_id=Transition.TRANSITION_CONFIGURE)),
    ]


def generate_launch_description():
    config = LaunchConfiguration("config")
    controller = LifecycleNode(package="dyn_control", executable="controller", name="dyn_controller",
                               namespace="", parameters=[config], output="screen")
    simulator = LifecycleNode(package="dyn_control", executable="simulator", name="dyn_simulator",
                              namespace="", parameters=[config], output="screen")
    return LaunchDescription([
        DeclareLaunchArgument("config", default_value=os.path.join(config_dir(), "demo.yaml"),
                              description="ROS 2 parameter file for dyn_controller and dyn_simulator"),
        controller,
        simulator,
        *lifecycle_autostart(controller),
        *lifecycle_autostart(simulator),
    ])
