"""DOT text for an FX graph with its device pins and, after a run, devices, crossings and breaks (pure).

Large graphs are drawn as a focus view: the marked nodes (pins, rewrites, breaks, the failure) and
their k-hop neighbourhood, every other connected stretch collapsed into one counted placeholder.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable
from typing import Any

import torch.fx

from neurondev.fx.devices import function_name
from neurondev.fx.pins import DevicePin
from neurondev.passes.device_rewriter import Rewrite
from neurondev.xla.run import RunRecord

__all__ = ["FOCUS_THRESHOLD", "DotOptions", "graph_dot", "side_by_side"]

_XLA, _CPU, _PIN, _BREAK, _REWRITTEN, _COLLAPSED = "#d9f2d9", "#dde4f0", "#ffd8a8", "#d62728", "#cfe3ff", "#f2f2f2"
FOCUS_THRESHOLD = 150
_ARGS_CHARS = 36


@dataclasses.dataclass(frozen=True)
class DotOptions:
    """How much of a graph to draw: the whole graph up to ``threshold`` nodes (or with ``full``),
    else the focus view with ``radius`` hops around the marked nodes."""

    threshold: int = FOCUS_THRESHOLD
    radius: int = 2
    full: bool = False


def _escape(text: str) -> str:
    """A DOT double-quoted string body: backslashes, quotes and newlines escaped (``->``, ``<>`` and
    braces need nothing inside quotes, but a backslash would start a Graphviz escape)."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _first_device(device: Any) -> str:
    """A node's device for colouring: its tensor's, or its first tensor's when it has several."""
    if isinstance(device, tuple):
        return device[0] if device else ""
    return device or ""


def _constant_args(node: torch.fx.Node) -> str:
    """The node's constant arguments, short: ``'ij,jk->ik'``, ``64``, ``dim=1``."""
    parts = [repr(a) for a in node.args if not isinstance(a, torch.fx.Node) and not _has_node(a)]
    parts += [f"{k}={v!r}" for k, v in node.kwargs.items() if k != "device" and not _has_node(v)]
    text = ", ".join(parts)
    return text if len(text) <= _ARGS_CHARS else text[: _ARGS_CHARS - 1] + "…"


def _has_node(value: Any) -> bool:
    found = []
    torch.fx.node.map_arg(value, lambda n: found.append(n))
    return bool(found)


@dataclasses.dataclass
class _Marks:
    pins: dict[str, DevicePin]
    rewrites: dict[str, Rewrite]
    devices: dict[str, Any]
    breaks: set[str]
    failed: str | None
    failure: str
    crossings: dict[tuple[str, str], Any]


def _marks(pins: Iterable[DevicePin], rewrites: Iterable[Rewrite], record: RunRecord | None) -> _Marks:
    error = record.error if record is not None else None
    return _Marks(
        pins={pin.node: pin for pin in pins},
        rewrites={r.node: r for r in rewrites},
        devices=record.node_devices if record is not None else {},
        breaks={b.node for b in record.graph_breaks} if record is not None else set(),
        failed=error.node if error is not None else None,
        failure=type(error.exception).__name__ if error is not None else "",
        crossings={(c.source, c.node): c for c in record.crossings} if record is not None else {},
    )


def _centre(marks: _Marks) -> set[str]:
    """The nodes a focus view is centred on: pins, rewritten nodes, breaks, crossings, the failed node."""
    named = set(marks.pins) | set(marks.rewrites) | marks.breaks | ({marks.failed} if marks.failed else set())
    return named | {node for edge in marks.crossings for node in edge}


def _node_line(node: torch.fx.Node, prefix: str, marks: _Marks) -> str:
    name = node.name
    label = name if node.op in ("placeholder", "output") else f"{name}\\n{_escape(function_name(node))}"
    constants = _constant_args(node) if node.op not in ("placeholder", "output", "get_attr") else ""
    if constants:
        label += f"\\n{_escape(constants)}"
    pin, rewrite = marks.pins.get(name), marks.rewrites.get(name)
    if pin is not None:
        label += f"\\ndevice={_escape(str(pin.device))} ({pin.kind})"
    if rewrite is not None:
        label += f"\\nrewritten: {_escape(str(rewrite.old))} → {_escape(str(rewrite.new))}"
    device = _first_device(marks.devices.get(name))
    if device:
        label += f"\\non {device}"
    if name == marks.failed:
        label += f"\\nFAILED: {_escape(marks.failure)}"
    fill = _PIN if pin else _REWRITTEN if rewrite else _XLA if device.startswith("xla") else _CPU if device else "white"
    style = "style=filled"
    if name in marks.breaks or name == marks.failed:
        style = f'style="filled,bold", color="{_BREAK}", penwidth=3'
    shape = "ellipse" if node.op in ("placeholder", "output") else "octagon" if name == marks.failed else "box"
    return f'  "{prefix}{name}" [label="{label}", shape={shape}, fillcolor="{fill}", {style}];'


def _edge_line(source: str, target: str, prefix: str, marks: _Marks) -> str:
    crossing = marks.crossings.get((source, target))
    extra = ""
    if crossing is not None:
        extra = f' [color="{_BREAK}", penwidth=2, label="{crossing.from_device} → {crossing.to_device}"]'
    return f'  "{prefix}{source}" -> "{prefix}{target}"{extra};'


def graph_dot(
    gm: torch.fx.GraphModule,
    *,
    pins: Iterable[DevicePin] = (),
    rewrites: Iterable[Rewrite] = (),
    record: RunRecord | None = None,
    title: str = "",
    prefix: str = "",
    options: DotOptions | None = None,
) -> str:
    """A DOT ``subgraph cluster`` for ``gm``: pins filled orange, rewritten nodes blue, nodes by the
    device they landed on (green XLA, grey-blue CPU), graph breaks and the failed node outlined red,
    edges where a value crossed devices drawn red with the direction. Above ``options.threshold``
    nodes (unless ``options.full``) the focus view is drawn instead of the whole graph."""
    options = options or DotOptions()
    marks = _marks(pins, rewrites, record)
    nodes = list(gm.graph.nodes)
    lines = [f'subgraph "cluster_{prefix}" {{', f'  label="{_escape(title)}"; fontsize=16;']
    if options.full or len(nodes) <= options.threshold:
        lines += [_node_line(node, prefix, marks) for node in nodes]
        lines += [_edge_line(s.name, n.name, prefix, marks) for n in nodes for s in n.all_input_nodes]
    else:
        lines += _focus_lines(nodes, prefix, marks, options.radius)
    return "\n".join(lines + ["}"])


def _focus_lines(nodes: list, prefix: str, marks: _Marks, radius: int) -> list[str]:
    centre = _centre(marks)
    if not centre:
        centre = {n.name for n in nodes if n.op in ("placeholder", "output")}
    kept = _neighbourhood(nodes, centre, radius)
    group = _collapsed_groups(nodes, kept)
    lines = [_node_line(node, prefix, marks) for node in nodes if node.name in kept]
    lines += _placeholder_lines(nodes, group, prefix)
    seen: set[tuple[str, str]] = set()
    for node in nodes:
        for source in node.all_input_nodes:
            edge = (group.get(source.name, source.name), group.get(node.name, node.name))
            if edge[0] != edge[1] and edge not in seen:
                seen.add(edge)
                lines.append(_edge_line(*edge, prefix, marks))
    return lines


def _neighbourhood(nodes: list, centre: set[str], radius: int) -> set[str]:
    """Every node within ``radius`` hops (either direction) of a centre node."""
    by_name = {node.name: node for node in nodes}
    kept, frontier = set(centre), [by_name[name] for name in centre if name in by_name]
    for _ in range(max(radius, 0)):
        following = []
        for node in frontier:
            for other in (*node.all_input_nodes, *node.users):
                if other.name not in kept:
                    kept.add(other.name)
                    following.append(other)
        frontier = following
    return kept


def _collapsed_groups(nodes: list, kept: set[str]) -> dict[str, str]:
    """Each node outside ``kept`` -> the id of its placeholder: one per connected stretch (union-find)."""
    parent = {node.name: node.name for node in nodes if node.name not in kept}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for node in nodes:
        if node.name in parent:
            for source in node.all_input_nodes:
                if source.name in parent:
                    parent[root(source.name)] = root(node.name)
    return {name: f"…{root(name)}" for name in parent}


def _placeholder_lines(nodes: list, group: dict[str, str], prefix: str) -> list[str]:
    members: dict[str, list[torch.fx.Node]] = collections.defaultdict(list)
    for node in nodes:
        if node.name in group:
            members[group[node.name]].append(node)
    lines = []
    for ident, collapsed in members.items():
        ops = collections.Counter(function_name(n) for n in collapsed if n.op not in ("placeholder", "output"))
        common = ", ".join(f"{op} ×{count}" for op, count in ops.most_common(3))
        label = f"… {len(collapsed)} node(s) not shown" + (f"\\n{_escape(common)}" if common else "")
        lines.append(f'  "{prefix}{_escape(ident)}" [label="{label}", shape=box, style="filled,dashed", fillcolor="{_COLLAPSED}"];')
    return lines


def side_by_side(*clusters: str) -> str:
    """One DOT digraph holding the given clusters next to each other."""
    head = 'digraph neurondev {\n  rankdir=TB; fontname="Helvetica"; node [fontname="Helvetica", fontsize=11]; edge [fontname="Helvetica", fontsize=11];'
    return "\n".join([head, *clusters, "}"]) + "\n"
