"""The nodes' parameter reference (doc/parameters.md), generated from their parameter tables
(controller_parameters.PARAMETERS, simulator.PARAMETERS): every parameter with its default, the lifecycle phase
in which it is read (params.py), its range where it has one and its description, the text `ros2 param
describe` shows. `python -m dyn_control.nodes.parameter_reference` prints it; test_parameter_reference
checks that doc/parameters.md is this text."""
from . import controller_parameters, simulator

NODES = (("dyn_controller", "controller_parameters.py", controller_parameters.PARAMETERS),
         ("dyn_simulator", "simulator.py", simulator.PARAMETERS))
HEADER = """# Parameters

Generated from the nodes' parameter tables (`python -m dyn_control.nodes.parameter_reference >
doc/parameters.md`); `ros2 param describe NODE NAME` shows the same descriptions and ranges.
*read*: when a value takes effect: `live` at once, also while active; `activate` on activate
(refused while active); `configure` on configure (refused unless unconfigured). A `numbers`
parameter takes one number for every controlled joint or one per joint where its description says
so.
"""


def _value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return repr(value)


def _range(param):
    if param.low is None and param.high is None:
        return ""
    return f"{_value(param.low)} … {_value(param.high)}"


def table(parameters):
    """The markdown table of one node's parameters, in their declaration order."""
    rows = ["| parameter | type | default | read | range | meaning |", "|---|---|---|---|---|---|"]
    for p in parameters:
        meaning = p.description.replace("|", "\\|")
        rows.append(f"| `{p.name}` | {p.kind} | `{_value(p.default)}` | {p.phase} | {_range(p)} | {meaning} |")
    return "\n".join(rows)


def reference():
    parts = [HEADER]
    for node, module, parameters in NODES:
        parts.append(f"## `{node}` (dyn_control/nodes/{module})\n\n{table(parameters)}\n")
    return "\n".join(parts)


if __name__ == "__main__":
    print(reference(), end="")
