"""Suite-wide set-up: DDS stays on this machine for every ROS process a test starts."""
import os

os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")


def pytest_configure(config):
    config.addinivalue_line("markers", "kernels: kernel tests, also run with NUMBA_DISABLE_JIT=1")
    config.addinivalue_line("markers", "ros: tests that start ROS 2 nodes (loopback DDS only)")
