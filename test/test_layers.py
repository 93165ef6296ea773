"""The package's imports point down its layers (DESIGN.md, "Layers") and form no cycle.

Every import statement of every module counts, those inside functions too: an import placed in a
function to break a cycle at import time is still a dependency.
"""
import ast
import os

import dyn_control

PACKAGE_DIR = os.path.dirname(dyn_control.__file__)

# The layers, lowest first: a module may import its own layer's and lower layers' modules only (a
# module is in the layer of its longest prefix listed). inertia.parameters needs nothing but spatial
# and sits below model, whose payload and consistency checks use it; the rest of inertia/ (mesh
# inertia) takes models' arrays. identification makes its synthetic data with the simulator.
LAYERS = (
    ("jit", "kernel_cache"),
    ("spatial", "inertia.parameters"),
    ("model",),
    ("urdf", "robots", "inertia"),
    ("kernels",),
    ("floating_base", "multi_dof", "dynamics", "derivatives", "contact", "task_space", "second_order", "model_derivatives",
     "configuration", "centroidal", "constrained_second_order"),
    ("mappings",),
    ("control",),
    ("simulation",),
    ("identification",),
    ("nodes",),
)


def _modules():
    """{dotted name below the package: path}; a package's __init__ is the package's name."""
    modules = {}
    for folder, folders, files in os.walk(PACKAGE_DIR):
        folders[:] = [f for f in folders if not f.startswith("__")]
        for file in files:
            if file.endswith(".py"):
                relative = os.path.relpath(os.path.join(folder, file), PACKAGE_DIR)[:-3].split(os.sep)
                if relative[-1] == "__init__":
                    relative = relative[:-1]
                modules[".".join(relative)] = os.path.join(folder, file)
    return modules


def _absolute(module, package, level):
    """The name below the package of `from <level dots><module> import ...` in `package` (a list of
    names below the package), or None for another distribution's module."""
    if level:
        base = package[:len(package) - level + 1]
        return ".".join(base + ([module] if module else []))
    if module == "dyn_control" or module.startswith("dyn_control."):
        return module[len("dyn_control."):]
    return None


def _imports(modules):
    """{module: set of the package's modules it imports}: `from .x import y` counts as x.y when that
    is a module, else as x."""
    edges = {}
    for name, path in modules.items():
        package = name.split(".") if path.endswith("__init__.py") else name.split(".")[:-1]
        package = [p for p in package if p]
        targets = set()
        for node in ast.walk(ast.parse(open(path).read(), path)):
            if isinstance(node, ast.Import):
                found = [_absolute(a.name, package, 0) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                module = _absolute(node.module or "", package, node.level)
                found = [] if module is None else [
                    f"{module}.{a.name}".strip(".") if f"{module}.{a.name}".strip(".") in modules else module
                    for a in node.names]
            else:
                continue
            targets |= {t for t in found if t is not None and t in modules and t != name}
        edges[name] = targets
    return edges


def _layer(module):
    best, rank = "", None
    for index, layer in enumerate(LAYERS):
        for prefix in layer:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, rank = prefix, index
    return rank


def test_every_module_is_in_a_layer():
    unplaced = [m for m in _modules() if m and _layer(m) is None]
    assert unplaced == [], f"modules in no layer of LAYERS (and DESIGN.md): {unplaced}"


def _upward(edges):
    return [f"{a} -> {b}" for a, targets in edges.items() if a for b in sorted(targets) if b and _layer(b) > _layer(a)]


def _cycles(edges):
    """Tarjan's strongly connected components of more than one module."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in list(edges):
        if v not in index:
            visit(v)
    return cycles


def test_imports_point_down_the_layers():
    upward = _upward(_imports(_modules()))
    assert upward == [], "imports that point up the layers:\n" + "\n".join(upward)


def test_no_import_cycle():
    assert _cycles(_imports(_modules())) == []


def test_the_checks_read_the_graph_and_find_what_they_look_for():
    """Imports placed inside functions count (the controller node builds its tick inside a method),
    relative imports resolve, and a made-up upward edge or circle is found."""
    edges = _imports(_modules())
    assert "kernels.entry" in edges["dynamics"]                   # from .kernels import entry as _entry
    assert "model" in edges["kernels.entry"]                        # from ..model import ...
    assert "control.tick" in edges["nodes.controller"]
    assert _upward({"model": {"kernels.rnea"}, "kernels.rnea": set()}) == ["model -> kernels.rnea"]
    assert _cycles({"nodes.cli": {"nodes.bringup"}, "nodes.bringup": {"nodes.lifecycle"},
                    "nodes.lifecycle": {"nodes.cli"}, "spatial": set()}) == [["nodes.bringup", "nodes.cli",
                                                                               "nodes.lifecycle"]]
