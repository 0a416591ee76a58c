"""A node's label for people: what it calls at which line, a weight by its dotted name, an input by its name."""

from __future__ import annotations

import re

import torch.fx

from neurondev._compat.fx_internals import lifted_input_name, lifted_state_attribute
from neurondev.fx.devices import function_name
from neurondev.fx.modules import module_path
from neurondev.trace.source import source_of

__all__ = ["node_label"]

_POSITIONAL = re.compile(r"^args_(?P<index>\d+)$")  # how neurondev's own call passes the inputs on


def node_label(node: torch.fx.Node) -> str:
    """``torch.arange at masking_utils.py:528``; ``transformer.h.0.ln_1.weight`` for a weight the graph
    takes as an input; ``input x`` (``input args[0]``) for the function's own argument; ``output``."""
    if node.op == "placeholder":
        return _placeholder_label(node)
    if node.op == "output":
        return "output"
    if node.op == "get_attr":
        return str(node.target)
    source = source_of(node)
    called = function_name(node)
    return f"{called} at {source.where}" if source is not None else called


def _placeholder_label(node: torch.fx.Node) -> str:
    name = str(node.target)
    attribute = lifted_state_attribute(name)
    if attribute is not None:
        owner = module_path(node)
        return f"{owner}.{attribute}" if owner else attribute
    local = lifted_input_name(name)
    if local is None:
        return f"input {name}"
    spelled = _POSITIONAL.sub(r"args[\g<index>]", local).removeprefix("kwargs_")
    return f"input {spelled}"
