"""The dyn-control command as a user runs it (console script, own process): `dyn-control demo`
runs the bundled closed loop, prints its status and writes the plot; bad invocations fail cleanly."""
import os
import subprocess
import sys

import pytest
import ros_harness  # noqa: F401  (this process's ROS domain, inherited by the subprocesses)

pytestmark = pytest.mark.ros

SCRIPT = os.path.join(os.path.dirname(sys.executable), "dyn-control")


def run(*args, timeout=120):
    return subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=timeout)


def test_demo_writes_the_plot(tmp_path):
    result = run("demo", "--duration", "4", "--output", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tracking rms" in result.stdout and "force est" in result.stdout
    png = tmp_path / "out" / "demo.png"
    assert f"plot: {png}" in result.stdout
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image
    height, width, _ = matplotlib.image.imread(png).shape
    assert width > 500 and height > 500


@pytest.mark.parametrize("hidden, args, extra", [
    ("rosbags", ["demo", "--record"], "identification"),
    ("cvxpy", ["demo", "--mismatch", "--identify"], "identification"),
    ("rosbags", ["record", "bag_out", "--duration", "1"], "identification"),
    ("mujoco", ["demo", "--backend", "mujoco"], "mujoco"),
])
def test_a_missing_optional_dependency_is_one_line_naming_the_extra(hidden, args, extra):
    """The README's quick-start commands that need an extra, with that extra's module absent (hidden
    from the import system): exit 2 and one line naming the module and the extra, before any node
    starts (no traceback from anywhere)."""
    code = (f"import sys; sys.modules[{hidden!r}] = None; from dyn_control.nodes.cli import main; "
            f"sys.exit(main({args!r}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and hidden in lines[0] and f"'{extra}' extra" in lines[0], result.stderr
    assert result.stdout == ""


def test_record_into_an_existing_folder_fails_naming_it(tmp_path):
    result = run("record", str(tmp_path), "--duration", "0.1")
    assert result.returncode == 1
    assert result.stderr.strip() == f"record: bag output '{tmp_path}' exists already (a bag is a new folder)"


def test_record_writes_a_bag_that_rosbags_reads(tmp_path):
    from rosbags.rosbag2 import Reader
    result = run("record", str(tmp_path / "bag"), "--duration", "0.5")
    assert result.returncode == 0, result.stdout + result.stderr
    with Reader(tmp_path / "bag") as reader:
        assert {c.topic for c in reader.connections} <= {"/joint_states", "/effort_controller/commands",
                                                          "/dyn_controller/desired"}


def test_bringup_of_a_missing_file_fails():
    result = run("bringup", "/nonexistent/params.yaml")
    assert result.returncode == 2 and "no such file" in result.stderr


def test_bringup_of_a_file_without_our_nodes_fails(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("controller_manager:\n  ros__parameters:\n    update_rate: 1000\n")
    result = run("bringup", str(path))
    assert result.returncode == 2 and "no dyn_control node" in result.stderr


def test_bringup_reports_a_failing_configure(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("dyn_controller:\n  ros__parameters:\n    urdf_path: /nonexistent/robot.urdf\n")
    result = run("bringup", str(path), "--duration", "1")
    assert result.returncode == 1
    assert "/nonexistent/robot.urdf" in result.stderr and "failed to configure" in result.stderr
