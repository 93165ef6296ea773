"""Controller and simulator, as `dyn-control bringup` starts them, under ros2 launch.

    ros2 launch dyn_control bringup.launch.py [config:=/path/to/params.yaml] [namespace:=robot1] \
        [joint_states_topic:=joint_states]

Both nodes are lifecycle nodes started with their `autostart` parameter: each configures itself once
at start-up and activates once, the controller no earlier than 4 s after its process joined the graph
with Fast DDS (README, "Joint states late in transit"; the simulator holds the robot still until the
controller's first command, so the order does not matter). Launch drives no transition itself: a
later `ros2 lifecycle set /dyn_controller deactivate`, by hand or by a lifecycle manager, stays, and
no launch action waits on a node's lifecycle service, which a node that died would never answer.
config: a ROS 2 parameter file with `dyn_controller` and `dyn_simulator` entries; default: the
package's config/demo.yaml, keyed `/**/dyn_controller` and `/**/dyn_simulator` so that it applies in
any namespace (an `autostart` in it is overridden). namespace: of both nodes (their topics are
relative: robot1/joint_states, robot1/effort_controller/commands; several robots run side by side,
one namespace each); joint_states_topic: remaps joint_states for both (the command topic is the
`command_topic` parameter of both, in config).
"""
import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode

from dyn_control.robots import config_dir

# after the config: configure and activate once, from the node's own process (lifecycle.spin)
AUTOSTART = {"autostart": True}


def generate_launch_description():
    config = LaunchConfiguration("config")
    namespace = LaunchConfiguration("namespace")
    remappings = [("joint_states", LaunchConfiguration("joint_states_topic"))]
    return LaunchDescription([
        DeclareLaunchArgument("config", default_value=os.path.join(config_dir(), "demo.yaml"),
                              description="ROS 2 parameter file for dyn_controller and dyn_simulator"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of both nodes"),
        DeclareLaunchArgument("joint_states_topic", default_value="joint_states",
                              description="the joint-state topic of both nodes"),
        LifecycleNode(package="dyn_control", executable="controller", name="dyn_controller", namespace=namespace,
                      parameters=[config, AUTOSTART], remappings=remappings, output="screen"),
        LifecycleNode(package="dyn_control", executable="simulator", name="dyn_simulator", namespace=namespace,
                      parameters=[config, AUTOSTART], remappings=remappings, output="screen"),
    ])
