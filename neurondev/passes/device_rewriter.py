"""DeviceRewriterPass: rewrite every non-target device argument of an FX graph to the target (XLA)."""

from __future__ import annotations

import dataclasses
import logging
import weakref
from typing import Any

import torch
import torch.fx
from torch.fx.passes.infra.pass_base import PassBase, PassResult

from neurondev.errors import InvalidOptionError, PassInvariantError
from neurondev.fx.devices import Slot, device_nodes, device_slots, graph_module_of, parse_target, rewritten_by, slot_device
from neurondev.fx.graphs import copy_graph
from neurondev.fx.subgraphs import subgraphs
from neurondev.passes.fake_meta import refresh_meta

__all__ = ["DeviceRewriterPass", "Rewrite", "RewriteResult", "rewrite_copy"]

log = logging.getLogger("neurondev")
_met: weakref.WeakKeyDictionary[torch.fx.GraphModule, list[torch.fx.Node]] = weakref.WeakKeyDictionary()  # call -> ensures, per graph


class RewriteResult(PassResult):
    """torch.fx's ``PassResult(graph_module, modified)``, carrying what the pass did: ``rewrites`` (one
    Rewrite per device argument changed) and ``meta_refreshed`` (node.meta's fake values propagated
    again: True; not possible here, no XLA runtime: False; nothing rewritten: None)."""

    rewrites: tuple[Rewrite, ...]
    meta_refreshed: bool | None

    def __new__(cls, graph_module: torch.fx.GraphModule, modified: bool, rewrites: tuple = (), meta_refreshed: bool | None = None):
        result = super().__new__(cls, graph_module, modified)
        result.rewrites = tuple(rewrites)
        result.meta_refreshed = meta_refreshed
        return result

    def __repr__(self) -> str:
        return f"RewriteResult(graph_module={type(self.graph_module).__name__}(), modified={self.modified}, rewrites={len(self.rewrites)})"


@dataclasses.dataclass(frozen=True)
class Rewrite:
    """One rewrite the pass made: node name, where the device sat, the old and the new value
    (``graph``/``part``: which graph, when several are rewritten, as in an Explanation)."""

    node: str
    location: str
    old: Any
    new: Any
    graph: int = 0
    part: str = "whole"


class DeviceRewriterPass(PassBase):
    """Rewrite every device argument that is not on ``target`` to ``target``, keeping its format.

    A str stays a str, a ``torch.device`` stays a ``torch.device``, anything else (an int, which
    torch reads as a CUDA index) becomes the target str. The index comes from the target alone: a
    foreign device's index (``cuda:1``) means nothing on XLA, so ``cuda:1`` becomes ``xla`` (or
    ``xla:0`` with ``target="xla:0"``). ``None``, ``meta``, graph values and devices already on the
    target are left alone; when the target names an index, ``xla:1`` is rewritten to it too.
    One pass over the nodes, O(n); the bodies that higher-order ops call (a custom
    ``autograd.Function``'s forward and backward, ``torch.cond``'s branches, checkpointed blocks)
    are rewritten too, their rewrites named with the body (``fwd_body_0.lo``).

    ``rewrite_positional=False`` is exactly the documented algorithm: only ``device=`` kwargs.
    The default also rewrites positional devices: ``Tensor.to(dev)``, ``Tensor.to(dev, dtype)``,
    ``torch.device(...)`` calls, ``.cpu()`` / ``.cuda()`` calls (which become ``.to(target)``) and
    the device type of ``torch.autocast`` (which becomes the target's type, ``'xla'``).

    ``keep_host_outputs`` (default: as ``rewrite_positional``) leaves a move to the host whose only
    user is the graph's output alone: ``return logits.cpu()`` hands results back on purpose.
    ``traced_on_meta``: the graph was traced on the meta device (a model too big to load), so
    ``meta`` is the traced device, rewritten like ``cpu`` in a CPU trace (otherwise meta is left alone).

    The fake tensors in ``node.meta['val']`` / ``['example_value']`` of the rewritten nodes, and of
    every node downstream of them, are propagated again so that later passes read the new device
    (see :mod:`neurondev.passes.fake_meta`). That needs the target's backend: for XLA the runtime
    is loaded first; where it cannot be (no torch_xla), ``meta_refreshed`` is False and node.meta
    keeps the traced devices (making a value there could abort the process).

    The pass edits the GraphModule it is given (as a pass in a pipeline does; an ExportedProgram's
    graph module likewise); use :func:`rewrite_copy` to keep the original. What it did is its result:
    a ``RewriteResult`` (a ``PassResult``) with ``rewrites`` and ``meta_refreshed``; the pass holds no
    state between calls, so it can run in a ``PassManager`` any number of times. ``ensures`` checks that
    no device argument the pass rewrites is left. Whether a device argument is a pin, and whether the
    pass rewrites it, is one rule (``neurondev.fx.devices.rewritten_by``), which the pin table's
    ``kwargs_pass`` and ``default_pass`` columns read too.
    """

    def __init__(
        self,
        target: str | torch.device = "xla",
        *,
        rewrite_positional: bool = True,
        keep_host_outputs: bool | None = None,
        traced_on_meta: bool = False,
    ) -> None:
        super().__init__()
        if not isinstance(rewrite_positional, bool):
            raise InvalidOptionError(
                f"rewrite_positional is True (also Tensor.to(dev), torch.device(...), .cpu()) or False "
                f"(the documented kwargs-only algorithm), got {rewrite_positional!r}"
            )
        if keep_host_outputs is not None and not isinstance(keep_host_outputs, bool):
            raise InvalidOptionError(f"keep_host_outputs is True, False or None (as rewrite_positional), got {keep_host_outputs!r}")
        self.target = parse_target(target)
        self.rewrite_positional = rewrite_positional
        self.keep_host_outputs = rewrite_positional if keep_host_outputs is None else keep_host_outputs
        self.traced_on_meta = bool(traced_on_meta)

    def __call__(self, graph_module: Any) -> RewriteResult:
        result = super().__call__(graph_module_of(graph_module, purpose="DeviceRewriterPass rewrites a traced graph, got"))
        assert isinstance(result, RewriteResult)  # PassBase returns what call() returns
        return result

    def call(self, graph_module: torch.fx.GraphModule) -> RewriteResult:
        rewrites: list[Rewrite] = []
        met: list[torch.fx.Node] = []
        rewritten = self._rewrite_graph(graph_module, "", rewrites, met)
        bodies = [(body, self._rewrite_graph(body.module, f"{body.name}.", rewrites, met)) for body in subgraphs(graph_module)]
        _met[graph_module] = met
        callers = {node for body, nodes in bodies if nodes for node in graph_module.graph.nodes if node.name in body.callers}
        meta_refreshed = None
        if rewrites:
            refreshed = [refresh_meta(body.module, nodes, self.target) for body, nodes in bodies if nodes]
            refreshed.append(refresh_meta(graph_module, [*rewritten, *callers], self.target))
            meta_refreshed = all(result is not None for result in refreshed)
            if not meta_refreshed:
                log.info("DeviceRewriterPass: %s is not loaded here, node.meta keeps the traced devices", self.target.type)
            for body, nodes in bodies:
                if nodes:
                    body.module.recompile()
            graph_module.recompile()  # deferred to the first call on dynamo's lazy GraphModules
            log.debug("DeviceRewriterPass rewrote %d device argument(s) to %s", len(rewrites), self.target)
        return RewriteResult(graph_module, bool(rewrites), tuple(rewrites), meta_refreshed)

    def ensures(self, graph_module: torch.fx.GraphModule) -> None:
        """No device argument this pass rewrites is left (in the graph and in the bodies it calls). Only
        nodes that had device arguments can hold one (the pass adds none): those ``call`` met are checked."""
        for node in _met.pop(graph_module, ()):
            if any(self._needs_rewrite(node, slot) for slot in device_slots(node, self.rewrite_positional)):
                raise PassInvariantError(f"DeviceRewriterPass left a device argument to rewrite at node {node.name}: {node.format_node()}")

    def _rewrite_graph(
        self, graph_module: torch.fx.GraphModule, prefix: str, rewrites: list[Rewrite], met: list[torch.fx.Node]
    ) -> list[torch.fx.Node]:
        """Rewrite one graph's nodes (``prefix`` names the body they are in); the nodes rewritten. ``met``
        gets every node with a device argument (``ensures`` checks those)."""
        rewritten = []
        for node, slots in device_nodes(graph_module.graph.nodes, self.rewrite_positional):
            met.append(node)
            stale = [slot for slot in slots if self._needs_rewrite(node, slot)]
            if stale:
                self._rewrite(node, stale, prefix, rewrites)
                rewritten.append(node)
        return rewritten

    def _needs_rewrite(self, node: torch.fx.Node, slot: Slot) -> bool:
        return rewritten_by(
            node,
            slot,
            slot_device(node, slot),
            self.target,
            positional=self.rewrite_positional,
            keep_host_outputs=self.keep_host_outputs,
            traced_on_meta=self.traced_on_meta,
        )

    def _rewrite(self, node: torch.fx.Node, slots: list[Slot], prefix: str, rewrites: list[Rewrite]) -> None:
        if node.target is torch.device:
            rewrites.append(self._rewrite_device_call(node, slots[0], prefix))
            return
        args, kwargs = list(node.args), dict(node.kwargs)
        for slot in slots:
            new = self._new_value(slot)
            if slot.kind == "kwarg":
                kwargs["device"] = new
            elif slot.kind == "method":
                node.target = "to"
                args = [args[0], new]
                kwargs.pop("device", None)
            else:
                args[slot.position] = new
            rewrites.append(Rewrite(prefix + node.name, slot.location, slot.value, new))
        node.args, node.kwargs = tuple(args), kwargs

    def _rewrite_device_call(self, node: torch.fx.Node, slot: Slot, prefix: str = "") -> Rewrite:
        """``torch.device('cuda', 1)`` / ``torch.device(type='cpu', index=0)``: type and index both
        come from the target, in the form the call was written in."""
        new = self._new_value(slot)
        kwargs = {k: v for k, v in node.kwargs.items() if k not in ("type", "index")}
        if slot.kind == "arg":
            node.args, node.kwargs = (new,), kwargs
        else:  # torch.device(type='xla:0') is refused: the keyword form takes the index apart
            new = self.target.type
            index = {} if self.target.index is None else {"index": self.target.index}
            node.args, node.kwargs = (), {**kwargs, "type": new, **index}
        return Rewrite(prefix + node.name, slot.location, slot.value, new)

    def _new_value(self, slot: Slot) -> Any:
        if slot.kind == "type":
            return self.target.type
        if isinstance(slot.value, torch.device) and slot.kind != "method":
            return self.target
        return str(self.target)


def rewrite_copy(
    graph_module: Any,
    *,
    target: str | torch.device = "xla",
    rewrite_positional: bool = True,
    keep_host_outputs: bool | None = None,
    traced_on_meta: bool = False,
) -> tuple[torch.fx.GraphModule, list[Rewrite]]:
    """Rewrite a deep copy of ``graph_module`` (or of an ExportedProgram's graph module); the original
    is untouched. Returns (rewritten GraphModule, rewrites)."""
    original = graph_module_of(graph_module, purpose="rewrite_copy copies and rewrites a traced graph, got")
    rewriter = DeviceRewriterPass(
        target, rewrite_positional=rewrite_positional, keep_host_outputs=keep_host_outputs, traced_on_meta=traced_on_meta
    )
    result = rewriter(copy_graph(original))
    return result.graph_module, list(result.rewrites)
