"""Controller and simulator, as `dyn-control bringup` starts them, under ros2 launch.

    ros2 launch dyn_control bringup.launch.py [config:=/path/to/params.yaml] [namespace:=robot1] \
        [joint_states_topic:=joint_states]

Both nodes are lifecycle nodes: this file configures them at start-up and activates each one once it
is inactive, the controller with Fast DDS 4 s later (cli.discovery_settle: README, "Joint states
late in transit"; the simulator holds the robot still until the controller's first command, so the
order does not matter). config: a ROS 2 parameter file with `dyn_controller` and `dyn_simulator` entries;
default: the package's config/demo.yaml, keyed `/**/dyn_controller` and `/**/dyn_simulator` so that
it applies in any namespace. namespace: of both nodes (their topics are relative: robot1/joint_states,
robot1/effort_controller/commands; several robots run side by side, one namespace each);
joint_states_topic: remaps joint_states for both (the command topic is the `command_topic`
parameter of both, in config).
"""
import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, RegisterEventHandler, TimerAction
from launch.events import matches_action
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode
from launch_ros.event_handlers import OnStateTransition
from launch_ros.events.lifecycle import ChangeState
from lifecycle_msgs.msg import Transition

from dyn_control.nodes.cli import discovery_settle
from dyn_control.robots import config_dir


def lifecycle_autostart(node, delay=0.0):
    """Configure `node` now and activate it `delay` seconds after it reaches inactive."""
    activate = EmitEvent(event=ChangeState(lifecycle_node_matcher=matches_action(node),
                                           transition_id=Transition.TRANSITION_ACTIVATE))
    return [
        RegisterEventHandler(OnStateTransition(
            target_lifecycle_node=node, goal_state="inactive",
            entities=[TimerAction(period=delay, actions=[activate])])),
        EmitEvent(event=ChangeState(lifecycle_node_matcher=matches_action(node),
                                    transition_id=Transition.TRANSITION_CONFIGURE)),
    ]


def generate_launch_description():
    config = LaunchConfiguration("config")
    namespace = LaunchConfiguration("namespace")
    remappings = [("joint_states", LaunchConfiguration("joint_states_topic"))]
    controller = LifecycleNode(package="dyn_control", executable="controller", name="dyn_controller",
                               namespace=namespace, parameters=[config], remappings=remappings, output="screen")
    simulator = LifecycleNode(package="dyn_control", executable="simulator", name="dyn_simulator",
                              namespace=namespace, parameters=[config], remappings=remappings, output="screen")
    return LaunchDescription([
        DeclareLaunchArgument("config", default_value=os.path.join(config_dir(), "demo.yaml"),
                              description="ROS 2 parameter file for dyn_controller and dyn_simulator"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of both nodes"),
        DeclareLaunchArgument("joint_states_topic", default_value="joint_states",
                              description="the joint-state topic of both nodes"),
        controller,
        simulator,
        *lifecycle_autostart(controller, delay=discovery_settle()),
        *lifecycle_autostart(simulator),
    ])
