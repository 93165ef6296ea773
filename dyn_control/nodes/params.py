"""Parameter tables of the nodes: declaration, typed reading and validation.

Every parameter is declared with dynamic typing and checked here instead, so that a wrong value in a
YAML file (a string for a gain, a joint list that is not a list) fails the lifecycle transition with
a message naming the parameter, rather than killing the node while it is constructed.

Each parameter has a phase, when its value is read:
- "live": applied at once, also while active (gains, safety settings);
- "activate": read on activate, refused while active;
- "configure": read on configure, refused unless unconfigured.

Types round-trip (`ros2 param dump`, then that file loaded): a number parameter stays a double when
set with an integer literal (`ros2 param set ... gains.kp 300`), and an empty list is a typed empty
array (double or string array), also when a file's `[]` (which rcl reads as "not set") gave it.
A parameter file or override that names no parameter of the node (a misspelled `kpp`, a value
written as a mapping, `kp: {a: 1}`, which becomes `gains.kp.a`) fails configure, naming it and the
nearest known name.
"""
import difflib
import math
import sys
from dataclasses import dataclass

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.exceptions import InvalidParameterValueException, ParameterUninitializedException
from rclpy.parameter import Parameter

from . import param_files

PHASES = ("live", "activate", "configure")
RCLPY_PARAMETERS = ("use_sim_time", "start_type_description_service")   # what rclpy declares on every node
FREE_PREFIXES = ("qos_overrides.",)     # rclpy's QoS overrides: any name below
ARRAY_TYPES = {"numbers": Parameter.Type.DOUBLE_ARRAY, "strings": Parameter.Type.STRING_ARRAY}


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
    without it, and configure then fails naming the parameter. Values keep their table type
    (`typed`): at declaration, and on every later set through a pre-set callback."""
    for p in table:
        descriptor = ParameterDescriptor(description=f"{p.description} (read: {p.phase})", dynamic_typing=True)
        if p.low is not None and p.kind == "integer":
            descriptor.integer_range = [IntegerRange(from_value=int(p.low), to_value=int(p.high), step=1)]
        elif p.low is not None:
            descriptor.floating_point_range = [FloatingPointRange(from_value=float(p.low), to_value=float(p.high),
                                                                  step=0.0)]
        override = node._parameter_overrides.get(p.name)
        value = typed(p, p.default if override is None else override.value)
        try:
            node.declare_parameter(p.name, value, descriptor, ignore_override=True)
        except InvalidParameterValueException:
            descriptor.integer_range, descriptor.floating_point_range = [], []
            node.declare_parameter(p.name, value, descriptor, ignore_override=True)
        if value == [] and p.kind in ARRAY_TYPES:    # declared from [] as a byte array: give it its type
            node.set_parameters([Parameter(p.name, ARRAY_TYPES[p.kind], [])])
    by_name = {p.name: p for p in table}
    node.add_pre_set_parameters_callback(
        lambda changes: [_typed_parameter(by_name[c.name], c) if c.name in by_name else c for c in changes])


def typed(p, value):
    """`value` in the ROS type of parameter p's kind, where it converts without loss of meaning: an
    integer (or a list of them) for a number is a double (or a double array); "not set" (a file's
    `[]`) or any empty array for a list is an empty list. Anything else is left for coerce to judge."""
    if p.kind in ("number", "numbers") and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if p.kind in ARRAY_TYPES and (value is None or (_is_sequence(value) and len(value) == 0)):
        return []
    if (p.kind == "numbers" and _is_sequence(value)
            and all(isinstance(x, int) and not isinstance(x, bool) for x in value)):
        return [float(x) for x in value]
    return value


def _typed_parameter(p, parameter):
    """The rclpy Parameter `parameter` of table parameter p, typed (see `typed`)."""
    value = typed(p, parameter.value)
    if value is parameter.value:
        return parameter
    kind = ARRAY_TYPES[p.kind] if isinstance(value, list) else Parameter.Type.DOUBLE
    return Parameter(parameter.name, kind, value)


def check_ranges(table, values):
    """A ValueError naming the first parameter of `values` outside its table range."""
    for p in table:
        if p.name in values:
            _check_range(p, values[p.name])


def _check_range(p, value):
    if p.low is None:
        return
    for x in (value if isinstance(value, list) else [value]):
        if not p.low <= x <= p.high:
            raise ValueError(f"parameter {p.name}: must be in [{p.low:g}, {p.high:g}], got {value!r}")


def read(node, table, phases):
    """{name: typed value} of the parameters in `phases`; a ValueError names a bad one. Reading the
    configure-phase parameters (configure) first checks that every override (parameter file entry,
    -p argument) names a parameter of the node (`check_overrides`)."""
    if "configure" in phases:
        check_overrides(node)
    return _read(node, table, phases)


def _read(node, table, phases, changes=()):
    """read(), with the values of `changes` (rclpy Parameters) in place of the node's."""
    new = {change.name: change.value for change in changes}
    values = {}
    for p in table:
        if p.phase in phases:
            if p.name in new:
                raw = new[p.name]
            else:
                try:
                    raw = node.get_parameter(p.name).value
                except ParameterUninitializedException:
                    raw = p.default
            values[p.name] = coerce(p, raw)
    return values


def coerce(p, value):
    """The typed value of parameter p, checked against its range; an empty list stands for an
    empty list of any kind."""
    if _is_sequence(value) and len(value) == 0 and p.kind in ("numbers", "strings"):
        return []
    if value is None:
        raise ValueError(f"parameter {p.name}: not set")
    value = COERCE[p.kind](p.name, value)
    _check_range(p, value)
    return value


def merged(node, table, changes):
    """Every parameter's typed value as it would be after `changes` (a ValueError names a bad one)."""
    return _read(node, table, PHASES, changes)


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


def unknown_parameters(names, known):
    """The message naming parameters `names` that a node whose parameters are `known` does not
    have: for each, a value written as a mapping (`gains.kp.a`), or a misspelling with the nearest
    known name (difflib), compared by the whole name, else by its last part (`kpp` -> gains.kp)."""
    leaves = {}
    for k in sorted(known):
        leaves.setdefault(k.rpartition(".")[2], k)
    described = []
    for name in names:
        group = next((k for k in known if name.startswith(k + ".")), None)
        if group is not None:
            described.append(f"{name} ({group} takes a value, not a mapping of keys)")
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        if not close:
            close = [leaves[m] for m in difflib.get_close_matches(name.rpartition(".")[2], list(leaves), n=1,
                                                                  cutoff=0.6)]
        described.append(name + (f" (did you mean {close[0]}?)" if close else ""))
    return f"unknown parameter{'s' if len(names) > 1 else ''} " + ", ".join(described)


def unknown_names(names, known, prefixes=()):
    """The names of `names` that are neither in `known` nor below one of `prefixes` (or FREE_PREFIXES)."""
    prefixes = tuple(prefixes) + FREE_PREFIXES
    return sorted(n for n in names if n not in known and not n.startswith(prefixes))


def check_overrides(node):
    """A ValueError naming every override of `node` (from its parameter files, as its process's
    command line names them, and -p arguments) that is none of its declared parameters; names set
    only by entries keyed by wildcards alone (`/**:`, meant for every node) are not its own and
    are let pass."""
    shared, files = set(), {}
    for path in param_files.files_in(sys.argv):
        try:
            entries = param_files.applying(param_files.load(path), node.get_fully_qualified_name())
        except param_files.ParameterFileError:
            continue     # rcl read it: a file this reader refuses is not one to attribute names to
        for entry in entries:
            for name in entry.parameters:
                if entry.names_the_node:
                    files.setdefault(name, f"{path}, entry {entry.key}")
                else:
                    shared.add(name)
    known = set(node._parameters)
    unknown = unknown_names(set(node._parameter_overrides) - (shared - set(files)), known)
    if unknown:
        sources = sorted({files[name] for name in unknown if name in files})
        raise ValueError(unknown_parameters(unknown, known) + (f" (from {'; '.join(sources)})" if sources else ""))


def check_file_values(table, values, names_the_node, prefixes=()):
    """What `check_overrides` and configure's typing check would say of a node with parameter
    table `table`, given {name: value} from a file's entries (`names_the_node`: the names set by
    entries that name the node, not by wildcards alone): a ValueError naming the unknown names, or
    else the first mistyped or out-of-range parameter. For the bringup, before it starts the node."""
    known = {p.name for p in table} | set(RCLPY_PARAMETERS)
    unknown = unknown_names(names_the_node, known, prefixes)
    if unknown:
        raise ValueError(unknown_parameters(unknown, known))
    for p in table:
        if p.name in values:
            coerce(p, typed(p, values[p.name]))


def report_parameter_files(node, files):
    """Log which entries of the parameter files `files` apply to `node` and how many parameters
    they set, and WARN when files were given and none of their entries applies (a file keyed
    `dyn_controller:` for a node started in a namespace: the node would run on its defaults)."""
    me = node.get_fully_qualified_name()
    applied, keys = 0, []
    for path in files:
        try:
            entries = param_files.load(path)
        except param_files.ParameterFileError as error:
            node.get_logger().warning(str(error))
            continue
        mine = param_files.applying(entries, me)
        applied += len(mine)
        for entry in mine:
            keys.append(f"{entry.key} ({len(entry.parameters)})")
        if not mine:
            node.get_logger().warning(
                f"parameter file {path}: none of its entries ({', '.join(e.key for e in entries) or 'none'}) "
                f"applies to {me}: its parameters are not used; key an entry /**/{node.get_name()} to apply it "
                "in any namespace")
    if files:
        node.get_logger().info(f"parameters from file(s) {', '.join(files)}: {applied} "
                               f"{'entry' if applied == 1 else 'entries'} applied: {', '.join(keys) or 'none'}")
