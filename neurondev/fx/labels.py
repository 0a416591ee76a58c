"""A node's label for people: what it calls at which line, a weight by its dotted name, an input by its name."""

from __future__ import annotations

import re

import torch.fx

from neurondev.fx.devices import function_name
from neurondev.fx.modules import module_path
from neurondev.trace.source import source_of

__all__ = ["node_label"]

# dynamo's placeholder for model.h[0].ln_1.weight: L_fn_modules_h_modules_0_modules_ln_1_parameters_weight_
_STATE = re.compile(r"_(?:parameters|buffers)_(?P<attribute>.+?)_?$")
_INPUT = re.compile(r"^[lL]_(?P<name>.+?)_?$")
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
    state = _STATE.search(name)
    if state is not None:
        owner = module_path(node)
        return f"{owner}.{state['attribute']}" if owner else state["attribute"]
    match = _INPUT.match(name)
    if match is None:
        return f"input {name}"
    spelled = _POSITIONAL.sub(r"args[\g<index>]", match["name"]).removeprefix("kwargs_")
    return f"input {spelled}"
