"""Copies of FX GraphModules that do not fail where ``copy.deepcopy`` does."""

from __future__ import annotations

import copy
from typing import Any

import torch
import torch.fx

__all__ = ["copy_graph", "own_graph"]


def copy_graph(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A GraphModule with its own nodes and its own copies of every attribute its graph reads.

    ``copy.deepcopy`` is tried first (it keeps everything, the lazy recompilation included). Some
    graphs dynamo makes cannot be deep-copied: an optimizer step's graph reads parameters as
    attributes named ``self___param_groups_0__params___0`` that torch's copy looks for in the
    wrong place (AttributeError). Those are rebuilt from a copy of the graph and copies of the
    attributes (``get_attr``) and submodules (``call_module``) it uses.
    """
    try:
        return copy.deepcopy(gm)
    except Exception:
        return _rebuilt(gm)


def own_graph(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A GraphModule with its own graph (nodes, arguments, meta) over the same parameters and submodules: a pass
    that rewrites nodes of one leaves the other as it was, without copying the weights."""
    graph = torch.fx.Graph(owning_module=None, tracer_cls=gm.graph._tracer_cls)
    output = graph.graph_copy(gm.graph, {})
    graph.output(output, type_expr=getattr(gm.graph.output_node(), "type", None))
    graph._codegen = copy.deepcopy(gm.graph._codegen)
    owned = torch.fx.GraphModule(gm, graph, class_name=type(gm).__name__)
    owned.meta = dict(getattr(gm, "meta", {}))
    return owned


def _rebuilt(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    graph = copy.deepcopy(gm.graph)
    used = {str(node.target) for node in graph.nodes if node.op in ("get_attr", "call_module")}
    root = {name: _copy_of(_attribute(gm, name)) for name in used}
    rebuilt = torch.fx.GraphModule(root, graph, class_name=type(gm).__name__)
    rebuilt.meta = dict(getattr(gm, "meta", {}))
    return rebuilt


def _attribute(module: torch.nn.Module, qualified_name: str) -> Any:
    value: Any = module
    for part in qualified_name.split("."):
        value = getattr(value, part)
    return value


def _copy_of(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        copied = value.detach().clone()
        return torch.nn.Parameter(copied, value.requires_grad) if isinstance(value, torch.nn.Parameter) else copied
    return copy.deepcopy(value)
