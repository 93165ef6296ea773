"""Spinner: an rclpy executor spun on a thread of its own until stop(), which lets that thread leave
before it shuts the executor down.

Why: rclpy's Executor.shutdown destroys the executor's guard condition at once, without waiting
for the callbacks it has handed out (Kilted: its wait is skipped once the shutdown flag is set).
A callback handed out just before, run after, triggers the destroyed guard condition, and the
spinning thread re-raises that InvalidHandle as a traceback on the way out of a clean stop
(seen on Ctrl-C with both cores busy). The thread spins until a future completes (rclpy's
spin_until_future_complete: the executor waits without a timeout, as spin() does; a loop of
spin_once with a timeout rebuilt its wait set so often that the controller's 1 kHz loop on tiago
missed 2-4 times as many deadlines)."""
import threading

from rclpy.task import Future


class Spinner:
    def __init__(self, executor, name):
        self.executor = executor
        self._stopped = Future()
        self._thread = threading.Thread(target=executor.spin_until_future_complete, args=(self._stopped,),
                                        name=name, daemon=True)
        self._thread.start()

    def stop(self, timeout_sec=1.0):
        """Leave the spinning thread (waiting at most `timeout_sec` for the callback it runs), then
        shut the executor down."""
        self._stopped.set_result(None)
        self._thread.join(timeout_sec)
        self.executor.shutdown(timeout_sec=timeout_sec)
