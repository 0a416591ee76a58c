"""What torch_xla's dynamo bridge (the openxla backend) makes of a graph: XLA partitions, fallbacks, outputs."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Callable

import torch
import torch.fx
import torch.utils._pytree as pytree

from neurondev import xla
from neurondev.integrations.backend import backend

__all__ = ["BridgeReport", "bridge_report", "observed_openxla"]


@dataclasses.dataclass
class BridgeReport:
    """One graph through the openxla bridge: how many XLA partitions it became and which nodes fell out.

    ``fallback_nodes`` are the nodes the bridge runs outside every XLA partition (its "fallback
    ops": nodes with CPU fallbacks or non-XLA tensors). ``error`` is set when the bridge failed.
    """

    backend: str
    partitions: int = 0
    fallback_nodes: list[str] = dataclasses.field(default_factory=list)
    output_devices: list[str] = dataclasses.field(default_factory=list)
    error: str | None = None
    outputs: Any = dataclasses.field(default=None, repr=False)


def observed_openxla(seen: list[torch.fx.GraphModule]) -> Callable:
    """torch's openxla backend (aot_autograd, then torch_xla's bridge on the first call), recording
    each graph the bridge returns in ``seen``; it compiles exactly as ``backend="openxla"`` does."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    def forward_compiler(model: torch.fx.GraphModule, fake_inputs: list) -> Callable:
        compiled = None

        def forward(*args: Any) -> Any:
            nonlocal compiled
            if compiled is None:
                import torch_xla.core.dynamo_bridge as bridge

                compiled = bridge.extract_compiled_graph(model, args)
                seen.append(compiled)
            return compiled(*args)

        return make_boxed_func(forward)

    return aot_autograd(fw_compiler=forward_compiler)


def bridge_report(gm: torch.fx.GraphModule, *inputs: Any, rewrite: bool) -> BridgeReport:
    """Compile a copy of ``gm`` with openxla (``rewrite=False``: its own XLAConstructorMoverPass only)
    or with the neurondev backend (``rewrite=True``), run it once on XLA copies of ``inputs``.

    The bridge clears torch_xla's counters while it probes nodes; the user's counts are given back.
    """
    device = xla.device()
    seen: list[torch.fx.GraphModule] = []
    inner = observed_openxla(seen)
    device_inputs = xla.to_device(inputs, device)
    report = BridgeReport("neurondev" if rewrite else "openxla")
    graph = copy.deepcopy(gm)
    try:
        with xla.keep_counters():
            compiled = backend(graph, device_inputs, inner=inner, target=device) if rewrite else inner(graph, device_inputs)
            report.outputs = compiled(*device_inputs)
            xla.sync()
    except Exception as error:
        report.error = f"{type(error).__name__}: {str(error).splitlines()[0]}"
        return report
    _describe(report, seen[-1])
    return report


def _describe(report: BridgeReport, compiled: Any) -> None:
    if isinstance(compiled, torch.fx.GraphModule):
        calls = [node for node in compiled.graph.nodes if node.op in ("call_function", "call_method", "call_module")]
        fused = [node for node in calls if "optimized_mod" in node.name]
        report.partitions = len(fused)
        report.fallback_nodes = [node.name for node in calls if node not in fused and "getitem" not in node.name]
    else:
        report.partitions = 1  # the bridge compiled the whole graph as one XLA computation
    report.output_devices = [str(t.device) for t in pytree.tree_leaves(report.outputs) if isinstance(t, torch.Tensor)]
