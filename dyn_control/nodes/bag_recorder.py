"""Records topics of the running graph into an MCAP bag (`dyn-control record`, and the demo's
recording): polled raw subscriptions (qos.PolledSubscription, recording profile) whose serialized
messages, CDR as a bag stores them, go straight into rosbags' writer (identification/bag.py), each
at its receive time, as `ros2 bag record` stamps them.
"""
import importlib
import sys
import time

from ..identification.bag import BagWriter
from . import qos

# the topics of an identification run and their types
DEFAULT_TOPICS = {
    "/joint_states": "sensor_msgs/msg/JointState",
    "/effort_controller/commands": "std_msgs/msg/Float64MultiArray",
    "/dyn_controller/desired": "sensor_msgs/msg/JointState",
}
DISCOVERY_TIMEOUT = 10.0   # [s] to find the type of a topic not in DEFAULT_TOPICS in the graph
POLL_PERIOD = 0.005        # [s] between drains of the subscriptions
STATUS_PERIOD = 0.25       # [s] between updates of the progress line
DEPTH = 1000               # messages each subscription keeps between drains


def message_class(msgtype):
    """The rclpy message class of `pkg/msg/Name`."""
    package, _, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{package}.msg"), name)


class BagRecorder:
    """Writes every message of `topics` ({topic: type, or None to look it up in the graph}) that
    arrives between start(node) and stop() into a new MCAP bag at `path`; poll() drains the
    subscriptions (call it every few ms). Also usable as a bringup monitor (start, status, stop)."""

    def __init__(self, path, topics=None):
        self.path = path
        self.topics = dict(DEFAULT_TOPICS if topics is None else topics)
        self._bag = None
        self._subscriptions = []
        self.count = 0   # messages written

    def start(self, node):
        types = self._types(node)
        self._bag = BagWriter(self.path)
        for topic, msgtype in types.items():
            subscription = qos.PolledSubscription(node, message_class(msgtype), topic, qos.recording(DEPTH))
            self._subscriptions.append((topic, msgtype, subscription))

    def _types(self, node):
        """{topic: type}, the missing types from the graph (ValueError naming topics never found)."""
        types = dict(self.topics)
        deadline = time.monotonic() + DISCOVERY_TIMEOUT
        while any(t is None for t in types.values()):
            graph = dict(node.get_topic_names_and_types())
            for topic in [t for t, msgtype in types.items() if msgtype is None and t in graph]:
                types[topic] = graph[topic][0]
            if time.monotonic() > deadline:
                missing = [t for t, msgtype in types.items() if msgtype is None]
                raise ValueError(f"record: no publisher of {', '.join(missing)} found in {DISCOVERY_TIMEOUT:g} s "
                                 "(check the topic names, or start the nodes first)")
            time.sleep(0.1)
        return types

    def poll(self):
        """Write every queued message; returns how many."""
        count = 0
        for topic, msgtype, subscription in self._subscriptions:
            while (taken := subscription.take_raw()) is not None:
                data, info = taken
                self._bag.write(topic, msgtype, info.get("received_timestamp") or time.time_ns(), data)
                count += 1
        self.count += count
        return count

    def status(self, phase, elapsed):
        self.poll()

    def stop(self):
        """Drain, close the bag (complete from then on) and drop the subscriptions."""
        if self._bag is None:
            return
        self.poll()
        self._bag.close()
        self._bag = None
        self._subscriptions.clear()


def record(path, duration=None, topics=None):
    """`dyn-control record`: record `topics` (default DEFAULT_TOPICS; a list of names: types from the
    graph, or `topic:pkg/msg/Type`) into an MCAP bag at path for `duration` s (None: until Ctrl-C),
    with a progress line. Returns an exit code."""
    import rclpy
    from rclpy.signals import SignalHandlerOptions
    if topics:
        topics = dict((t.split(":", 1) + [None])[:2] for t in topics)
    recorder = BagRecorder(path, topics)
    context = rclpy.Context()
    rclpy.init(args=[], context=context, signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("dyn_control_recorder", context=context)
    start = time.monotonic()
    try:
        recorder.start(node)
        print(f"recording {', '.join(recorder.topics)} into {path}")
        shown = start
        while duration is None or time.monotonic() - start < duration:
            recorder.poll()
            if time.monotonic() - shown > STATUS_PERIOD:
                shown = time.monotonic()
                print(f"\r{shown - start:7.1f} s  {recorder.count} messages", end="", flush=True)
            time.sleep(POLL_PERIOD)
    except KeyboardInterrupt:
        pass
    except ValueError as error:
        print(f"record: {error}", file=sys.stderr)
        return 1
    finally:
        recorder.stop()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    print(f"\nwrote {recorder.count} messages to {recorder.path}")
    return 0
