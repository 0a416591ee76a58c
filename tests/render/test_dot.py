"""DOT text for graphs: readable golden files, exact lines for a run's marks, escaping, the focus view."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import torch

import neurondev
from neurondev import examples, testing
from neurondev.render.dot import DotOptions, graph_dot, side_by_side
from neurondev.render.svg import find_dot
from tests.helpers import build_graph, line_of

HERE = Path(__file__).parent


def seed_dot(seed_capture, **options):
    gm = seed_capture.graphs[0]
    return side_by_side(graph_dot(gm, pins=neurondev.find_pins(gm), prefix="p_", **options))


def test_seed_pins_match_the_golden_dot(seed_capture):
    assert seed_dot(seed_capture, title='seed "traced" on CPU') == (HERE / "seed_pins.dot").read_text()


def test_seed_rewritten_matches_the_golden_dot(seed_capture):
    gm, rewrites = neurondev.rewrite_copy(seed_capture.graphs[0])
    text = side_by_side(graph_dot(gm, rewrites=rewrites, prefix="a_", title="after"))
    assert text == (HERE / "seed_rewritten.dot").read_text()


@pytest.mark.xla
def test_a_run_marks_the_break_and_the_crossing(seed_capture):
    gm = seed_capture.graphs[0]
    record = neurondev.run_on_xla(gm, *seed_capture.example_inputs[0], repeat=0)
    text = graph_dot(gm, record=record, prefix="r_")
    line = line_of(examples.seed_function, "out.copy_")
    assert (
        f'"r_copy_" [label="copy_\\nTensor.copy_\\nat patterns.py:{line}\\non cpu", shape=box, fillcolor="#dde4f0", '
        'style="filled,bold", color="#d62728", penwidth=3];'
    ) in text
    assert '"r_mul" -> "r_copy_" [color="#d62728", penwidth=2, label="xla:0 → cpu"];' in text
    assert '"r_relu" [label="relu\\ntorch.relu\\non xla:0", shape=box, fillcolor="#d9f2d9", style=filled];' in text


@pytest.mark.xla
def test_the_node_where_a_run_failed_is_marked():
    def fn(x):
        return x.cuda() + 1

    gm = torch.fx.symbolic_trace(fn)
    record = neurondev.run_on_xla(gm, torch.randn(2), repeat=0)
    text = graph_dot(gm, record=record)
    assert '"cuda" [label="cuda\\nTensor.cuda\\nFAILED: ' in text and "shape=octagon" in text


def test_every_label_is_escaped():
    gm = build_graph(
        ("call_function", torch.einsum, ("ij,jk->ik", "x", "x"), {}),
        ("call_function", torch.full, ((2,), 1.0), {"device": 'we"ird\\{<dev>}'}),
        ("call_method", "view", ("x", 'a"b'), {}),
    )
    text = graph_dot(gm, prefix="e_")
    assert "'ij,jk->ik'" in text
    assert "'a\\\"b'" in text  # the quote is escaped for DOT
    labels = _labels_as_dot_reads_them(side_by_side(text))
    assert labels["e_view"].endswith("""Tensor.view\\n'a"b'""")  # the quote survives; nothing after it was swallowed
    assert labels["e_einsum"].endswith("\\n'ij,jk->ik'")
    assert labels["e_output"] == "output"


def _labels_as_dot_reads_them(dot_text: str) -> dict[str, str]:
    """Each node's label as Graphviz parsed it (its own JSON output): a label escaped wrongly is cut
    short, runs into the next attribute, or makes dot fail."""
    import json

    program = find_dot()
    assert program is not None, "the setup installs a dot program (scripts/setup.sh)"
    done = subprocess.run([program.path, "-Tjson"], input=dot_text.encode(), capture_output=True, check=True)
    graph = json.loads(done.stdout)
    return {node["name"]: node["label"] for node in graph.get("objects", []) if "label" in node}


def test_a_large_graph_is_drawn_as_a_connected_focus_view():
    gm = testing.long_graph(400, pins=2)
    pins = neurondev.find_pins(gm)
    text = graph_dot(gm, pins=pins, options=DotOptions(radius=2))
    drawn = [line for line in text.splitlines() if "[label=" in line and "not shown" not in line]
    collapsed = [line for line in text.splitlines() if "not shown" in line]
    assert len(drawn) == 8  # each pin, its add, and the add's neighbours 2 hops out
    assert sum(int(line.split("… ")[1].split(" node")[0]) for line in collapsed) + len(drawn) == len(gm.graph.nodes)
    assert all(f'"{pin.node}"' in text for pin in pins)
    edges = [line for line in text.splitlines() if "->" in line and "[label=" not in line]
    assert _connected(edges)
    assert graph_dot(gm, options=DotOptions(full=True)).count("[label=") == len(gm.graph.nodes)


def _connected(edge_lines):
    import re

    pairs = [re.findall(r'"([^"]+)"', line)[:2] for line in edge_lines]
    nodes = {n for pair in pairs for n in pair}
    parent = {n: n for n in nodes}

    def root(n):
        while parent[n] != n:
            n = parent[n]
        return n

    for a, b in pairs:
        parent[root(a)] = root(b)
    return len({root(n) for n in nodes}) == 1


@pytest.mark.dot
@pytest.mark.xla
def test_graphviz_renders_it_to_svg(seed_capture):
    from neurondev.render.svg import find_dot, render_svg

    assert find_dot() is not None, "the setup installs a dot program"
    svg = render_svg(seed_dot(seed_capture))
    assert svg.startswith("<svg") and "device=cpu (frozen)" in svg and "Tensor.copy_" in svg
