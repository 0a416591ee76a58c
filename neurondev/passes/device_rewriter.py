"""DeviceRewriterPass: rewrite every non-target device argument of an FX graph to the target (XLA)."""

from __future__ import annotations

import copy
import dataclasses
import logging
from typing import Any

import torch
import torch.fx
from torch.fx.passes.infra.pass_base import PassBase, PassResult

from ..pins import Slot, device_slots, parse_target, slot_device

__all__ = ["DeviceRewriterPass", "Rewrite", "rewrite_copy"]

log = logging.getLogger("neurondev")


@dataclasses.dataclass(frozen=True)
class Rewrite:
    """One rewrite the pass made: node name, where the device sat, the old and the new value."""

    node: str
    location: str
    old: Any
    new: Any


class DeviceRewriterPass(PassBase):
    """Rewrite every device argument that is not on ``target`` to ``target``, keeping its format.

    A str stays a str, a ``torch.device`` stays a ``torch.device``, anything else (an int, which
    torch reads as a CUDA index) becomes the target str; an existing index is kept. ``None``,
    ``meta``, graph values and devices already of the target type are left alone. One pass over
    the nodes, O(n).

    ``rewrite_positional=False`` is exactly the documented algorithm: only ``device=`` kwargs.
    The default also rewrites positional devices: ``Tensor.to(dev)``, ``Tensor.to(dev, dtype)``,
    ``torch.device(...)`` nodes and ``.cpu()`` / ``.cuda()`` calls (which become ``.to(target)``).

    The pass edits the GraphModule it is given (as a pass in a pipeline does); use
    :func:`rewrite_copy` to keep the original. ``self.rewrites`` lists what the last call changed.
    """

    def __init__(self, target: str | torch.device = "xla", rewrite_positional: bool = True) -> None:
        super().__init__()
        self.target = parse_target(target)
        self.rewrite_positional = rewrite_positional
        self.rewrites: list[Rewrite] = []

    def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
        self.rewrites = []
        positional, slots_of = self.rewrite_positional, device_slots
        for node in graph_module.graph.nodes:
            slots = slots_of(node, positional)
            stale = [slot for slot in slots if self._needs_rewrite(node, slot)] if slots else None
            if stale:
                self._rewrite(node, stale)
        if self.rewrites:
            graph_module.recompile()  # deferred to the first call on dynamo's lazy GraphModules
            log.debug("DeviceRewriterPass rewrote %d device argument(s) to %s", len(self.rewrites), self.target)
        return PassResult(graph_module, bool(self.rewrites))

    def _needs_rewrite(self, node: torch.fx.Node, slot: Slot) -> bool:
        device_type = slot_device(node, slot).type
        return device_type != self.target.type and device_type != "meta"

    def _rewrite(self, node: torch.fx.Node, slots: list[Slot]) -> None:
        args, kwargs = list(node.args), dict(node.kwargs)
        for slot in slots:
            new = self._new_value(node, slot)
            if slot.location == "kwarg":
                kwargs["device"] = new
            elif slot.location == "method":
                node.target = "to"
                args = [args[0], new]
                kwargs.pop("device", None)
            else:
                args[int(slot.location[4:-1])] = new
            self.rewrites.append(Rewrite(node.name, slot.location, slot.value, new))
        node.args, node.kwargs = tuple(args), kwargs

    def _new_value(self, node: torch.fx.Node, slot: Slot) -> Any:
        if node.target is torch.device and len(node.args) > 1:
            return self.target.type  # torch.device('cuda', 1): the index stays in its own argument
        old = slot_device(node, slot)
        index = old.index if old.index is not None else self.target.index
        if isinstance(slot.value, torch.device) and slot.location != "method":
            return torch.device(self.target.type, index)
        return self.target.type if index is None else f"{self.target.type}:{index}"


def rewrite_copy(
    graph_module: torch.fx.GraphModule, *, target: str | torch.device = "xla", rewrite_positional: bool = True
) -> tuple[torch.fx.GraphModule, list[Rewrite]]:
    """Rewrite a deep copy of ``graph_module``; the original is untouched. Returns (copy, rewrites)."""
    rewriter = DeviceRewriterPass(target=target, rewrite_positional=rewrite_positional)
    result = rewriter(copy.deepcopy(graph_module))
    return result.graph_module, rewriter.rewrites
