"""ATen kernels a CPU trace picks for the CPU: on XLA they fall back to the host, whatever the devices say."""

from __future__ import annotations

import dataclasses
import re

import torch.fx

from neurondev._compat.fx_internals import OpOverload, OpOverloadPacket
from neurondev.rulebook import Ruled
from neurondev.trace.source import Located, SourceLine, source_of

__all__ = ["CpuKernel", "cpu_kernels"]

_CPU_KERNEL = re.compile(r"(_for_cpu|_cpu)(\.|$)")


@dataclasses.dataclass(frozen=True)
class CpuKernel(Located, Ruled):
    """A node that calls an ATen kernel chosen for the CPU while tracing (at ATen level a CPU trace
    picks ``aten._scaled_dot_product_flash_attention_for_cpu``); no device rewrite changes it."""

    RECORD = "cpu kernel"

    graph: int
    part: str
    node: str
    function: str
    source: SourceLine | None

    def to_dict(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "graph": self.graph,
            "part": self.part,
            "node": self.node,
            "function": self.function,
            "where": self.where,
            "code": self.code,
        }


def cpu_kernels(gm: torch.fx.GraphModule, *, graph: int = 0, part: str = "whole") -> list[CpuKernel]:
    """The nodes of ``gm`` that call an ATen kernel specialised for the CPU."""
    return [
        CpuKernel(graph, part, node.name, str(node.target), source_of(node))
        for node in gm.graph.nodes
        if node.op == "call_function" and isinstance(node.target, (OpOverload, OpOverloadPacket)) and _CPU_KERNEL.search(str(node.target))
    ]
