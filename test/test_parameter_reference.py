"""doc/parameters.md is the reference generated from the nodes' parameter tables
(nodes/parameter_reference.py): every parameter of each node, none stale."""
import os

from dyn_control.nodes import parameter_reference

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_parameter_reference_is_generated_from_the_tables():
    with open(os.path.join(ROOT, "doc", "parameters.md")) as f:
        written = f.read()
    assert written == parameter_reference.reference(), (
        "doc/parameters.md is stale: python -m dyn_control.nodes.parameter_reference > doc/parameters.md")

