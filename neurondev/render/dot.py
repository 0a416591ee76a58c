"""DOT text for an FX graph with its device pins and, after a run, devices, crossings and breaks (pure)."""

from __future__ import annotations

from typing import Iterable

import torch.fx

from ..pins import DevicePin, readable_target

__all__ = ["graph_dot", "side_by_side"]

_XLA, _CPU, _PIN, _BREAK = "#d9f2d9", "#dde4f0", "#ffd8a8", "#d62728"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _first_device(device) -> str:
    """A node's device for colouring: its tensor's, or its first tensor's when it has several."""
    if isinstance(device, tuple):
        return device[0] if device else ""
    return device or ""


def _node_lines(gm: torch.fx.GraphModule, prefix: str, pins: dict[str, DevicePin], record) -> list[str]:
    devices = record.node_devices if record is not None else {}
    breaks = {b.node for b in record.graph_breaks} if record is not None else set()
    lines = []
    for node in gm.graph.nodes:
        label = node.name if node.op in ("placeholder", "output") else f"{node.name}\\n{_escape(readable_target(node))}"
        pin = pins.get(node.name)
        if pin is not None:
            label += f"\\ndevice={_escape(str(pin.device))} ({pin.kind})"
        device = _first_device(devices.get(node.name))
        if device:
            label += f"\\non {device}"
        fill = _PIN if pin is not None else _XLA if device.startswith("xla") else _CPU if device else "white"
        style = f'style="filled,bold", color="{_BREAK}", penwidth=3' if node.name in breaks else 'style=filled'
        shape = "ellipse" if node.op in ("placeholder", "output") else "box"
        lines.append(f'  "{prefix}{node.name}" [label="{label}", shape={shape}, fillcolor="{fill}", {style}];')
    return lines


def _edge_lines(gm: torch.fx.GraphModule, prefix: str, record) -> list[str]:
    crossing = {(c.source, c.node): c for c in record.crossings} if record is not None else {}
    lines = []
    for node in gm.graph.nodes:
        for source in node.all_input_nodes:
            c = crossing.get((source.name, node.name))
            extra = f' [color="{_BREAK}", penwidth=2, label="{c.from_device} → {c.to_device}"]' if c else ""
            lines.append(f'  "{prefix}{source.name}" -> "{prefix}{node.name}"{extra};')
    return lines


def graph_dot(gm: torch.fx.GraphModule, *, pins: Iterable[DevicePin] = (), record=None, title: str = "", prefix: str = "") -> str:
    """A DOT ``subgraph cluster`` body for ``gm``: pins filled orange, nodes by the device they landed on,
    graph breaks outlined red, edges where a value crossed devices drawn red with the direction."""
    by_node = {pin.node: pin for pin in pins}
    lines = [f'subgraph "cluster_{prefix}" {{', f'  label="{_escape(title)}"; fontsize=16;']
    lines += _node_lines(gm, prefix, by_node, record) + _edge_lines(gm, prefix, record)
    return "\n".join(lines + ["}"])


def side_by_side(*clusters: str) -> str:
    """One DOT digraph holding the given clusters next to each other."""
    head = 'digraph neurondev {\n  rankdir=TB; fontname="Helvetica"; node [fontname="Helvetica", fontsize=11]; edge [fontname="Helvetica", fontsize=11];'
    return "\n".join([head, *clusters, "}"]) + "\n"
