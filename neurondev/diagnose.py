"""diagnose(): one table row per device pin across the graphs of a capture."""

from __future__ import annotations

import dataclasses
from typing import Union

import torch
import torch.fx

from ._optional import require
from .capture import Capture
from .pins import DevicePin, find_pins

__all__ = ["COLUMNS", "diagnose", "graphs_of"]

COLUMNS = tuple(field.name for field in dataclasses.fields(DevicePin))


def graphs_of(subject: Union[torch.fx.GraphModule, Capture, list]) -> list[torch.fx.GraphModule]:
    """The graphs of a GraphModule, a Capture or a list of GraphModules."""
    if isinstance(subject, torch.fx.GraphModule):
        return [subject]
    if isinstance(subject, Capture):
        return subject.graphs
    if isinstance(subject, (list, tuple)) and all(isinstance(g, torch.fx.GraphModule) for g in subject):
        return list(subject)
    raise TypeError(f"diagnose takes a torch.fx.GraphModule or a neurondev Capture, got {type(subject).__name__}")


def diagnose(subject: Union[torch.fx.GraphModule, Capture, list], target: str | torch.device = "xla"):
    """A pandas.DataFrame with one row per device pin not already on ``target``, across all graphs.

    A pin is a ``device=`` kwarg (``torch.empty/zeros/arange/tensor(device=...)``, ``Tensor.to(device=...)``,
    ``new_*``) or a positional device (``Tensor.to(dev)``, ``Tensor.to(dev, dtype)``,
    ``torch.device(...)`` nodes, ``.cpu()`` / ``.cuda()``). ``device=None`` is not a pin.

    Columns:
      graph         index of the graph in the capture
      node          FX node name
      op            FX op: call_function or call_method
      target        what the node calls, readable: torch.empty, Tensor.to, aten.empty.memory_format
      device        the pinned device as written in the graph
      format        how it is written: str, torch.device, int, other
      location      where it sits: kwarg, arg[i], or method (.cpu()/.cuda())
      kwargs_pass   whether the documented kwargs-only DeviceRewriterPass rewrites it
      default_pass  whether the default DeviceRewriterPass rewrites it (False only for meta)
      kind          frozen (from a tensor's .device), literal, variable or unknown, judged from the source
      file, line    the user's source location (from the node's stack trace)
      code          the source statement
      users         names of the nodes that use the node's value
    """
    pandas = require("pandas", purpose="the table of device pins")
    rows = [
        dataclasses.asdict(pin)
        for index, graph in enumerate(graphs_of(subject))
        for pin in find_pins(graph, target=target, graph=index)
    ]
    return pandas.DataFrame(rows, columns=list(COLUMNS))
