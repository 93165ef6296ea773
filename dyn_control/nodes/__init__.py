"""ROS 2 layer: the dyn_controller and dyn_simulator lifecycle nodes, their real-time loop, and the
dyn-control command (bringup, demo). The only part of dyn_control that imports rclpy."""
