"""Fixtures for neurondev's tests, benchmarks and notebooks; not public API.

Synthetic graphs (``long_graph``), small random-weight models (``tiny_gpt2``, ``tiny_llama``), the oracle that
turns an Explanation into a gallery ``Outcome`` (``outcome_of``), and a harness that runs a graph
through torch_xla's own openxla bridge to compare its constructor mover with neurondev's
(``bridge_report``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
import torch.fx

from neurondev._compat.dynamo import make_boxed_func
from neurondev._compat.fx_internals import tree_leaves
from neurondev._compat.torch_xla_hooks import extract_compiled_graph
from neurondev.fx.graphs import copy_graph
from neurondev.gallery.catalogue import Outcome
from neurondev.gallery.models import tiny_gpt2, tiny_llama
from neurondev.integrations.backend import backend
from neurondev.runs.placement import to_device
from neurondev.xla import counters, runtime

if TYPE_CHECKING:
    from neurondev.report.model import ExplanationData

__all__ = ["BridgeReport", "bridge_report", "long_graph", "observed_openxla", "outcome_of", "tiny_gpt2", "tiny_llama"]


def long_graph(nodes: int, *, pins: int = 3) -> torch.fx.GraphModule:
    """A synthetic chain of ``nodes`` relus with ``pins`` evenly spaced ``torch.zeros(4, device='cpu')``
    added in: for drawing and timing large graphs (built with torch.fx, never traced)."""
    graph = torch.fx.Graph()
    value = graph.placeholder("x")
    pinned = {nodes * (k + 1) // (pins + 1) for k in range(pins)}
    for i in range(nodes):
        if i in pinned:
            value = graph.call_function(torch.add, (value, graph.call_function(torch.zeros, (4,), {"device": "cpu"})))
        else:
            value = graph.call_function(torch.relu, (value,))
    graph.output(value)
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def outcome_of(explanation: ExplanationData) -> Outcome:
    """The Outcome an Explanation measured, to compare with an example's stored one."""
    before, after = explanation.before, explanation.after
    failed = next((r.error.node for r in before if r.error is not None), None)
    return Outcome(
        pins=tuple((pin.function, pin.location, pin.kind) for pin in explanation.pins),
        breaks_before=tuple(b.node for r in before for b in r.graph_breaks),
        fails_at=failed,
        uploads_before=tuple(u.node for r in before for u in r.uploads),
        uploads_after=tuple(u.node for r in after for u in r.uploads),
        outputs_equal=explanation.rewrite_preserves_values is not False and explanation.xla_matches_cpu is True,
    )


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
    from neurondev._compat.dynamo import aot_autograd

    def forward_compiler(model: torch.fx.GraphModule, fake_inputs: list) -> Callable:
        compiled = None

        def forward(*args: Any) -> Any:
            nonlocal compiled
            if compiled is None:
                compiled = extract_compiled_graph(model, args)
                seen.append(compiled)
            return compiled(*args)

        return make_boxed_func(forward)

    return aot_autograd(fw_compiler=forward_compiler)


def bridge_report(gm: torch.fx.GraphModule, *inputs: Any, rewrite: bool) -> BridgeReport:
    """Compile a copy of ``gm`` with openxla (``rewrite=False``: its own XLAConstructorMoverPass only)
    or with the neurondev backend (``rewrite=True``), run it once on XLA copies of ``inputs``.

    The bridge clears torch_xla's counters while it probes nodes; the user's counts are given back.
    """
    device = runtime.device()
    seen: list[torch.fx.GraphModule] = []
    inner = observed_openxla(seen)
    device_inputs = to_device(inputs, device)
    report = BridgeReport("neurondev" if rewrite else "openxla")
    graph = copy_graph(gm)
    try:
        with counters.keep_counters():
            compiled = backend(graph, device_inputs, inner=inner, target=device) if rewrite else inner(graph, device_inputs)
            report.outputs = compiled(*device_inputs)
            counters.sync()
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
    report.output_devices = [str(t.device) for t in tree_leaves(report.outputs) if isinstance(t, torch.Tensor)]
