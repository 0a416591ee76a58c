"""One reader per fact in the drawings: a node's run-time device read by ``RunRecord.device_type``,
and the user's line drawn from the record that holds it, in DOT, Model Explorer and the crossings."""

from __future__ import annotations

import re

import torch
import torch.fx

import neurondev
from neurondev.render.dot import graph_dot
from neurondev.render.model_explorer import _values
from neurondev.render.sources import node_sources
from neurondev.runs.graph import _crossings
from neurondev.runs.run_records import RunRecord, first_device, type_of


def _three_nodes() -> torch.fx.GraphModule:
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    pair = graph.call_function(torch.split, (x, 2))
    first = graph.call_function(torch.relu, (x,))
    graph.output((pair, first))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def _record() -> RunRecord:
    devices = {"x": "hostdev:0", "split": ("hostdev:0", "hostdev:0"), "relu": "cpu"}
    return RunRecord(device="hostdev:0", node_devices=devices, stack="native")


def _fills(dot: str) -> dict[str, str]:
    return {m["name"]: m["fill"] for m in re.finditer(r'"(?P<name>\w+)" \[label=.*?fillcolor="(?P<fill>#\w+)"', dot)}


def test_every_reader_of_a_nodes_device_agrees_with_the_records_own_for_a_tuple_and_a_native_device():
    gm, record = _three_nodes(), _record()
    assert [record.device_type(n) for n in ("x", "split", "relu")] == ["hostdev", "hostdev", "cpu"]
    on_target = {name: record.on_target(name) for name in record.node_devices}
    assert on_target == {"x": True, "split": True, "relu": False}
    fills = _fills(graph_dot(gm, record=record))
    assert fills["x"] == fills["split"] != fills["relu"]  # the DOT colours by the same reader, tuples included
    assert _values("ran on the device", None, "before", record) == {name: int(v) for name, v in on_target.items()}  # type: ignore[arg-type]
    crossings = _crossings(gm, dict(record.node_devices))
    assert [(c.source, c.node) for c in crossings] == [("x", "relu")]
    assert (first_device(("cpu", "xla:0")), type_of(("cpu", "xla:0")), type_of(None)) == ("cpu", "cpu", None)


def with_autocast(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return x @ x.T


def test_an_autocast_pin_written_out_is_literal_and_drawn_with_the_line_the_pin_table_shows():
    gm = neurondev.capture(with_autocast, torch.randn(4, 4)).graphs[0]
    (pin,) = neurondev.find_pins(gm, target="xla")
    assert (pin.function, pin.kind, pin.line) == ("torch.autocast", "literal", with_autocast.__code__.co_firstlineno + 1)
    assert node_sources(gm, [pin], None)[pin.node] == pin.source
    assert f"at {pin.source.where}" in graph_dot(gm, pins=[pin])
