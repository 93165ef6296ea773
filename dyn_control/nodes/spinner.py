"""Spinner: an rclpy executor spun on a thread of its own, stopped by leaving that thread before the
executor is shut down.

Why: rclpy's Executor.shutdown destroys the executor's guard condition at once, without waiting
for the callbacks it has handed out (Kilted: its wait is skipped once the shutdown flag is set).
A callback handed out just before, run after, triggers the destroyed guard condition, and the
spinning thread re-raises that InvalidHandle as a traceback on the way out of a clean stop
(seen on Ctrl-C with both cores busy)."""
import threading

SPIN_TIMEOUT = 0.05     # [s] longest wait for work, and so for stop() to see the thread leave


class Spinner:
    def __init__(self, executor, name):
        self.executor = executor
        self._spinning = True
        self._thread = threading.Thread(target=self._spin, name=name, daemon=True)
        self._thread.start()

    def _spin(self):
        while self._spinning:
            self.executor.spin_once(timeout_sec=SPIN_TIMEOUT)

    def stop(self, timeout_sec=1.0):
        """Leave the spinning thread (waiting at most `timeout_sec` for the callback it runs), then
        shut the executor down."""
        self._spinning = False
        self._thread.join(timeout_sec)
        self.executor.shutdown(timeout_sec=timeout_sec)
