"""ROS 2 parameter files (`--params-file`) read as rcl reads them: their entries, which entries apply
to a node (rcl's wildcards), and the typed parameters they set. Pure Python (PyYAML): the bringup
checks a file with it before starting any node, the launch files and the nodes read files with it.

An entry is `<key>: ros__parameters: {...}`; a key is a node's name, absolute or not, possibly with
a namespace written in the key (`/robot1/dyn_controller`) or as enclosing mappings
(`robot1: dyn_controller: ...`), and with the wildcards `*` (exactly one name) and `**` (any
number of names, none included) in place of whole names: `/**/dyn_controller` is every
dyn_controller in any namespace, `/**` every node. Nested mappings under ros__parameters are joined
with dots (`gains: {kp: 1}` sets `gains.kp`). Scalars are typed as rcl types them (`parse_scalar`:
`1e3` is a double, `yes` a bool, quoted text a string), and a list must hold one type.
"""
import math
import re
import sys
from dataclasses import dataclass

import yaml

PARAMETERS_KEY = "ros__parameters"
WILDCARDS = ("*", "**")
TRUE = {"Y", "y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}
FALSE = {"N", "n", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}
YAML_INFINITIES = {f"{sign}.{word}": float(f"{sign or '+'}inf")
                   for sign in ("", "+", "-") for word in ("inf", "Inf", "INF")}
YAML_NANS = {".nan", ".NaN", ".NAN"}
# C's strtoll with base 0 (decimal, 0x hexadecimal, 0 octal) and strtod (decimal and hexadecimal
# floats, inf, infinity, nan), each over the whole text
C_INTEGER = re.compile(r"\s*[+-]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
C_DECIMAL = re.compile(r"\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
C_HEXADECIMAL = re.compile(r"\s*[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?[0-9]+)?")
C_SPECIAL = re.compile(r"\s*[+-]?(inf|infinity|nan)", re.IGNORECASE)
INT64 = 2 ** 63
STRING_TAG = "tag:yaml.org,2002:str"
IMPLICIT = "implicit"     # the tag of a scalar without an explicit one (see _Loader)


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader that leaves untagged scalars untyped (tag IMPLICIT): rcl types them
    (parse_scalar), and only an explicit !!str changes that."""

    def resolve(self, kind, value, implicit):
        return IMPLICIT if kind is yaml.ScalarNode else super().resolve(kind, value, implicit)


class ParameterFileError(ValueError):
    """A file rcl would refuse, or that is no parameter file; the message is one line naming it."""


@dataclass(frozen=True)
class Entry:
    """One `<key>: ros__parameters: {...}` of a file: key as rcl reads it (absolute, with the
    enclosing mappings' names), parameters flattened with dots, typed as rcl types them."""
    key: str
    parameters: dict

    @property
    def node_name(self):
        return self.key.rpartition("/")[2]

    @property
    def namespace(self):
        return self.key.rpartition("/")[0] or "/"

    @property
    def names_the_node(self):
        """True when the key ends in a node's name (`/**/dyn_controller`), false for `/**`, `/*`."""
        return self.node_name not in WILDCARDS

    @property
    def has_wildcards(self):
        return any(name in WILDCARDS for name in self.key.split("/"))

    def applies_to(self, node):
        """Whether rcl applies this entry to the node of fully qualified name `node`."""
        return _pattern(self.key).fullmatch(node) is not None


def load(path):
    """The entries of the parameter file at `path`, in file order; a ParameterFileError says why
    the file cannot be one (unreadable, not YAML, not `node: ros__parameters: ...`, a list of
    mixed types, ...)."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
        document = yaml.compose(text, Loader=_Loader)
    except OSError as error:
        raise ParameterFileError(f"{path}: cannot read it ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise ParameterFileError(f"{path}: not a text file (not UTF-8)") from None
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ParameterFileError(f"{path}: not valid YAML: {problem}"
                                 + (f" (line {where.line + 1})" if where is not None else "")) from None
    if document is None:
        return []
    if not isinstance(document, yaml.MappingNode):
        raise ParameterFileError(f"{path}: not a ROS 2 parameter file: expected `node_name: ros__parameters: ...` "
                                 f"at the top, found {_what(document)} (line {document.start_mark.line + 1})")
    entries = []
    _read_namespace(path, document, "", entries)
    return entries


def _read_namespace(path, mapping, prefix, entries):
    for key_node, value in mapping.value:
        key = f"{prefix}/{str(key_node.value).strip('/')}"
        line = key_node.start_mark.line + 1
        if not isinstance(value, yaml.MappingNode):
            raise ParameterFileError(f"{path}: {key.lstrip('/')} (line {line}): expected a node's "
                                     f"`ros__parameters:` or a namespace, found {_what(value)}")
        keys = [str(k.value) for k, _ in value.value]
        if PARAMETERS_KEY in keys:
            if keys != [PARAMETERS_KEY]:
                others = ", ".join(k for k in keys if k != PARAMETERS_KEY)
                raise ParameterFileError(f"{path}: {key.lstrip('/')} (line {line}): only `{PARAMETERS_KEY}:` may "
                                         f"stand under a node's name, found {others}")
            parameters = {}
            _read_parameters(path, value.value[0][1], "", parameters)
            entries.append(Entry(key if key.startswith("/") else "/" + key, parameters))
        else:
            _read_namespace(path, value, key, entries)


def _read_parameters(path, mapping, prefix, parameters):
    if not isinstance(mapping, yaml.MappingNode):
        where = prefix.rstrip(".") or PARAMETERS_KEY
        raise ParameterFileError(f"{path}: {where} (line {mapping.start_mark.line + 1}): expected parameters "
                                 f"(name: value), found {_what(mapping)}")
    for key_node, value in mapping.value:
        name = prefix + str(key_node.value)
        if isinstance(value, yaml.MappingNode):
            _read_parameters(path, value, name + ".", parameters)
        elif isinstance(value, yaml.SequenceNode):
            parameters[name] = _read_list(path, name, value)
        else:
            parameters[name] = _scalar(path, name, value)


def _read_list(path, name, sequence):
    items = []
    for item in sequence.value:
        if not isinstance(item, yaml.ScalarNode):
            raise ParameterFileError(f"{path}: parameter {name} (line {item.start_mark.line + 1}): a list of "
                                     f"{_what(item)}s; parameters are lists of numbers, strings or booleans")
        items.append(_scalar(path, name, item))
    kinds = {_kind(x) for x in items}
    if len(kinds) > 1:
        hint = " (write 1.0, not 1, among doubles)" if kinds == {"double", "integer"} else ""
        raise ParameterFileError(f"{path}: parameter {name} (line {sequence.start_mark.line + 1}): a list must hold "
                                 f"one type, found {' and '.join(sorted(kinds))} in {_text(sequence)}{hint}")
    return items


def _scalar(path, name, node):
    if node.style is None and node.value == "":
        raise ParameterFileError(f"{path}: parameter {name} (line {node.start_mark.line + 1}): no value")
    return parse_scalar(node.value, quoted=node.style in ("'", '"') or node.tag == STRING_TAG)


def parse_scalar(text, quoted=False):
    """The value rcl's parser gives a YAML scalar: quoted text is a string; else a bool (y, yes,
    true, on, ... as rcl lists them), an integer (C's strtoll, base 0: 0x1f, 017), a double (C's
    strtod, and YAML's .inf / .nan), or else a string."""
    if quoted:
        return text
    if text in TRUE or text in FALSE:
        return text in TRUE
    if C_INTEGER.fullmatch(text):
        digits = text.strip()
        value = int(digits, 0) if not re.fullmatch(r"[+-]?0[0-7]+", digits) else int(digits, 8)
        if -INT64 <= value < INT64:
            return value
    if text in YAML_INFINITIES:
        return YAML_INFINITIES[text]
    if text in YAML_NANS:
        return math.nan
    if C_SPECIAL.fullmatch(text):
        return float(text)
    if C_DECIMAL.fullmatch(text):
        value = float(text)
        mantissa = re.split("[eE]", text)[0]
        out_of_range = math.isinf(value) or (abs(value) < sys.float_info.min and re.search("[1-9]", mantissa))
        if not out_of_range:     # strtod's overflow and underflow (1e999, 1e-400) are errors: rcl keeps a string
            return value
    elif C_HEXADECIMAL.fullmatch(text):
        return float.fromhex(text.strip())
    return text


def _kind(value):
    return {bool: "bool", int: "integer", float: "double"}.get(type(value), "string")


def _what(node):
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    return f"the value {node.value!r}"


def _text(node):
    return "[" + ", ".join(item.value for item in node.value) + "]"


def _pattern(key):
    """rcl's matching of an entry's key against a node's fully qualified name: `*` one name, `**`
    any number of names (none included)."""
    regex = ""
    for name in key.strip("/").split("/"):
        regex += {"*": "/[^/]+", "**": "(/[^/]+)*"}.get(name, "/" + re.escape(name))
    return re.compile(regex)


def applying(entries, node):
    """The entries that apply to the node of fully qualified name `node`, in file order (rcl
    applies them in that order: a later one overrides an earlier one's values)."""
    return [entry for entry in entries if entry.applies_to(node)]


def merged(entries):
    """{name: value} that `entries` set, the later ones overriding."""
    values = {}
    for entry in entries:
        values.update(entry.parameters)
    return values


def files_in(argv):
    """The files of every `--params-file FILE` in a command line (what ros2 launch and bringup pass)."""
    return [argv[k + 1] for k in range(len(argv) - 1) if argv[k] == "--params-file"]


def namespace_in(argv):
    """The namespace that a command line's `-r __ns:=NS` (ros2 launch's and bringup's way) gives
    its node, "/" without one."""
    namespace = "/"
    for k in range(len(argv) - 1):
        if argv[k] in ("-r", "--remap") and argv[k + 1].startswith("__ns:="):
            namespace = "/" + argv[k + 1][len("__ns:="):].strip("/")
    return namespace


def node_name(namespace, name):
    """The fully qualified name of node `name` in `namespace`."""
    return f"{namespace.rstrip('/')}/{name}"
