"""DOT text for an FX graph with its device pins and, after a run, devices, crossings and breaks (pure).

Large graphs are drawn as a focus view (``neurondev.render.focus``): the marked nodes (pins,
rewrites, breaks, crossings, uploads, the failure) and their k-hop neighbourhood, a finding that
repeats in every layer drawn once with its count, repeated layers and far stretches folded into
counted boxes. ``level="modules"`` draws one box per module instead (the coarse view, for when
drawing the focus view takes too long).
"""

from __future__ import annotations

import collections
import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

import torch.fx

from neurondev.fx.devices import function_name
from neurondev.fx.modules import layer_of, module_path
from neurondev.fx.pins import DevicePin
from neurondev.fx.subgraphs import owner_of
from neurondev.passes.device_rewriter import Rewrite
from neurondev.render.focus import FocusPlan, finding_signature, plan_focus
from neurondev.render.sources import node_sources, source_drawn
from neurondev.runs.run_records import RunRecord
from neurondev.trace.source import SourceLine

__all__ = ["FOCUS_THRESHOLD", "DotOptions", "graph_dot", "side_by_side"]

_DEVICE, _CPU, _PIN, _BREAK, _REWRITTEN, _COLLAPSED = "#d9f2d9", "#dde4f0", "#ffd8a8", "#d62728", "#cfe3ff", "#f2f2f2"
FOCUS_THRESHOLD = 150
_ARGS_CHARS = 36


@dataclasses.dataclass(frozen=True)
class DotOptions:
    """How much of a graph to draw: the whole graph up to ``threshold`` nodes (or with ``full``),
    else the focus view with ``radius`` hops around the marked nodes."""

    threshold: int = FOCUS_THRESHOLD
    radius: int = 2
    full: bool = False
    level: str = "nodes"  # or "modules": one box per module, findings listed in it


def _escape(text: str) -> str:
    """A DOT double-quoted string body: backslashes, quotes and newlines escaped (``->``, ``<>`` and
    braces need nothing inside quotes, but a backslash would start a Graphviz escape)."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


_ALWAYS_QUOTED = ("label", "color", "fillcolor")
_BARE = re.compile(r"^[A-Za-z0-9_.]+$")


def _attributes(**attrs: object) -> str:
    """A DOT attribute list, every value escaped by ``_escape``: labels and colours quoted, other
    values bare when they are plain words or numbers (``shape=box``, ``penwidth=3``), else quoted."""
    parts = []
    for key, value in attrs.items():
        text = str(value)
        bare = key not in _ALWAYS_QUOTED and _BARE.match(text) is not None
        parts.append(f"{key}={text}" if bare else f'{key}="{_escape(text)}"')
    return ", ".join(parts)


def _node_statement(ident: str, **attrs: object) -> str:
    """``  "ident" [label="...", ...];`` with the identifier and every attribute escaped."""
    return f'  "{_escape(ident)}" [{_attributes(**attrs)}];'


def _edge_statement(source: str, target: str, **attrs: object) -> str:
    tail = f" [{_attributes(**attrs)}]" if attrs else ""
    return f'  "{_escape(source)}" -> "{_escape(target)}"{tail};'


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
    devices: Mapping[str, str | None]
    on_target: set[str]
    breaks: set[str]
    failed: str | None
    failure: str
    crossings: dict[tuple[str, str], Any]
    uploads: set[str] = dataclasses.field(default_factory=set)
    repeats: dict[str, int] = dataclasses.field(default_factory=dict)
    sources: dict[str, SourceLine] = dataclasses.field(default_factory=dict)


def _marks(gm: torch.fx.GraphModule, pins: Iterable[DevicePin], rewrites: Iterable[Rewrite], record: RunRecord | None) -> _Marks:
    """What to mark, by node name; a pin inside a body a higher-order op calls marks the node calling it."""
    pins = tuple(pins)
    error = record.error if record is not None else None
    return _Marks(
        pins={owner: pin for pin in pins if (owner := owner_of(gm, pin.node)) is not None},
        rewrites={owner: r for r in rewrites if (owner := owner_of(gm, r.node)) is not None},
        devices={name: record.device_of(name) for name in record.node_devices} if record is not None else {},
        on_target={name for name in record.node_devices if record.on_target(name)} if record is not None else set(),
        breaks={b.node for b in record.graph_breaks} if record is not None else set(),
        failed=error.node if error is not None else None,
        failure=type(error.exception).__name__ if error is not None else "",
        crossings={(c.source, c.node): c for c in record.crossings} if record is not None else {},
        uploads={u.node for u in record.uploads} if record is not None else set(),
        sources=node_sources(gm, pins, record),
    )


def _mark_names(marks: _Marks, name: str) -> list[str]:
    """What is marked on a node: pin, rewrite, break, failure, crossing, upload."""
    found = [
        label
        for label, hit in (
            ("pin", name in marks.pins),
            ("rewrite", name in marks.rewrites),
            ("break", name in marks.breaks),
            ("failed", name == marks.failed),
            ("upload", name in marks.uploads),
        )
        if hit
    ]
    if any(name in edge for edge in marks.crossings):
        found.append("crossing")
    return found


def _centre(marks: _Marks) -> set[str]:
    """The nodes a focus view is centred on: pins, rewrites, breaks, crossings, uploads, the failed node."""
    named = set(marks.pins) | set(marks.rewrites) | marks.breaks | marks.uploads | ({marks.failed} if marks.failed else set())
    return named | {node for edge in marks.crossings for node in edge}


def _node_line(node: torch.fx.Node, prefix: str, marks: _Marks) -> str:
    name = node.name
    lines = [name] if node.op in ("placeholder", "output") else [name, function_name(node)]
    constants = _constant_args(node) if node.op not in ("placeholder", "output", "get_attr") else ""
    lines += [constants] if constants else []
    pin, rewrite = marks.pins.get(name), marks.rewrites.get(name)
    source = source_drawn(node, marks.sources) if _mark_names(marks, name) else None
    lines += [f"at {source.where}"] if source else []
    lines += [f"× {marks.repeats[name]} layers"] if name in marks.repeats else []
    lines += [f"device={pin.device} ({pin.kind})"] if pin is not None else []
    lines += [f"rewritten: {rewrite.old} → {rewrite.new}"] if rewrite is not None else []
    device = marks.devices.get(name) or ""
    lines += [f"on {device}"] if device else []
    lines += [f"FAILED: {marks.failure}"] if name == marks.failed else []
    fill = _PIN if pin else _REWRITTEN if rewrite else _DEVICE if name in marks.on_target else _CPU if device else "white"
    shape = "ellipse" if node.op in ("placeholder", "output") else "octagon" if name == marks.failed else "box"
    if name in marks.breaks or name == marks.failed:
        return _node_statement(
            prefix + name, label="\n".join(lines), shape=shape, fillcolor=fill, style="filled,bold", color=_BREAK, penwidth=3
        )
    return _node_statement(prefix + name, label="\n".join(lines), shape=shape, fillcolor=fill, style="filled")


def _edge_line(source: str, target: str, prefix: str, marks: _Marks) -> str:
    crossing = marks.crossings.get((source, target))
    if crossing is None:
        return _edge_statement(prefix + source, prefix + target)
    return _edge_statement(
        prefix + source, prefix + target, color=_BREAK, penwidth=2, label=f"{crossing.from_device} → {crossing.to_device}"
    )


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
    marks = _marks(gm, pins, rewrites, record)
    nodes = list(gm.graph.nodes)
    lines = [f'subgraph "cluster_{prefix}" {{', f'  label="{_escape(title)}"; fontsize=16;']
    if options.level == "modules":
        lines += _module_lines(nodes, prefix, marks)
    elif options.full or len(nodes) <= options.threshold:
        lines += [_node_line(node, prefix, marks) for node in nodes]
        lines += [_edge_line(s.name, n.name, prefix, marks) for n in nodes for s in n.all_input_nodes]
    else:
        lines += _focus_lines(nodes, prefix, marks, options.radius)
    return "\n".join(lines + ["}"])


def _focus_lines(nodes: list, prefix: str, marks: _Marks, radius: int) -> list[str]:
    by_name = {node.name: node for node in nodes}
    centre = _centre(marks) or {n.name for n in nodes if n.op in ("placeholder", "output")}
    signature = {name: finding_signature(by_name[name], "+".join(_mark_names(marks, name))) for name in centre if name in by_name}
    plan = plan_focus(nodes, centre, radius, signature)
    marks = dataclasses.replace(marks, repeats=plan.repeats)
    lines = [_node_line(node, prefix, marks) for node in nodes if node.name in plan.shown]
    lines += [_box_line(box.ident, box.label, [by_name[m] for m in box.members], prefix) for box in plan.boxes]
    return lines + _edges(nodes, plan, prefix, marks)


def _edges(nodes: list, plan: FocusPlan, prefix: str, marks: _Marks) -> list[str]:
    """Every edge between drawn things once; edges inside one box disappear with it."""
    lines, seen = [], set()
    for node in nodes:
        for source in node.all_input_nodes:
            edge = (plan.box_of.get(source.name, source.name), plan.box_of.get(node.name, node.name))
            if edge[0] != edge[1] and edge not in seen:
                seen.add(edge)
                lines.append(_edge_line(*edge, prefix, marks))
    return lines


def _box_line(ident: str, label: str, members: list[torch.fx.Node], prefix: str) -> str:
    ops = collections.Counter(function_name(n) for n in members if n.op not in ("placeholder", "output"))
    common = ", ".join(f"{op} ×{count}" for op, count in ops.most_common(3))
    text = "\n".join([label, common] if common else [label])
    return _node_statement(prefix + ident, label=text, shape="box", style="filled,dashed", fillcolor=_COLLAPSED)


def _module_lines(nodes: list, prefix: str, marks: _Marks) -> list[str]:
    """The coarse view: one box per module (a stack of layers folded into one), its findings listed."""
    groups: dict[str, list[torch.fx.Node]] = collections.defaultdict(list)
    for node in nodes:
        layer = layer_of(node)
        groups[f"{layer[0]}.*" if layer else (module_path(node).split(".")[0] or "(top level)")].append(node)
    group_of = {node.name: name for name, members in groups.items() for node in members}
    lines = []
    for name, members in groups.items():
        found = sorted(
            {
                f"{'+'.join(_mark_names(marks, n.name))} {function_name(n)} at {source.where}"
                for n in members
                if _mark_names(marks, n.name) and (source := source_drawn(n, marks.sources)) is not None
            }
        )
        label = "\n".join([f"{name}: {len(members)} node(s)", *found[:12]])
        lines.append(_node_statement(prefix + name, label=label, shape="box", style="filled", fillcolor=_PIN if found else _COLLAPSED))
    edges = {(group_of[s.name], group_of[n.name]) for n in nodes for s in n.all_input_nodes if group_of[s.name] != group_of[n.name]}
    return lines + [_edge_statement(prefix + a, prefix + b) for a, b in sorted(edges)]


def side_by_side(*clusters: str) -> str:
    """One DOT digraph holding the given clusters next to each other."""
    head = 'digraph neurondev {\n  rankdir=TB; fontname="Helvetica"; node [fontname="Helvetica", fontsize=11]; edge [fontname="Helvetica", fontsize=11];'
    return "\n".join([head, *clusters, "}"]) + "\n"
