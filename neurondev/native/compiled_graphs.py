"""The torch.compile backend of a native device: aot_autograd's graphs run as compiled, each event on its node's line.

On a device without a compiler of its own (the host test device; inductor has no code generation for it) a program
is compiled through aot_autograd, and its forward and backward graphs run as FX wrote them: Python code, a line per
node. An accounting that sees an event while a graph's code runs reads the node from the frame (``node_at``: FX's
map from the code's lines to its nodes) and attributes the event to the user's line in ``node.meta["stack_trace"]``;
nothing runs per node (an ``fx.Interpreter`` did, and cost 2.6x on a tiny GPT-2's program run).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from typing import Any

import torch.fx

from neurondev._compat.dynamo import aot_autograd
from neurondev.runs.interface import Driver

__all__ = ["graph_backend", "node_at"]

_GRAPHS: weakref.WeakValueDictionary[Any, torch.fx.GraphModule] = weakref.WeakValueDictionary()  # a graph's code -> the graph
_LINES: weakref.WeakKeyDictionary[torch.fx.GraphModule, dict[int, torch.fx.Node]] = weakref.WeakKeyDictionary()  # -> line: node


def node_at(frame: Any) -> torch.fx.Node | None:
    """The node a compiled graph's ``frame`` is running (None: the frame is no such graph's)."""
    gm = _GRAPHS.get(frame.f_code)
    if gm is None:
        return None
    return _LINES[gm].get(frame.f_lineno - frame.f_code.co_firstlineno)


def _known(gm: torch.fx.GraphModule) -> None:
    """Keep ``gm``'s code and its line-to-node map (FX's ``lineno_map``: a line of the code, the index of its node)."""
    nodes = list(gm.graph.nodes)
    lines = gm._lineno_map or {}
    _LINES[gm] = {line: nodes[index] for line, index in lines.items() if index is not None}
    _GRAPHS[type(gm).forward.__code__] = gm


def _graph_running(accounting: Any) -> Any:
    """What an accounting does while a compiled graph runs (a device's log stops following ops: ``in_graph``)."""
    in_graph = getattr(accounting, "in_graph", None)
    return in_graph() if in_graph is not None else contextlib.nullcontext()


def graph_backend(driver: Driver) -> Callable[..., Any]:
    """A torch.compile backend: aot_autograd, with forward and backward graphs run as compiled, under ``driver``'s
    accounting (on already when it sees between graphs; here for the graph alone otherwise)."""

    def compile_part(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        real = getattr(gm, "real_recompile", None)  # a lazy graph module writes its code at its first call: now, once
        if callable(real):
            real()
        _known(gm)

        def run(args: list[Any]) -> Any:
            with driver.measuring() as accounting, _graph_running(accounting):
                return gm(*args)

        run._boxed_call = True  # type: ignore[attr-defined]  # aot_autograd's convention: one list of arguments
        return run

    return aot_autograd(fw_compiler=compile_part, bw_compiler=compile_part)
