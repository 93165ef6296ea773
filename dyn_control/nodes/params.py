"""Parameter tables of the nodes: declaration, typed reading and validation.

Every parameter is declared with dynamic typing and checked here instead, so that a wrong value in a
YAML file (a string for a gain, a joint list that is not a list) fails the lifecycle transition with
a message naming the parameter, rather than killing the node while it is constructed.

Each parameter has a phase, when its value is read:
- "live": applied at once, also while active (gains, safety settings);
- "activate": read on activate, refused while active;
- "configure": read on configure, refused unless unconfigured.
"""
import math
from dataclasses import dataclass

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.exceptions import InvalidParameterValueException, ParameterUninitializedException

PHASES = ("live", "activate", "configure")


@dataclass(frozen=True)
class Param:
    name: str
    default: object
    kind: str          # a key of COERCE
    phase: str
    description: str
    low: float = None  # the range of a number or integer (both ends allowed), checked and described
    high: float = None


def _number(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"parameter {name}: expected a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"parameter {name}: must be finite, got {value!r}")
    return value


def _is_sequence(value):
    """list, tuple, array.array (rclpy's double arrays), ndarray; not a string."""
    return hasattr(value, "__len__") and not isinstance(value, (str, bytes))


def _numbers(name, value):
    """A number or a list of numbers, as a list of floats."""
    if _is_sequence(value):
        return [_number(name, x) for x in list(value)]
    return [_number(name, value)]


def _integer(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"parameter {name}: expected an integer, got {value!r}")
    return int(value)


def _string(name, value):
    if not isinstance(value, str):
        raise ValueError(f"parameter {name}: expected a string, got {value!r}")
    return value


def _strings(name, value):
    items = list(value) if _is_sequence(value) else None
    if items is None or not all(isinstance(x, str) for x in items):
        raise ValueError(f"parameter {name}: expected a list of strings, got {value!r}")
    return items


def _boolean(name, value):
    if not isinstance(value, bool):
        raise ValueError(f"parameter {name}: expected true or false, got {value!r}")
    return value


COERCE = {"number": _number, "numbers": _numbers, "integer": _integer, "string": _string,
          "strings": _strings, "bool": _boolean}


def declare(node, table):
    """Declare every parameter of `table` on node: dynamic typing (the node checks types itself, so a
    wrong type fails a transition instead of the node's construction), the description and phase,
    and the range (FloatingPointRange / IntegerRange) that `ros2 param describe` shows and that
    refuses an out-of-range set. A value from a parameter file outside the range is declared
    without it, and configure then fails naming the parameter."""
    for p in table:
        descriptor = ParameterDescriptor(description=f"{p.description} (read: {p.phase})", dynamic_typing=True)
        if p.low is not None and p.kind == "integer":
            descriptor.integer_range = [IntegerRange(from_value=int(p.low), to_value=int(p.high), step=1)]
        elif p.low is not None:
            descriptor.floating_point_range = [FloatingPointRange(from_value=float(p.low), to_value=float(p.high),
                                                                  step=0.0)]
        try:
            node.declare_parameter(p.name, p.default, descriptor)
        except InvalidParameterValueException:
            descriptor.integer_range, descriptor.floating_point_range = [], []
            node.declare_parameter(p.name, p.default, descriptor)


def check_ranges(table, values):
    """A ValueError naming the first parameter of `values` outside its table range."""
    for p in table:
        if p.low is not None and p.name in values and not p.low <= values[p.name] <= p.high:
            raise ValueError(f"parameter {p.name}: must be in [{p.low:g}, {p.high:g}], got {values[p.name]!r}")


def read(node, table, phases):
    """{name: typed value} of the parameters in `phases`; a ValueError names a bad one."""
    values = {}
    for p in table:
        if p.phase in phases:
            try:
                raw = node.get_parameter(p.name).value
            except ParameterUninitializedException:
                raw = p.default
            values[p.name] = coerce(p, raw)
    return values


def coerce(p, value):
    """The typed value of parameter p; an empty list stands for an empty list of any kind."""
    if _is_sequence(value) and len(value) == 0 and p.kind in ("numbers", "strings"):
        return []
    if value is None:
        raise ValueError(f"parameter {p.name}: not set")
    return COERCE[p.kind](p.name, value)


def merged(node, table, changes):
    """Every parameter's typed value as it would be after `changes` (a ValueError names a bad one)."""
    values = read(node, table, PHASES)
    by_name = {p.name: p for p in table}
    for change in changes:
        if change.name in by_name:
            values[change.name] = coerce(by_name[change.name], change.value)
    return values


def refusal(table, changes, state):
    """The reason to refuse setting `changes` (rclpy Parameters) in lifecycle `state`
    ("unconfigured" | "inactive" | "active"), or None; values are coerced and checked for type."""
    by_name = {p.name: p for p in table}
    for change in changes:
        p = by_name.get(change.name)
        if p is None:
            continue  # use_sim_time and other parameters rclpy declares
        if p.phase == "activate" and state == "active":
            return f"{p.name} is read on activate: deactivate first"
        if p.phase == "configure" and state != "unconfigured":
            return f"{p.name} is read on configure: deactivate and clean up first"
        try:
            coerce(p, change.value)
        except ValueError as error:
            return str(error)
    return None


def result(reason):
    return SetParametersResult(successful=reason is None, reason=reason or "")


def declare_group(node, prefix):
    """Declare (dynamic typing) every parameter under `prefix` that the node's overrides (its
    parameter file, -p arguments) set, for groups whose names are not known in advance
    (mapping.parameters.* of a closed-chain plugin)."""
    for name in node._parameter_overrides:
        if name.startswith(prefix) and not node.has_parameter(name):
            node.declare_parameter(name, None, ParameterDescriptor(
                description="a keyword argument of the closed-chain mapping plugin (read: configure)",
                dynamic_typing=True))


def read_group(node, prefix):
    """{name without prefix: value} of the declared parameters under `prefix`; arrays as lists."""
    values = {}
    for name, parameter in node.get_parameters_by_prefix(prefix.rstrip(".")).items():
        value = parameter.value
        if value is not None:
            values[name] = list(value) if _is_sequence(value) else value
    return values
