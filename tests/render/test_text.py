"""The terminal summary: each scenario's verdict in words, from the runs that happened; long text clipped."""

from __future__ import annotations

import pytest
import torch

import neurondev
from neurondev.render.text import clip, pins_text, summary

pytestmark = pytest.mark.xla


def pinned(x):
    out = torch.zeros(x.shape[0], device=x.device)
    out.copy_(x * 2)
    return out


def test_clip_keeps_short_text_and_marks_where_it_cut():
    assert clip("short") == "short"
    for text in ("x" * 500, "word " * 100):
        clipped = clip(text, limit=40)
        assert len(clipped) <= 40 and clipped.endswith(" …") and text.startswith(clipped[:-2])


def test_the_summary_says_which_scenario_each_verdict_is_about():
    explained = neurondev.explain(pinned, torch.randn(4), quiet=True)
    text = summary(explained)
    # the facts the words are about: one pin, its break measured before the pass and none after, the program runs
    assert [pin.kind for pin in explained.pins] == ["frozen"]
    assert [len(run.graph_breaks) for run in explained.before] == [1] and [len(run.graph_breaks) for run in explained.after] == [0]
    assert explained.program.as_written.ok and explained.program.rewritten.ok
    assert text.startswith("Your program on XLA (torch.compile): ")
    assert "Traced on CPU, the graph moved to XLA: 1 frozen device pin(s) (torch.zeros at test_text.py:" in text
    assert "After DeviceRewriterPass: 0 breaks" in text


def test_without_runs_the_summary_says_nothing_ran_instead_of_a_verdict():
    explanation = neurondev.explain(pinned, torch.randn(4), run=False, quiet=True)
    assert explanation.before == explanation.after == () and explanation.program is None  # nothing ran
    assert explanation.skipped.kind == "run off" and len(explanation.pins) == 1
    text = summary(explanation)
    assert text.startswith("Your program on XLA: not run (run=False") and "agrees with CPU" not in text
    assert "the graph moved to XLA: 1 frozen device pin(s)" in text and "-> not run (run=False" in text
    assert "torch.zeros" in pins_text(explanation)
