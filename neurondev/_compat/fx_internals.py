"""torch's internals around traced graphs: pytrees, ATen op classes, what dynamo names a lifted input and where
it read it, mark_dynamic's marks, fake tensors' mode, assert_close's tolerances."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch
import torch.fx
import torch.utils._pytree as _pytree

__all__ = [
    "DYNAMIC_MARKS",
    "ENTER_AUTOCAST",
    "OpOverload",
    "OpOverloadPacket",
    "concrete",
    "default_tolerances",
    "detect_fake_mode",
    "dynamic_dims",
    "has_pytree_spec",
    "keystr",
    "lifted_input_kind",
    "lifted_input_name",
    "lifted_state_attribute",
    "qualified_name",
    "source_name",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_map",
    "tree_unflatten",
]

# torch.utils._pytree: nested inputs and outputs (lists, tuples, dicts, dataclasses registered with torch)
tree_leaves = _pytree.tree_leaves
tree_map = _pytree.tree_map
tree_flatten = _pytree.tree_flatten
tree_flatten_with_path = _pytree.tree_flatten_with_path
tree_unflatten = _pytree.tree_unflatten
keystr = _pytree.keystr

# torch._ops: the classes of ATen operators in graphs made by aot_autograd and torch.export
OpOverload = torch._ops.OpOverload
OpOverloadPacket = torch._ops.OpOverloadPacket

# torch.fx.Node._args / ._kwargs, the fields behind its args / kwargs properties: the one private
# read that lives elsewhere, in the loop of neurondev.fx.devices.device_nodes (a call through here
# would cost what reading them directly saves: the property calls were half the pass's time on a
# 100k-node graph). tests/passes/test_device_rewriter_properties.py fails if a release moves them.

# Attributes torch._dynamo.mark_dynamic and its relatives set on a tensor.
DYNAMIC_MARKS = (
    "_dynamo_dynamic_indices",
    "_dynamo_unbacked_indices",
    "_dynamo_weak_dynamic_indices",
    "_dynamo_static_indices",
    "_dynamo_dynamic_range",
)


def dynamic_dims(marks: dict[str, Any]) -> list[int] | None:
    """The dimensions ``torch._dynamo.mark_dynamic`` marked, from a tensor's ``DYNAMIC_MARKS``; None if unmarked."""
    marked = marks.get("_dynamo_dynamic_indices")
    return sorted(marked) if marked is not None else None


# What dynamo writes into a graph for ``with torch.autocast(device_type=...)``.
ENTER_AUTOCAST = torch.amp.autocast_mode._enter_autocast

# How dynamo names the inputs it lifts: L_args_0_ / L_kwargs_x_ (arguments), ..._parameters_w_ /
# ..._buffers_b_ (module state), G_<module>_TABLE (a global), L_fn_closure_0_cell_contents (a
# closure cell), L_fn_table (an attribute of the traced callable).
_ARGUMENTS = ("L_args_", "L_kwargs_")
_STATE = re.compile(r"_(?:parameters|buffers)_(?P<attribute>.+?)_?$")  # model.h[0].ln_1.weight: ..._modules_ln_1_parameters_weight_
_INPUT = re.compile(r"^[lL]_(?P<name>.+?)_?$")


def lifted_input_kind(target: str) -> str:
    """Where a graph input dynamo lifted came from: 'argument', 'state' (a parameter or buffer),
    'global', 'closure', 'attribute', or 'other'."""
    if target.startswith(_ARGUMENTS):
        return "argument"
    if lifted_state_attribute(target) is not None:
        return "state"
    if target.startswith("G_"):
        return "global"
    if target.startswith("L_fn_closure_"):
        return "closure"
    if target.startswith("L_fn_"):
        return "attribute"
    return "other"


def lifted_state_attribute(target: str) -> str | None:
    """The attribute a lifted parameter or buffer input names (``weight``), None for other inputs."""
    match = _STATE.search(target)
    return match["attribute"] if match is not None else None


def lifted_input_name(target: str) -> str | None:
    """A lifted local input's name without dynamo's ``L_`` and trailing ``_`` (``args_0``, ``x``)."""
    match = _INPUT.match(target)
    return match["name"] if match is not None else None


def has_pytree_spec(gm: torch.fx.GraphModule) -> bool:
    """Whether ``gm`` flattens its inputs through a pytree spec (``_in_spec``, set by make_fx and export)."""
    return getattr(gm, "_in_spec", None) is not None


def concrete(value: Any) -> Any:
    """The number a symbolic size stands for while tracing (its hint), else the value itself.

    Dynamo passes a dimension marked dynamic to the graph as a ``torch.SymInt`` input; a run
    elsewhere needs the concrete size it had (a symbolic one reaching XLA crashes the process).
    """
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        hint = value.node.hint
        return hint if hint is not None else value
    return value


def qualified_name(target: Callable[..., Any]) -> str:
    """torch.fx's own name for a call target: 'torch.empty', 'torch.Tensor.to', '_operator.add'."""
    return torch.fx.node._get_qualified_name(target)


def detect_fake_mode(values: list[Any]) -> Any:
    """The FakeTensorMode of fake tensors among ``values`` (None when there is none)."""
    from torch._guards import detect_fake_mode as detect

    return detect(values)


def default_tolerances(actual: torch.Tensor, expected: torch.Tensor) -> tuple[float, float]:
    """(rtol, atol) that torch.testing.assert_close uses for these dtypes."""
    from torch.testing._comparison import default_tolerances as defaults

    return defaults(actual, expected)


def source_name(node: torch.fx.Node) -> str | None:
    """Where dynamo read a graph input from, as the user's code names it (``STATE`` for a global,
    ``self.table`` for an attribute, ``x`` for an argument); None when dynamo recorded no source.
    dynamo keeps it in ``node.meta['grapharg'].source.name`` (a method in torch 2.9, a property in 2.13)."""
    grapharg = node.meta.get("grapharg")
    name = getattr(getattr(grapharg, "source", None), "name", None)
    name = name() if callable(name) else name
    if not isinstance(name, str):
        return None
    name = re.sub(r"\b[LG]\['([^']+)'\]", r"\1", name)
    return _IMPORTED.sub(lambda m: "" if "neurondev_rebuilt" in m["module"] else f"{m['module']}.", name)


_IMPORTED = re.compile(r"__import_+(?P<module>\w+?)_*\.")  # a global read through its module: __import__config.SCALE
