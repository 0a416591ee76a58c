"""The user's line drawn on a node: the one its records hold (pin first, then the run's findings)."""

from __future__ import annotations

from collections.abc import Iterable

import torch.fx

from neurondev.fx.pins import DevicePin
from neurondev.fx.subgraphs import owner_of
from neurondev.runs.run_records import Fallback, GraphBreak, HostCopy, RunError, RunRecord, Upload
from neurondev.trace.source import SourceLine, source_of

__all__ = ["node_sources", "source_drawn"]


def node_sources(gm: torch.fx.GraphModule, pins: Iterable[DevicePin], record: RunRecord | None) -> dict[str, SourceLine]:
    """The user's line of each node of ``gm`` a record names, as that record holds it: a pin's own
    ``source`` (the line the pin table shows, an autocast's too) before the run's failure, breaks,
    copies to the host, uploads and fallbacks at that node. A pin inside a body a higher-order op
    calls is drawn on the node calling it."""
    found: dict[str, SourceLine] = {}
    if record is not None:
        located: list[RunError | GraphBreak | HostCopy | Upload | Fallback] = [record.error] if record.error is not None else []
        located += [*record.graph_breaks, *record.host_copies, *record.uploads, *record.fallbacks]
        for item in located:
            if item.source is not None and item.node:  # a fallback between graphs has no node
                found.setdefault(item.node, item.source)
    for pin in pins:
        owner = owner_of(gm, pin.node)
        if owner is not None and pin.source is not None:
            found[owner] = pin.source
    return found


def source_drawn(node: torch.fx.Node, sources: dict[str, SourceLine]) -> SourceLine | None:
    """The line drawn on ``node``: its record's, else the line the tracer left on the node."""
    return sources.get(node.name) or source_of(node)
