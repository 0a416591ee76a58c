"""The focus view of a deep model stays focused: a finding repeated in every layer is drawn once
with its count, identical layers fold into one box, every distinct finding keeps its line; and a
drawing that takes too long falls back to the module view, then to a pointer at Model Explorer."""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
from pathlib import Path

import pytest

from neurondev import testing
from neurondev.fx.modules import layer_of, module_path

# One worker runs this module (an xdist group): its 4-layer Llama is explained once a run, not once a worker
# (3.5 s each, measured with the explain calls logged per worker).
pytestmark = [pytest.mark.xla, pytest.mark.dot, pytest.mark.xdist_group("focus-llama")]


@pytest.fixture(scope="module")
def deep():
    pytest.importorskip("transformers")
    import torch

    from neurondev.report.options import ExplainOptions
    from neurondev.report.pipeline import explain_with
    from neurondev.results.explanation import Explanation

    model, args, kwargs = testing.tiny_llama(4, hidden=32, intermediate=64, vocab=100, sequence=8)
    # the graphs run on the device (their breaks are drawn); the program run and the fixes draw nothing here
    options = ExplainOptions(torch.device("xla"), quiet=True, program=False, fixes=False)
    return Explanation.of(explain_with(model, args, kwargs, options))


def labels(dot: str) -> list[str]:
    return re.findall(r'\[label="([^"]*(?:\\"[^"]*)*)"', dot)


def test_nodes_know_their_module_and_layer(deep):
    gm = deep.sections[0].traced
    paths = {module_path(node) for node in gm.graph.nodes}
    assert "model.layers.3.self_attn" in paths and "model.rotary_emb" in paths
    assert {layer_of(node) for node in gm.graph.nodes} >= {("model.layers", i) for i in range(4)}


def test_findings_repeated_in_every_layer_are_drawn_once_with_their_count(deep):
    dot = deep.to_dot("before")
    text = "\n".join(labels(dot))
    assert "× 4 layers" in text
    assert "model.layers.1–3: 3 identical layers" in text
    assert len(labels(dot)) <= 80
    for layer in range(1, 4):  # nothing of the folded layers is drawn one node at a time
        assert f"model.layers.{layer}.self_attn" not in text


def test_every_distinct_pin_and_break_stays_visible_with_its_line(deep):
    text = "\n".join(labels(deep.to_dot("before")))
    wanted = {(pin.node, pin.where) for pin in deep.pins} | {(b.node, b.where) for r in deep.before for b in r.graph_breaks}
    for node, where in wanted:
        assert f"{node}\\n" in text and f"at {where}" in text, (node, where)


def test_the_card_stays_small_for_a_deep_model(deep):
    assert len(deep._repr_html_().encode()) < 300_000


def slow_dot(tmp_path: Path, *, slow_for: str) -> Path:
    """A dot that sleeps (past any budget) when its input contains ``slow_for``, else draws; each call is logged."""
    real = shutil.which("dot") or str(Path(sys.executable).with_name("graphviz-pure"))
    script = tmp_path / "dot"
    log = tmp_path / "calls.log"
    script.write_text(
        f"#!{sys.executable}\nimport subprocess, sys, time\ntext = sys.stdin.read()\n"
        f"open({str(log)!r}, 'a').write('call\\n')\n"
        f"if {slow_for!r} in text:\n    time.sleep(30)\n"
        f"sys.exit(subprocess.run([{real!r}, *sys.argv[1:]], input=text.encode()).returncode)\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_a_focus_view_too_slow_to_draw_falls_back_to_the_module_view(deep, tmp_path, monkeypatch):
    from neurondev.render import drawing

    monkeypatch.setattr(drawing, "DRAW_SECONDS", 1.0)
    monkeypatch.setenv("NEURONDEV_DOT", str(slow_dot(tmp_path, slow_for="identical layers")))
    svg, note = drawing.svg_or_reason(deep, "before", 0, budget=drawing.DrawBudget(4))
    assert svg is not None and svg.startswith("<svg") and "model.layers.*" in svg
    assert note == "the focus view took longer than its drawing time: drawn module by module instead"


def test_a_graph_too_slow_either_way_says_so_and_points_at_model_explorer(deep, tmp_path, monkeypatch):
    from neurondev.render import drawing

    monkeypatch.setattr(drawing, "DRAW_SECONDS", 1.0)
    monkeypatch.setenv("NEURONDEV_DOT", str(slow_dot(tmp_path, slow_for="digraph")))
    svg, reason = drawing.svg_or_reason(deep, "before", 0, budget=drawing.DrawBudget(2))
    assert svg is None and "not drawn within the card's drawing time (2 s" in reason and "ex.save_model_explorer" in reason


def test_a_card_stops_drawing_when_its_drawing_time_is_spent(deep, tmp_path, monkeypatch):
    """Every drawing of a card shares one budget: once spent, no graph waits on dot (a card of 8 graphs never blocks)."""
    from neurondev.render import drawing

    monkeypatch.setattr(drawing, "DRAW_SECONDS", 1.0)
    monkeypatch.setattr(drawing, "CARD_SECONDS", 2.0)
    monkeypatch.setenv("NEURONDEV_DOT", str(slow_dot(tmp_path, slow_for="digraph")))
    card = deep._repr_html_()
    calls = (tmp_path / "calls.log").read_text().count("call")
    assert calls == 2  # the focus view and the module view of the first graph; the second graph is not tried
    assert card.count("not drawn within the card&#x27;s drawing time") == 2


def test_a_missing_dot_is_told_from_a_slow_one_by_its_type(deep, monkeypatch):
    from neurondev.errors import DotUnavailableError, DrawTimeoutError
    from neurondev.render import drawing

    monkeypatch.setenv("NEURONDEV_DOT", "/no/such/dot")
    svg, reason = drawing.svg_or_reason(deep, "before", 0)
    assert svg is None and "no Graphviz 'dot' program found" in reason  # no retry with the module view
    assert issubclass(DrawTimeoutError, DotUnavailableError)
    assert os.environ["NEURONDEV_DOT"].endswith("dot")
