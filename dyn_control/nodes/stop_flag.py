"""StopFlag: what a SIGINT or SIGTERM handler raises and a main thread polls (the node processes'
`spin` and the bringup). Its own module: the bringup imports it without the node machinery (rclpy's
lifecycle, Numba), which would delay starting the node processes."""
import time


class StopFlag:
    """Raised by a signal handler, polled by the main thread. A plain attribute and no lock: a
    handler that takes a lock the interrupted main thread holds (threading.Event.set while the main
    thread is in Event.wait) deadlocks."""

    def __init__(self):
        self.raised = False

    def raise_(self, *_):
        self.raised = True

    def is_set(self):
        return self.raised

    def wait(self, timeout):
        """Sleep until raised or `timeout` seconds have passed; returns whether it is raised."""
        end = time.monotonic() + timeout
        while not self.raised and (remaining := end - time.monotonic()) > 0.0:
            time.sleep(min(0.02, remaining))
        return self.raised
