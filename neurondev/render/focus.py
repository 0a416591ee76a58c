"""Which nodes a focus view draws, folded across repeated layers: a pure plan DOT is written from.

A model of 32 decoder layers repeats its findings 32 times: the same pin, crossing or upload at the
same line of the same module in every layer. Those are drawn once, in the first layer where they
occur, counted ("x 32 layers"); the layers around them collapse into one box per run of identical
layers; everything else far from a finding collapses into one box per connected stretch. Layers
are read from ``node.meta["nn_module_stack"]`` (``model.layers.3.self_attn``), as Model Explorer
groups them.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable

import torch.fx

from neurondev.fx.devices import function_name
from neurondev.fx.modules import layer_of
from neurondev.trace.source import source_of

__all__ = ["Box", "FocusPlan", "finding_signature", "plan_focus"]


@dataclasses.dataclass(frozen=True)
class Box:
    """Nodes drawn as one dashed box: a run of identical layers, the rest of a layer, or a stretch."""

    ident: str
    label: str
    members: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class FocusPlan:
    """The nodes drawn one by one (``shown``), how many layers a shown finding stands for
    (``repeats``), and the boxes every other node is folded into (``box_of``)."""

    shown: frozenset[str]
    repeats: dict[str, int]
    boxes: tuple[Box, ...]
    box_of: dict[str, str]


def plan_focus(nodes: list[torch.fx.Node], centre: Iterable[str], radius: int, signature: dict[str, str]) -> FocusPlan:
    """The focus view of ``nodes`` around ``centre`` (names), ``radius`` hops out, repeated findings
    folded: ``signature`` says which centre nodes are the same finding (same mark, function and line)."""
    layers = {node.name: layer_of(node) for node in nodes}
    kept, repeats = _fold(sorted(centre, key=_order(nodes)), layers, signature)
    open_layers = {layers[name] for name in kept if layers.get(name) is not None}
    shown = _neighbourhood(nodes, kept, radius, layers, open_layers)
    boxes, box_of = _boxes(nodes, shown, layers, open_layers)
    return FocusPlan(frozenset(shown), repeats, tuple(boxes), box_of)


def _order(nodes: list[torch.fx.Node]):  # noqa: ANN202 - a sort key
    position = {node.name: i for i, node in enumerate(nodes)}
    return lambda name: position.get(name, 0)


def _fold(centre: list[str], layers: dict[str, tuple[str, int] | None], signature: dict[str, str]) -> tuple[set[str], dict[str, int]]:
    """Keep one centre node per (finding, layer stack): the first; count the layers it stands for."""
    first: dict[tuple[str, str], str] = {}
    seen_in: dict[str, set[int]] = collections.defaultdict(set)
    kept: set[str] = set()
    for name in centre:
        layer = layers.get(name)
        if layer is None:
            kept.add(name)
            continue
        key = (signature.get(name, name), layer[0])
        chosen = first.setdefault(key, name)
        seen_in[chosen].add(layer[1])
        if chosen == name:
            kept.add(name)
    return kept, {name: len(indices) for name, indices in seen_in.items() if len(indices) > 1}


def _neighbourhood(
    nodes: list[torch.fx.Node], centre: set[str], radius: int, layers: dict[str, tuple[str, int] | None], open_layers: set
) -> set[str]:
    """Every node within ``radius`` hops of a centre node, never stepping into a folded layer."""
    by_name = {node.name: node for node in nodes}
    kept, frontier = set(centre), [by_name[name] for name in centre if name in by_name]
    for _ in range(max(radius, 0)):
        following = []
        for node in frontier:
            for other in (*node.all_input_nodes, *node.users):
                layer = layers.get(other.name)
                if other.name in kept or (layer is not None and layer not in open_layers):
                    continue
                kept.add(other.name)
                following.append(other)
        frontier = following
    return kept


def _boxes(
    nodes: list[torch.fx.Node], shown: set[str], layers: dict[str, tuple[str, int] | None], open_layers: set
) -> tuple[list[Box], dict[str, str]]:
    """Hidden nodes into boxes: the rest of an open layer; runs of identical folded layers; and,
    outside the layers, one box per connected stretch."""
    hidden = [node for node in nodes if node.name not in shown]
    by_layer: dict[tuple[str, int], list[torch.fx.Node]] = collections.defaultdict(list)
    loose: list[torch.fx.Node] = []
    for node in hidden:
        layer = layers.get(node.name)
        (by_layer[layer] if layer is not None else loose).append(node)
    boxes = [_layer_box(layer, members, partial=True) for layer, members in by_layer.items() if layer in open_layers]
    boxes += _layer_runs({layer: members for layer, members in by_layer.items() if layer not in open_layers})
    boxes += _stretches(loose)
    return boxes, {member: box.ident for box in boxes for member in box.members}


def _layer_box(layer: tuple[str, int], members: list[torch.fx.Node], *, partial: bool) -> Box:
    what = "more node(s) of" if partial else "node(s):"
    return Box(f"…{layer[0]}.{layer[1]}", f"… {len(members)} {what} {layer[0]}.{layer[1]}", tuple(n.name for n in members))


def _layer_runs(folded: dict[tuple[str, int], list[torch.fx.Node]]) -> list[Box]:
    """Consecutive layers of one stack with the same ops, as one box each run."""
    boxes = []
    for stack in sorted({layer[0] for layer in folded}):
        indices = sorted(index for name, index in folded if name == stack)
        run: list[int] = []
        for index in indices:
            if run and (index != run[-1] + 1 or _ops(folded[(stack, index)]) != _ops(folded[(stack, run[0])])):
                boxes.append(_run_box(stack, run, folded))
                run = []
            run.append(index)
        if run:
            boxes.append(_run_box(stack, run, folded))
    return boxes


def _run_box(stack: str, run: list[int], folded: dict[tuple[str, int], list[torch.fx.Node]]) -> Box:
    members = tuple(node.name for index in run for node in folded[(stack, index)])
    if len(run) == 1:
        return Box(f"…{stack}.{run[0]}", f"… {stack}.{run[0]}: {len(members)} node(s), no finding", members)
    each = len(members) // len(run)
    label = f"… {stack}.{run[0]}–{run[-1]}: {len(run)} identical layers ({each} nodes each), findings shown once above"
    return Box(f"…{stack}.{run[0]}-{run[-1]}", label, members)


def _ops(members: list[torch.fx.Node]) -> tuple[str, ...]:
    """A layer's shape: what each node calls (inputs alike, whatever parameter they are)."""
    return tuple(function_name(node) if node.op.startswith("call") else node.op for node in members)


def _stretches(loose: list[torch.fx.Node]) -> list[Box]:
    """Hidden nodes outside the layers: one box per connected stretch (union-find)."""
    parent = {node.name: node.name for node in loose}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for node in loose:
        for source in node.all_input_nodes:
            if source.name in parent:
                parent[root(source.name)] = root(node.name)
    groups: dict[str, list[torch.fx.Node]] = collections.defaultdict(list)
    for node in loose:
        groups[root(node.name)].append(node)
    return [Box(f"…{key}", f"… {len(members)} node(s) not shown", tuple(n.name for n in members)) for key, members in groups.items()]


def finding_signature(node: torch.fx.Node, mark: str) -> str:
    """What makes two findings the same in two layers: the mark, the function and the user's line."""
    source = source_of(node)
    return f"{mark}|{function_name(node)}|{source.where if source else ''}"
