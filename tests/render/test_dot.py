"""DOT text for graphs: a readable golden file for pins, exact lines for a run's breaks and crossings."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import neurondev
from neurondev.render.dot import graph_dot, side_by_side

GOLDEN = Path(__file__).with_name("seed_pins.dot")


def seed_dot(seed_capture, **options):
    gm = seed_capture.graphs[0]
    return side_by_side(graph_dot(gm, pins=neurondev.find_pins(gm), prefix="p_", **options))


def test_seed_pins_match_the_golden_dot(seed_capture):
    assert seed_dot(seed_capture, title='seed "traced" on CPU') == GOLDEN.read_text()


@pytest.mark.xla
def test_a_run_marks_the_break_and_the_crossing(seed_capture):
    gm = seed_capture.graphs[0]
    record = neurondev.run_on_xla(gm, *seed_capture.example_inputs[0], repeat=0)
    text = graph_dot(gm, record=record, prefix="r_")
    assert '"r_copy_" [label="copy_\\nTensor.copy_\\non cpu", shape=box, fillcolor="#dde4f0", style="filled,bold", color="#d62728", penwidth=3];' in text
    assert '"r_mul" -> "r_copy_" [color="#d62728", penwidth=2, label="xla:0 → cpu"];' in text
    assert '"r_relu" [label="relu\\ntorch.relu\\non xla:0", shape=box, fillcolor="#d9f2d9", style=filled];' in text


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot program")
def test_graphviz_renders_it_to_svg(seed_capture, tmp_path):
    graphviz = pytest.importorskip("graphviz")
    svg = graphviz.Source(seed_dot(seed_capture)).pipe(format="svg").decode()
    assert "<svg" in svg and "device=cpu (frozen)" in svg and "Tensor.copy_" in svg
