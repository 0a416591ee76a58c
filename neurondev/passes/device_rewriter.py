"""DeviceRewriterPass: rewrite every non-target device argument of an FX graph to the target (XLA)."""

from __future__ import annotations

import dataclasses
import logging
import operator
from collections.abc import Iterable, Iterator
from typing import Any

import torch
import torch.fx
from torch.fx.passes.infra.pass_base import PassBase, PassResult

from neurondev.errors import InvalidOptionError, PassInvariantError
from neurondev.fx.devices import Slot, device_nodes, graph_module_of, parse_target, rewritten_by, slot_device
from neurondev.fx.graphs import copy_graph
from neurondev.fx.subgraphs import subgraphs
from neurondev.passes.fake_meta import refresh_meta

__all__ = ["DeviceRewriterPass", "Rewrite", "RewriteResult", "rewrite_copy", "rewrites_of"]

log = logging.getLogger("neurondev")
REWRITES_KEY = "neurondev_rewrites"  # graph_module.meta: every Rewrite the pass made in this graph, in order


class RewriteResult(PassResult):
    """torch.fx's ``PassResult(graph_module, modified)``, an immutable named tuple, with two more fields:
    ``rewrites`` (one Rewrite per device argument changed) and ``meta_refreshed`` (node.meta's fake values
    propagated again: True; not possible here, no XLA runtime: False; nothing rewritten: None).

    A value like torch.fx's: no attribute can be set, ``_replace`` keeps every field and ``==`` compares
    them all. A ``PassManager`` hands back a plain ``PassResult``: the rewrites stay readable from the
    graph itself (``rewrites_of(result.graph_module)``)."""

    __slots__ = ()
    _fields = ("graph_module", "modified", "rewrites", "meta_refreshed")  # type: ignore[assignment]  # torch.fx's two fields, and two more

    def __new__(
        cls, graph_module: torch.fx.GraphModule, modified: bool, rewrites: Iterable[Rewrite] = (), meta_refreshed: bool | None = None
    ) -> RewriteResult:
        return tuple.__new__(cls, (graph_module, modified, tuple(rewrites), meta_refreshed))

    rewrites = property(operator.itemgetter(2), doc="One Rewrite per device argument changed.")
    meta_refreshed = property(
        operator.itemgetter(3), doc="node.meta propagated again (True), not possible here (False), or nothing to do (None)."
    )

    @classmethod
    def _make(cls, iterable: Iterable[Any]) -> RewriteResult:  # type: ignore[override]  # four fields, not two
        return cls(*iterable)

    def _replace(self, **changes: Any) -> RewriteResult:
        unknown = set(changes) - set(self._fields)
        if unknown:
            raise ValueError(f"RewriteResult has no field(s) {sorted(unknown)}: its fields are {list(self._fields)}")
        return self._make(changes.get(name, value) for name, value in zip(self._fields, self))

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self))

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return f"RewriteResult(graph_module={type(self.graph_module).__name__}(), modified={self.modified}, rewrites={len(self.rewrites)})"


def rewrites_of(graph_module: torch.fx.GraphModule) -> tuple[Rewrite, ...]:
    """Every Rewrite DeviceRewriterPass made in ``graph_module`` (and the bodies it calls), read from the
    graph: what a ``PassManager``'s plain ``PassResult`` no longer carries."""
    return tuple(graph_module.meta.get(REWRITES_KEY, ()))


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


@dataclasses.dataclass(frozen=True, eq=False)
class _Step:
    """One node to rewrite: the body it is in (None: the graph itself), its stale slots and the rewrites they become."""

    body: Any
    node: torch.fx.Node
    slots: tuple[Slot, ...]
    rewrites: tuple[Rewrite, ...]


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
    graph module likewise); use :func:`rewrite_copy` to keep the original. ``plan(gm)`` says what it would
    rewrite without touching the graph; ``call`` applies that plan. What it did is its result: a
    ``RewriteResult`` (a ``PassResult`` named tuple) with ``rewrites`` and ``meta_refreshed``, and the graph
    keeps its rewrites too (``rewrites_of(gm)``: a ``PassManager`` returns a plain PassResult). The pass holds
    no state between calls, so it can run in a ``PassManager`` any number of times. ``ensures`` reads the
    graph it is given again: no device argument the pass rewrites is left. Whether a device argument is a pin, and whether the
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

    def plan(self, graph_module: torch.fx.GraphModule) -> tuple[Rewrite, ...]:
        """What ``call`` would rewrite in ``graph_module`` and the bodies it calls, in order; the graph is not touched."""
        return tuple(rewrite for step in self._steps(graph_module) for rewrite in step.rewrites)

    def call(self, graph_module: torch.fx.GraphModule) -> RewriteResult:
        steps = self._steps(graph_module)
        for step in steps:
            self._apply(step)
        rewrites = tuple(rewrite for step in steps for rewrite in step.rewrites)
        meta_refreshed = self._refresh(graph_module, steps) if rewrites else None
        if rewrites:
            graph_module.meta[REWRITES_KEY] = rewrites_of(graph_module) + rewrites
            log.debug("DeviceRewriterPass rewrote %d device argument(s) to %s", len(rewrites), self.target)
        return RewriteResult(graph_module, bool(rewrites), rewrites, meta_refreshed)

    def ensures(self, graph_module: torch.fx.GraphModule) -> None:
        """No device argument this pass rewrites is left in ``graph_module`` or the bodies it calls (read again from the graph)."""
        left = next(iter(self._steps(graph_module)), None)
        if left is not None:
            raise PassInvariantError(
                f"DeviceRewriterPass left a device argument to rewrite at node {left.node.name}: {left.node.format_node()}"
            )

    # --- the plan: which node, which slots, what they become ------------------------------------
    def _steps(self, graph_module: torch.fx.GraphModule) -> list[_Step]:
        steps = list(self._graph_steps(graph_module, None))
        for body in subgraphs(graph_module):
            steps += self._graph_steps(body.module, body)
        return steps

    def _graph_steps(self, graph_module: torch.fx.GraphModule, body: Any) -> Iterator[_Step]:
        prefix = "" if body is None else f"{body.name}."
        for node, slots in device_nodes(graph_module.graph.nodes, self.rewrite_positional):
            stale = tuple(slot for slot in slots if self._needs_rewrite(node, slot))
            if stale:
                yield _Step(body, node, stale, self._rewrites(node, stale, prefix))

    def _rewrites(self, node: torch.fx.Node, slots: tuple[Slot, ...], prefix: str) -> tuple[Rewrite, ...]:
        if node.target is torch.device:  # one rewrite: type and index both come from the target
            slot = slots[0]
            new = self._new_value(slot) if slot.kind == "arg" else self.target.type
            return (Rewrite(prefix + node.name, slot.location, slot.value, new),)
        return tuple(Rewrite(prefix + node.name, slot.location, slot.value, self._new_value(slot)) for slot in slots)

    # --- applying it ------------------------------------------------------------------------------
    def _apply(self, step: _Step) -> None:
        node = step.node
        if node.target is torch.device:
            self._rewrite_device_call(node, step.slots[0])
            return
        args, kwargs = list(node.args), dict(node.kwargs)
        for slot, rewrite in zip(step.slots, step.rewrites):
            if slot.kind == "kwarg":
                kwargs["device"] = rewrite.new
            elif slot.kind == "method":
                node.target = "to"
                args = [args[0], rewrite.new]
                kwargs.pop("device", None)
            else:
                args[slot.position] = rewrite.new
        node.args, node.kwargs = tuple(args), kwargs

    def _refresh(self, graph_module: torch.fx.GraphModule, steps: list[_Step]) -> bool:
        """Propagate node.meta's fake values again downstream of the rewritten nodes (and of the nodes
        calling a rewritten body), then regenerate each changed graph's code."""
        bodies: dict[int, tuple[Any, list[torch.fx.Node]]] = {}
        top = [step.node for step in steps if step.body is None]
        for step in steps:
            if step.body is not None:
                bodies.setdefault(id(step.body.module), (step.body, []))[1].append(step.node)
        callers = [node for body, _ in bodies.values() for node in graph_module.graph.nodes if node.name in body.callers]
        refreshed = [refresh_meta(body.module, nodes, self.target) for body, nodes in bodies.values()]
        refreshed.append(refresh_meta(graph_module, [*top, *callers], self.target))
        if not all(result is not None for result in refreshed):
            log.info("DeviceRewriterPass: %s is not loaded here, node.meta keeps the traced devices", self.target.type)
        for body, _ in bodies.values():
            body.module.recompile()
        graph_module.recompile()  # deferred to the first call on dynamo's lazy GraphModules
        return all(result is not None for result in refreshed)

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

    def _rewrite_device_call(self, node: torch.fx.Node, slot: Slot) -> None:
        """``torch.device('cuda', 1)`` / ``torch.device(type='cpu', index=0)``: type and index both
        come from the target, in the form the call was written in."""
        kwargs = {k: v for k, v in node.kwargs.items() if k not in ("type", "index")}
        if slot.kind == "arg":
            node.args, node.kwargs = (self._new_value(slot),), kwargs
        else:  # torch.device(type='xla:0') is refused: the keyword form takes the index apart
            index = {} if self.target.index is None else {"index": self.target.index}
            node.args, node.kwargs = (), {**kwargs, "type": self.target.type, **index}

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
) -> tuple[torch.fx.GraphModule, tuple[Rewrite, ...]]:
    """Rewrite a deep copy of ``graph_module`` (or of an ExportedProgram's graph module); the original
    is untouched. Returns (rewritten GraphModule, rewrites), the rewrites a tuple as every record's are."""
    original = graph_module_of(graph_module, purpose="rewrite_copy copies and rewrites a traced graph, got")
    rewriter = DeviceRewriterPass(
        target, rewrite_positional=rewrite_positional, keep_host_outputs=keep_host_outputs, traced_on_meta=traced_on_meta
    )
    result = rewriter(copy_graph(original))
    return result.graph_module, tuple(result.rewrites)
