"""ATen-level graphs: record what aot_autograd compiles (forward and backward) with their real inputs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from neurondev._compat.dynamo import aot_autograd
from neurondev._compat.fx_internals import tree_leaves

__all__ = ["AtenGraph", "AtenRecorder", "run_backward"]


@dataclasses.dataclass(frozen=True)
class AtenGraph:
    """One graph aot_autograd made from dynamo graph ``dynamo_graph``: its ``forward`` or ``backward``.

    ``inputs`` are copies of the real CPU tensors it was first called with while tracing (for the
    forward: parameters and inputs; for the backward: saved activations and the output gradients),
    so the graph can be run again elsewhere.
    """

    dynamo_graph: int
    part: str
    graph_module: torch.fx.GraphModule
    inputs: tuple[Any, ...] = dataclasses.field(default=(), repr=False)


@dataclasses.dataclass
class _Recorded:
    dynamo_graph: int
    part: str
    graph_module: torch.fx.GraphModule
    inputs: list[Any] = dataclasses.field(default_factory=list)


class AtenRecorder:
    """Compiles each dynamo graph with aot_autograd, keeping every forward/backward graph it makes;
    the graphs run as they are (eagerly, node by node) on CPU while the function is traced."""

    def __init__(self) -> None:
        self._recorded: list[_Recorded] = []

    @property
    def has_backward(self) -> bool:
        """Whether a backward graph was compiled already (the traced function back-propagated itself)."""
        return any(r.part == "backward" for r in self._recorded)

    @property
    def graphs(self) -> tuple[AtenGraph, ...]:
        """What was recorded so far, each with the inputs of its first call."""
        return tuple(AtenGraph(r.dynamo_graph, r.part, r.graph_module, tuple(r.inputs)) for r in self._recorded)

    def compile(self, index: int, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        compilers = {"fw_compiler": self._compiler(index, "forward"), "bw_compiler": self._compiler(index, "backward")}
        return aot_autograd(**compilers)(gm, example_inputs)

    def _compiler(self, index: int, part: str) -> Callable[..., Any]:
        def compile_graph(gm: torch.fx.GraphModule, fake_inputs: list[Any]) -> Callable[..., Any]:
            entry = _Recorded(index, part, gm)
            self._recorded.append(entry)

            def run(args: list[Any]) -> Any:
                if not entry.inputs:
                    entry.inputs = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
                return gm(*args)

            run._boxed_call = True  # type: ignore[attr-defined]  # aot_autograd's convention: one list of arguments
            return run

        return compile_graph


def run_backward(output: Any) -> None:
    """Run the backward of every output that requires grad (ones as gradients), so that aot_autograd
    compiles, and the recorder sees, the backward graphs. Acts on the traced copies only."""
    tensors = [t for t in tree_leaves(output) if isinstance(t, torch.Tensor) and t.requires_grad and t.grad_fn is not None]
    if tensors:
        torch.autograd.backward(tensors, [torch.ones_like(t) for t in tensors])
