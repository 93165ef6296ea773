"""Suite-wide set-up: DDS stays on this machine for every ROS process a test starts."""
import os

import pytest

os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")


def pytest_configure(config):
    config.addinivalue_line("markers", "kernels: kernel tests, also run with NUMBA_DISABLE_JIT=1")
    config.addinivalue_line("markers", "ros: tests that start ROS 2 nodes (loopback DDS only)")


@pytest.fixture(scope="session")
def compiled_kernels():
    """Every loader's kernels in the kernel cache (shared with the node processes) before the first
    node starts: with an empty cache a node's configure would compile for a minute, inside the time a
    test gives its nodes. After the Makefile's `dyn-control compile` this only loads them."""
    from dyn_control.nodes.cli import compile_kernels
    compile_kernels()


@pytest.fixture(autouse=True)
def _kernels_compiled_for_ros_tests(request):
    if request.node.get_closest_marker("ros"):
        request.getfixturevalue("compiled_kernels")
