"""Every command of README.md's quick start runs as written after `make demo` (the suite's set-up
installs the same), each in a process of its own, the demo's runs shortened to a few seconds and
their output in a temporary folder: exit 0, and what each promises is there (the plot, the bag)."""
import os
import re
import shlex
import subprocess
import sys

import pytest
import ros_harness  # noqa: F401  (this process's ROS domain, inherited by the subprocesses)

pytestmark = pytest.mark.ros

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
SCRIPT = os.path.join(os.path.dirname(sys.executable), "dyn-control")
DURATION = "3"      # [s] of each demo run


def quick_start():
    """The dyn-control commands of README.md's "Quick start" block, as argument lists."""
    text = open(README).read()
    block = re.search(r"### Quick start\s*```bash\n(.*?)```", text, re.S).group(1)
    commands = [shlex.split(line.split("#")[0]) for line in block.splitlines()]
    return [words[1:] for words in commands if words and words[0] == "dyn-control"]


def _option(args, name, value):
    """args with option `name` set to `value` (replaced where given, else added)."""
    if name in args:
        i = args.index(name)
        return args[:i + 1] + [value] + args[i + 2:]
    return args + [name, value]


def test_the_quick_start_names_every_command_it_shows():
    commands = quick_start()
    assert ["faults"] in commands and ["demo", "--robot", "five_bar"] in commands
    assert len([c for c in commands if c[0] == "demo"]) >= 7


@pytest.mark.parametrize("args", quick_start(), ids=" ".join)
def test_a_quick_start_command_runs_as_written(args, tmp_path):
    args = [str(tmp_path / "bag") if word == "[PATH]" else word for word in args]
    if args[0] == "demo":
        args = _option(_option(args, "--duration", DURATION), "--output", str(tmp_path / "out"))
    result = subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=900)
    print(f"\ndyn-control {' '.join(args)}: exit {result.returncode}\n{result.stdout[-1500:]}")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    if args[0] == "demo":
        plot = re.search(r"^plot: (\S+)$", result.stdout, re.M).group(1)       # the run's plot, in the output
        assert plot.startswith(str(tmp_path / "out"))
        with open(plot, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    if "--record" in args:
        assert any(name.endswith(".mcap") for name in os.listdir(tmp_path / "bag")), os.listdir(tmp_path / "bag")
