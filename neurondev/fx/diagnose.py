"""diagnose(): one table row per device pin across the graphs of a capture."""

from __future__ import annotations

import dataclasses
from typing import Any, Union

import torch
import torch.fx

from neurondev._optional import require
from neurondev.trace.capture import Capture
from neurondev.fx.pins import DevicePin, find_pins, graph_module_of, parse_target

__all__ = ["COLUMNS", "diagnose", "graphs_of"]

COLUMNS = tuple(field.name for field in dataclasses.fields(DevicePin))


def graphs_of(subject: Any) -> list[torch.fx.GraphModule]:
    """The graphs of a GraphModule, an ExportedProgram, a Capture or a list of GraphModules."""
    if isinstance(subject, Capture):
        return subject.graphs
    if isinstance(subject, (list, tuple)):
        return [
            graph_module_of(item, purpose=f"element [{index}] of the list given to diagnose is", also=_ALSO)
            for index, item in enumerate(subject)
        ]
    return [graph_module_of(subject, purpose="diagnose reads traced graphs, got", also=_ALSO)]


_ALSO = " (or a neurondev Capture: neurondev.capture(fn, x), or a list of graphs)"


def _notes(subject: Any) -> list[str]:
    items = subject if isinstance(subject, (list, tuple)) else [subject]
    return [
        f"graph {index} is the graph module of a torch.export.ExportedProgram: its parameters and buffers "
        "are inputs (placeholders), and aten._assert_tensor_metadata checks are listed with kind 'assertion'"
        for index, item in enumerate(items)
        if isinstance(item, torch.export.ExportedProgram)
    ]


def diagnose(subject: Union[torch.fx.GraphModule, Capture, list, Any], target: str | torch.device = "xla"):
    """A pandas.DataFrame with one row per device pin not already on ``target``, across all graphs.

    A pin is a ``device=`` kwarg (``torch.empty/zeros/arange/tensor(device=...)``, ``Tensor.to(device=...)``,
    ``new_*``) or a positional device (``Tensor.to(dev)``, ``Tensor.to(dev, dtype)``,
    ``torch.device(...)`` nodes, ``.cpu()`` / ``.cuda()``). ``device=None`` is not a pin. When the
    target names an index (``xla:0``), a device with another index (``xla:1``) is a pin too.

    ``subject`` is a GraphModule, a torch.export.ExportedProgram, a Capture or a list of graphs;
    ``table.attrs["notes"]`` says what to keep in mind about it (an exported program's inputs).

    Columns:
      graph         index of the graph in the capture
      node          FX node name
      op            FX op: call_function or call_method
      target        what the node calls, readable: torch.empty, Tensor.to, aten.empty.memory_format
      device        the pinned device as written in the graph
      format        how it is written: str, torch.device, int, other
      location      where it sits: kwarg, arg[i], kwarg[type] (torch.device(type=...)), or method (.cpu()/.cuda())
      kwargs_pass   whether the documented kwargs-only DeviceRewriterPass rewrites it
      default_pass  whether the default DeviceRewriterPass rewrites it (False only for meta)
      kind          frozen (from a tensor's .device), literal, variable or unknown, judged from the source;
                    assertion for torch.export's aten._assert_tensor_metadata (a check, not a placement)
      file, line    the user's source location (from the node's stack trace)
      code          the source statement
      users         names of the nodes that use the node's value
    """
    graphs = graphs_of(subject)
    parse_target(target)
    pandas = require("pandas", purpose="the table of device pins")
    rows = [
        dataclasses.asdict(pin)
        for index, graph in enumerate(graphs)
        for pin in find_pins(graph, target=target, graph=index)
    ]
    table = pandas.DataFrame(rows, columns=list(COLUMNS))
    table.attrs["notes"] = _notes(subject)
    return table
