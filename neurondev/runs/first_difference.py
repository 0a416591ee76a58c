"""Where XLA first differs from CPU in one graph: the first node whose value differs while its inputs agree.

Run only when a graph's outputs already differ. The graph runs node by node on CPU and on XLA with
the same inputs and seed; each node's value is kept (a copy: later nodes may write into it), the
XLA side executes once at the end, and the values are compared in graph order until one differs.
Every earlier node agreed, so that node's inputs agree: its own computation is where XLA departs.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterable
from typing import Any

import torch
import torch.fx

from neurondev._compat.fx_internals import tree_flatten, tree_leaves, tree_map, tree_unflatten
from neurondev.fx.devices import function_name
from neurondev.fx.graphs import copy_graph
from neurondev.fx.modules import module_path
from neurondev.rulebook import Ruled
from neurondev.runs.interface import Driver
from neurondev.runs.placement import to_device
from neurondev.runs.values import Comparison, compare_outputs
from neurondev.trace.source import Located, SourceLine, source_of

__all__ = ["NodeDifference", "first_difference"]


@dataclasses.dataclass(frozen=True)
class NodeDifference(Located, Ruled):
    """The first node of graph ``graph`` whose value on XLA differs from its value on CPU while its
    inputs agree: its name, what it calls, the module it was traced in, the figures and its line."""

    RECORD = "node difference"

    graph: int
    node: str
    function: str
    module: str
    comparison: Comparison
    source: SourceLine | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "graph": self.graph,
            "node": self.node,
            "function": self.function,
            "module": self.module,
            **self.source_dict(),
            "comparison": self.comparison.to_dict(),
        }


def first_difference(
    cpu_graph: torch.fx.GraphModule,
    xla_graph: torch.fx.GraphModule,
    inputs: tuple[Any, ...],
    *,
    driver: Driver,
    graph: int = 0,
    keep_on_host: Iterable[int] = (),
    seed: int | None = None,
    rtol: float | None = None,
    atol: float | None = None,
) -> NodeDifference | None:
    """The first node of ``xla_graph`` (run on XLA) whose value differs from the same node of
    ``cpu_graph`` (the same graph with its devices pointed at CPU); None when every node agrees."""
    host = frozenset(keep_on_host)
    device = driver.device()
    with torch.no_grad():
        on_cpu = _values(copy_graph(cpu_graph), to_device(inputs, torch.device("cpu")), seed, None)
        placed = [to_device([v], torch.device("cpu") if i in host else device)[0] for i, v in enumerate(inputs)]
        on_xla = _values(copy_graph(xla_graph).to(device), placed, seed, driver)
        driver.sync()
    for node in xla_graph.graph.nodes:
        if node.op not in ("call_function", "call_method", "call_module") or node.name not in on_cpu or node.name not in on_xla:
            continue
        comparison = compare_outputs(_in_dtypes_of(on_xla[node.name], on_cpu[node.name]), on_cpu[node.name], rtol=rtol, atol=atol)
        if not comparison.matches:
            return NodeDifference(graph, node.name, function_name(node), module_path(node), comparison, source_of(node))
    return None


def _in_dtypes_of(actual: Any, expected: Any) -> Any:
    """``actual`` with each tensor in the dtype of ``expected``'s: values only (a mask XLA keeps as
    bool where CPU made int64 holds the same numbers), compared at the tolerances of CPU's dtype."""
    leaves, spec = tree_flatten(actual)
    others = tree_leaves(expected)
    if len(leaves) != len(others):
        return actual
    alike = [
        a.to(e.dtype) if isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor) and a.dtype != e.dtype else a
        for a, e in zip(leaves, others)
    ]
    return tree_unflatten(alike, spec)


class _Keeping(torch.fx.Interpreter):
    """Runs a graph and keeps a copy of every tensor value it makes, by node name."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        super().__init__(gm)
        self.kept: dict[str, Any] = {}

    def run_node(self, node: torch.fx.Node) -> Any:
        value = super().run_node(node)
        if any(isinstance(leaf, torch.Tensor) for leaf in tree_leaves(value)):
            self.kept[node.name] = tree_map(lambda v: v.detach().clone() if isinstance(v, torch.Tensor) else v, value)
        return value


def _values(gm: torch.fx.GraphModule, inputs: list[Any], seed: int | None, driver: Driver | None) -> dict[str, Any]:
    """Every node's value (copies), or the values up to the node where the run failed (``driver``: on its
    device, its generator seeded too; None: on CPU)."""
    if seed is not None:
        driver.seed(seed) if driver is not None else torch.manual_seed(seed)
    keeping = _Keeping(gm)
    with contextlib.suppress(Exception):  # the values up to a failure still tell where the two first part
        keeping.run(*inputs)
    return keeping.kept
