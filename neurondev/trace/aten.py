"""ATen-level graphs: record what aot_autograd compiles (forward and backward) with their real inputs."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch
import torch.fx
import torch.utils._pytree as pytree

__all__ = ["AtenGraph", "AtenRecorder", "run_backward"]


@dataclasses.dataclass
class AtenGraph:
    """One graph aot_autograd made from dynamo graph ``dynamo_graph``: its ``forward`` or ``backward``.

    ``inputs`` are copies of the real CPU tensors it was first called with while tracing (for the
    forward: parameters and inputs; for the backward: saved activations and the output gradients),
    so the graph can be run again elsewhere.
    """

    dynamo_graph: int
    kind: str
    graph_module: torch.fx.GraphModule
    inputs: list[Any] = dataclasses.field(default_factory=list, repr=False)


class AtenRecorder:
    """Compiles each dynamo graph with aot_autograd, keeping every forward/backward graph it makes;
    the graphs run as they are (eagerly, node by node) on CPU while the function is traced."""

    def __init__(self) -> None:
        self.graphs: list[AtenGraph] = []

    def compile(self, index: int, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable:
        from torch._dynamo.backends.common import aot_autograd

        return aot_autograd(fw_compiler=self._compiler(index, "forward"), bw_compiler=self._compiler(index, "backward"))(
            gm, example_inputs
        )

    def _compiler(self, index: int, kind: str) -> Callable:
        def compile_graph(gm: torch.fx.GraphModule, fake_inputs: list[Any]) -> Callable:
            entry = AtenGraph(index, kind, gm)
            self.graphs.append(entry)

            def run(args: list[Any]) -> Any:
                if not entry.inputs:
                    entry.inputs = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
                return gm(*args)

            run._boxed_call = True  # aot_autograd's calling convention: one list of arguments
            return run

        return compile_graph


def run_backward(output: Any) -> None:
    """Run the backward of every output that requires grad (ones as gradients), so that aot_autograd
    compiles, and the recorder sees, the backward graphs. Acts on the traced copies only."""
    tensors = [t for t in pytree.tree_leaves(output) if isinstance(t, torch.Tensor) and t.requires_grad]
    if tensors:
        torch.autograd.backward(tensors, [torch.ones_like(t) for t in tensors])
