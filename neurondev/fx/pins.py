"""Device pins: device arguments of an FX graph that are not on the target device, and their table."""

from __future__ import annotations

import dataclasses
import functools
import linecache
from collections.abc import Iterable, Iterator
from typing import Any

import torch
import torch.fx

from neurondev.fx.devices import (
    Slot,
    device_format,
    device_nodes,
    function_name,
    graph_module_of,
    is_assertion,
    is_output_transfer,
    is_pin,
    parse_target,
    rewritten_by,
    slot_device,
)
from neurondev.fx.subgraphs import subgraphs
from neurondev.rulebook import Ruled
from neurondev.trace.capture import Capture
from neurondev.trace.source import Located, SourceLine, judge_kind, source_line, source_of

__all__ = ["COLUMNS", "DevicePin", "diagnose", "find_pins", "graphs_of", "pin_table"]


@dataclasses.dataclass(frozen=True)
class DevicePin(Located, Ruled):
    """One device pin: a node argument that places a tensor on a device other than the target.

    ``function`` is what the node calls (``torch.empty``, ``Tensor.to``); ``device`` the device as
    written in the graph; ``location`` where it sits (``kwarg``, ``arg[1]``, ``kwarg[type]``,
    ``method``); ``kind`` how the user's line made it (frozen, literal, variable, unknown,
    assertion); ``source`` the user's line. ``graph``/``part`` name the graph it is in.
    ``output_transfer``: a move to the host whose value only leaves the graph (results handed
    back on purpose; the default pass keeps it). ``unused``: no node uses the value (it costs nothing).
    """

    RECORD = "pin"

    graph: int
    node: str
    op: str
    function: str
    device: Any
    format: str
    location: str
    kwargs_pass: bool
    default_pass: bool
    kind: str
    users: tuple[str, ...]
    source: SourceLine | None = None
    part: str = "whole"
    output_transfer: bool = False

    @property
    def unused(self) -> bool:
        return not self.users

    def row(self) -> dict[str, Any]:
        """This pin as a row of the pin table (``COLUMNS``)."""
        return {name: getattr(self, name) for name in COLUMNS}


COLUMNS = (
    "rule",
    "graph",
    "part",
    "node",
    "op",
    "function",
    "device",
    "format",
    "location",
    "kwargs_pass",
    "default_pass",
    "kind",
    "file",
    "line",
    "code",
    "users",
    "unused",
    "output_transfer",
)


def find_pins(
    gm: Any, *, target: str | torch.device = "xla", graph: int = 0, part: str = "whole", traced_on_meta: bool = False
) -> list[DevicePin]:
    """Every device pin of ``gm`` (a GraphModule or an ExportedProgram) not already on ``target``, in graph order.

    When the target names an index (``xla:0``), a device with another index (or none) is a pin too.
    Pins inside the bodies higher-order ops call (a custom ``autograd.Function``'s forward and
    backward, ``torch.cond``'s branches, activation checkpointing) are found too, named with
    their body (``fwd_body_0.lo``). ``traced_on_meta``: the graph was traced on meta, where ``device=meta`` is the frozen device
    (rewritable, as ``cpu`` is in a CPU trace).
    """
    module = graph_module_of(gm, purpose="find_pins needs a traced graph, got")
    wanted = parse_target(target)
    pins = []
    for prefix, node, slots in _device_nodes_and_bodies(module):
        for slot in slots:
            device = slot_device(node, slot)
            if is_pin(slot, device, wanted):
                pins.append(_pin(node, slot, device, graph, part, wanted, traced_on_meta, prefix))
    return pins


def _device_nodes_and_bodies(gm: torch.fx.GraphModule) -> Iterator[tuple[str, torch.fx.Node, tuple[Slot, ...]]]:
    """The graph's own nodes with device arguments, then those of every body a higher-order op calls
    (with the body's name), each with its device slots."""
    yield from (("", node, slots) for node, slots in device_nodes(gm.graph.nodes))
    for body in subgraphs(gm):
        yield from ((f"{body.name}.", node, slots) for node, slots in device_nodes(body.module.graph.nodes))


def _kind(node: torch.fx.Node, slot: Slot, source: SourceLine | None) -> str:
    """How the user's line made the pin: an assertion, or judge_kind on the argument that holds the device."""
    if is_assertion(node):
        return "assertion"
    return judge_kind(source, slot.location, device_call=node.target is torch.device, autocast=slot.kind == "type")


def _pin(
    node: torch.fx.Node,
    slot: Slot,
    device: torch.device,
    graph: int,
    part: str,
    target: torch.device,
    traced_on_meta: bool = False,
    prefix: str = "",
) -> DevicePin:
    source = source_of(node) or (_with_statement(node) if slot.kind == "type" else None)
    method = slot.kind == "method"
    rule = functools.partial(rewritten_by, node, slot, device, target, traced_on_meta=traced_on_meta)
    return DevicePin(
        graph=graph,
        node=prefix + node.name,
        op=node.op,
        function=function_name(node),
        device=device if method else slot.value,
        format="other" if method else device_format(slot.value),
        location=slot.location,
        kwargs_pass=rule(positional=False, keep_host_outputs=False),
        default_pass=rule(positional=True, keep_host_outputs=True),
        kind="assertion" if is_assertion(node) else _kind(node, slot, source),
        users=tuple(prefix + user.name for user in node.users),
        source=source,
        part=part,
        output_transfer=is_output_transfer(node, device),
    )


def _with_statement(node: torch.fx.Node, lookback: int = 10) -> SourceLine | None:
    """The ``with torch.autocast(...)`` line of an autocast node, which dynamo records without a
    stack trace: found above the first line inside the block."""
    inside = node.next
    while inside.op != "root" and source_of(inside) is None:
        inside = inside.next
    first = source_of(inside) if inside.op != "root" else None
    if first is None:
        return None
    for line in range(first.line - 1, max(first.line - lookback, 0), -1):
        if "autocast(" in linecache.getline(first.file, line):
            return source_line(first.file, line, first.function)
    return None


def pin_table(pins: Iterable[DevicePin]) -> Any:
    """A pandas.DataFrame with one row per pin (``COLUMNS``), built on demand."""
    import pandas

    return pandas.DataFrame([pin.row() for pin in pins], columns=list(COLUMNS))


def graphs_of(subject: Any) -> list[torch.fx.GraphModule]:
    """The graphs of a GraphModule, an ExportedProgram, a Capture or a list of GraphModules."""
    if isinstance(subject, Capture):
        return list(subject.graphs)
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


def diagnose(subject: Any, target: str | torch.device = "xla") -> Any:
    """A pandas.DataFrame with one row per device pin not already on ``target``, across all graphs.

    A pin is a ``device=`` kwarg (``torch.empty/zeros/arange/tensor(device=...)``, ``Tensor.to(device=...)``,
    ``new_*``) or a positional device (``Tensor.to(dev)``, ``Tensor.to(dev, dtype)``,
    ``torch.device(...)`` nodes, ``.cpu()`` / ``.cuda()``). ``device=None`` is not a pin. When the
    target names an index (``xla:0``), a device with another index (``xla:1``) is a pin too.

    ``subject`` is a GraphModule, a torch.export.ExportedProgram, a Capture or a list of graphs;
    ``table.attrs["notes"]`` says what to keep in mind about it (an exported program's inputs).

    Columns:
      graph, part   index of the graph in the capture; 'whole' (or forward/backward at ATen level)
      node          FX node name
      op            FX op: call_function or call_method
      rule          the finding's code (ND101 frozen, ND102 literal, ND103 variable, ND104 unknown, ND105 assertion;
                    neurondev.rules() lists them)
      function      what the node calls, readable: torch.empty, Tensor.to, aten.empty.memory_format
      device        the pinned device as written in the graph
      format        how it is written: str, torch.device, int, other
      location      where it sits: kwarg, arg[i], kwarg[type] (torch.device(type=...)), or method (.cpu()/.cuda())
      kwargs_pass   whether the documented kwargs-only DeviceRewriterPass rewrites it (every device= kwarg
                    not on the target, meta included, as the seed document's algorithm does)
      default_pass  whether the default DeviceRewriterPass rewrites it (not meta unless traced on meta, not
                    a result handed back at the end); the pass decides with the same rule
      kind          frozen (from a tensor's .device), literal, variable or unknown, judged from the source;
                    assertion for torch.export's aten._assert_tensor_metadata (a check, not a placement)
      file, line    the user's source location (from the node's stack trace)
      code          the source statement
      users         names of the nodes that use the node's value
      unused        no node uses the value: it costs nothing (listed, not alarmed about)
      output_transfer  a move to the host whose value only leaves the graph (results handed back on
                    purpose): the default pass keeps it, the documented kwargs-only pass does not
    """
    graphs = graphs_of(subject)
    device = parse_target(target)
    pins = [pin for index, graph in enumerate(graphs) for pin in find_pins(graph, target=device, graph=index)]
    table = pin_table(pins)
    table.attrs["notes"] = _notes(subject)
    return table
