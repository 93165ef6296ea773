"""What the controller and the simulator nodes share: a lifecycle node with declared parameters, a
loop thread (timing.RealtimeLoop) and 1 Hz diagnostics, and the `main` of a console script."""
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, KeyValue
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn

from . import params, qos


class LoopNode(LifecycleNode):
    """A lifecycle node whose work runs on `self.loop` while active. Subclasses provide
    `_on_set_parameters`, `_publish_diagnostics` and `_destroy_entities`, and the configure,
    activate and deactivate transitions."""

    def __init__(self, node_name, parameters, parameter_prefix, **kwargs):
        super().__init__(node_name, **kwargs)
        params.declare(self, parameters)
        params.declare_group(self, parameter_prefix)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.state = "unconfigured"
        self.loop = None
        self._configured = None              # objects of a configured node (see _build)
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", qos.STATE)
        self._diagnostics_timer = self.create_timer(1.0, self._publish_diagnostics)

    def on_cleanup(self, state):
        self._destroy_entities()
        self.state = "unconfigured"
        return super().on_cleanup(state)

    def on_shutdown(self, state):
        self._stop_loop()
        self._destroy_entities()
        self.state = "finalized"
        return super().on_shutdown(state)

    def on_error(self, state):
        self._stop_loop()
        self._destroy_entities()
        self.state = "unconfigured"
        return TransitionCallbackReturn.SUCCESS

    def _send_diagnostics(self, status, level, message, values):
        """Publish `status` (a DiagnosticStatus) with its level, message and key/value pairs."""
        status.level, status.message = level, message
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics.publish(array)

    def _stop_loop(self):
        if self.loop is not None and self.loop.running:
            self.loop.stop()


def spin(node_class, args=None):
    """`ros2 run dyn_control <node>`: spin one node, configured and activated at once when its
    `autostart` parameter is true."""
    rclpy.init(args=args)
    node = node_class()
    executor = MultiThreadedExecutor()
    executor.add_node(node)
    try:
        if node.get_parameter("autostart").value:
            node.trigger_configure()
            if node.state == "inactive":
                node.trigger_activate()
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node._stop_loop()
        node.destroy_node()
        rclpy.try_shutdown()
