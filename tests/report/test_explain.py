"""explain(): one frozen object with the pins, both graphs, both runs and the verdict; every output form."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
import torch
from torch.utils._pytree import tree_leaves

import neurondev
from neurondev import examples, testing
from neurondev.report.skips import Skip
from tests.helpers import line_of

pytestmark = pytest.mark.xla


@pytest.fixture()
def seed_ex(seed_explained):
    return seed_explained


def test_the_seed_explanation_holds_pins_rewrites_runs_and_the_verdict(seed_ex):
    assert [(p.node, p.kind) for p in seed_ex.pins] == [("out", "frozen")]
    assert [(r.node, r.new) for r in seed_ex.rewrites] == [("out", torch.device("xla"))]
    (before,), (after,) = seed_ex.before, seed_ex.after
    assert [b.node for b in before.graph_breaks] == ["copy_"] and before.output_devices == ("cpu",)
    assert after.graph_breaks == () and after.output_devices == ("xla:0",) and after.ok
    (section,) = seed_ex.sections
    assert seed_ex.rewrite_preserves_values is True and section.rewrite_verdict.comparison.max_abs_error == 0
    assert seed_ex.xla_matches_cpu is True and section.cpu_verdict.status in ("equal", "within tolerance")
    assert section.key == neurondev.SectionKey(0, "whole") and section.traced is not section.rewritten
    assert section.before is before and section.after is after


def test_the_pin_table_is_built_on_demand_and_frozen_is_its_deprecated_alias(seed_ex):
    table = seed_ex.pin_table()
    assert list(table.node) == ["out"] and list(table.function) == ["torch.empty"] and list(table.part) == ["whole"]
    with pytest.warns(DeprecationWarning, match="pin_table"):
        assert list(seed_ex.frozen.node) == ["out"]


def test_an_explanation_cannot_be_written_to_after_it_is_built(seed_ex):
    with pytest.raises(dataclasses.FrozenInstanceError):
        seed_ex.skipped = "changed"
    with pytest.raises(dataclasses.FrozenInstanceError):
        seed_ex.sections[0].rewrite_verdict = None
    with pytest.raises(dataclasses.FrozenInstanceError):
        seed_ex.before[0].error = None
    with pytest.raises(TypeError):
        seed_ex.runtime["device"] = "elsewhere"


def fingerprint(explanation) -> list:
    """What displaying could change behind a record's back: each graph's code and node devices, and a
    checksum of every tensor it holds (inputs, outputs, captured values)."""

    def devices(gm):
        return [(n.name, str(n.kwargs.get("device")), str(getattr(n.meta.get("val"), "device", None))) for n in gm.graph.nodes]

    def checksums(value):
        return [(str(t.device), t.dtype, float(t.detach().double().sum().cpu())) for t in tree_leaves(value) if isinstance(t, torch.Tensor)]

    graphs = [gm for s in explanation.sections for gm in (s.traced, s.rewritten)] + list(explanation.capture.graphs)
    records = (*explanation.before, *explanation.after)
    return [
        [(gm.code, devices(gm)) for gm in graphs],
        checksums([s.inputs for s in explanation.sections]),
        checksums([r.outputs for r in records]),
        checksums((explanation.capture.example_inputs, explanation.capture.output)),
        [field.name for field in dataclasses.fields(explanation)],
    ]


def test_displaying_the_card_twice_changes_nothing_in_the_explanation(seed_ex):
    before = fingerprint(seed_ex)
    first, second = seed_ex._repr_html_(), seed_ex._repr_html_()
    seed_ex.summary(), seed_ex.to_json(), seed_ex.to_dot("after"), seed_ex.explore()
    assert first == second
    assert fingerprint(seed_ex) == before
    node = next(iter(seed_ex.sections[0].rewritten.graph.nodes))
    kept = node.meta.get("val")
    node.meta["val"] = torch.zeros(1, device="meta")  # a display that moved a value would fail the check
    try:
        assert fingerprint(seed_ex) != before
    finally:
        node.meta["val"] = kept
    assert fingerprint(seed_ex) == before


def test_the_summary_is_the_headline_a_terminal_shows(seed_ex):
    line = line_of(examples.seed_function, "torch.empty")
    assert seed_ex.summary() == (
        "Your program on XLA (torch.compile): as written (openxla) runs (1 graph(s), 0 transfer(s) to the host per call) and "
        "agrees with CPU; with the neurondev backend runs (1 graph(s), 0 transfer(s) to the host per call) and agrees with CPU. "
        f"Traced on CPU, the graph moved to XLA: 1 frozen device pin(s) (torch.empty at patterns.py:{line}) -> 1 graph break(s) "
        "on xla:0 (copy_ pulls a value to the host). After DeviceRewriterPass: 0 breaks, 0 transfers to the host; "
        f"the rewrite changed no values; the graph on XLA agrees with CPU. Fixes in your code: 1 verified (patterns.py:{line})."
    )
    assert repr(seed_ex) == "<Explanation of seed_function: 1 device pin(s) in 1 graph(s), 1 graph(s) run>"


@pytest.mark.dot
def test_the_card_has_headline_pins_fix_both_graphs_metrics_and_diff(seed_ex):
    card = seed_ex._repr_html_()
    assert "1 graph break(s) on xla:0" in card and "After DeviceRewriterPass: 0 breaks" in card
    assert "<td>x.new_empty(...) (verified)</td>" in card  # what to write instead, proven
    assert '<span class="nd-add">+ out = x.new_empty(64, dtype=torch.float32)</span>' in card
    assert (
        '<span class="nd-del">- out = torch.empty(64, dtype=torch.float32, device=x.device)</span>' in card
        and "Fixes in your code (1 of 1 verified)" in card
    )
    assert card.count("<svg") == 2 and "device=cpu (frozen)" in card and "rewritten: cpu → xla" in card
    assert "<th>mid-graph executions</th><td>1</td><td>0</td>" in card
    assert 'class="nd-del"' in card and 'class="nd-add"' in card and "device(type=&#x27;xla&#x27;)" in card
    assert "var(--jp-ui-font-color1" in card and "torch_xla 2.9" in card


def test_the_report_stands_alone(seed_ex, tmp_path):
    page = seed_ex.save_html(tmp_path / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page.lower()
    urls = set(re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)""", page))
    assert not any(u.startswith(("http:", "https:", "//")) for u in urls)
    assert "@import" not in page and "url(" not in page


def test_to_dict_and_to_json_hold_everything_as_plain_data(seed_ex):
    data = json.loads(seed_ex.to_json())
    assert data == seed_ex.to_dict()
    (graph,) = data["graphs"]
    assert graph["pins"][0]["node"] == "out" and "new_empty" in graph["pins"][0]["fix"]
    assert graph["rewrites"] == [{"node": "out", "location": "kwarg", "old": "cpu", "new": "xla", "graph": 0, "part": "whole"}]
    assert graph["before"]["graph_breaks"][0]["node"] == "copy_" and graph["after"]["graph_breaks"] == []
    assert graph["before"]["transfers_to_host"] == 1 and graph["rewrite_verdict"]["matches"] is True
    assert data["totals"]["before"]["graph_breaks"] == 1 and data["totals"]["after"]["graph_breaks"] == 0
    assert data["rewrite_preserves_values"] is True and data["runtime"]["device"] == "xla:0"
    (fix,) = data["fixes"]
    assert fix["status"] == "verified" and fix["after"] == "out = x.new_empty(64, dtype=torch.float32)" and fix["removes"] == ["out"]


@pytest.mark.dot
def test_dot_and_svg_of_either_graph(seed_ex, tmp_path):
    assert '"before_out"' in seed_ex.to_dot("before") and "rewritten: cpu → xla" in seed_ex.to_dot("after")
    assert seed_ex.to_dot("after", neurondev.SectionKey(0)) == seed_ex.to_dot("after", 0)
    path = seed_ex.save_svg(tmp_path / "after.svg", which="after")
    assert path.read_text().startswith("<svg") and "xla:0" in path.read_text()


def test_explain_fn_then_inputs_is_the_same_as_explain_fn_inputs():
    fn, args, _ = examples.get("seed").build()
    later = neurondev.explain(fn, quiet=True)
    assert callable(later)
    ex = later(*args)
    assert isinstance(ex, neurondev.Explanation) and ex.summary() == neurondev.explain(fn, *args, quiet=True).summary()


def test_progress_goes_to_stderr_per_stage_unless_quiet(capsys):
    fn, args, _ = examples.get("seed").build()
    neurondev.explain(fn, *args)
    err = capsys.readouterr().err
    stages = ("start the device", "trace", "find pins", "rewrite", "run before", "run after", "your program on the device", "verify fixes")
    for stage in (f"{name} ({n}/8)" for n, name in enumerate(stages, 1)):
        assert stage in err
    neurondev.explain(fn, *args, run=False, quiet=True)
    assert capsys.readouterr().err == ""


@pytest.mark.dot
def test_run_false_still_finds_rewrites_and_draws_and_says_why_no_run():
    fn, args, _ = examples.get("seed").build()
    ex = neurondev.explain(fn, *args, run=False, quiet=True)
    assert ex.before == () and ex.after == () and ex.skipped == Skip("run off")
    assert len(ex.rewrites) == 1 and ex.rewrite_preserves_values is None and ex.xla_matches_cpu is None
    assert "not run" in ex.summary() and ex._repr_html_().count("<svg") == 2


def test_rerun_returns_a_new_explanation_and_leaves_the_first_as_it_was():
    fn, args, _ = examples.get("seed").build()
    first = neurondev.explain(fn, *args, run=False, quiet=True)
    again = first.rerun(target="xla:0")
    assert again is not first and first.before == () and first.skipped == Skip("run off")
    assert str(again.target) == "xla:0" and [r.new for r in again.rewrites] == [torch.device("xla", 0)]
    assert again.after[0].ok and again.runtime["device"] == "xla:0" and again.capture is first.capture


def no_pins(x):
    return torch.zeros_like(x) + x.new_ones(4)


def test_a_function_without_pins_says_so_and_both_runs_are_identical():
    ex = neurondev.explain(no_pins, torch.randn(4), quiet=True)
    assert ex.pins == () and ex.pin_table().empty and ex.rewrites == ()
    assert "No device pin" in ex.summary() and "No device pin in this graph" in ex._repr_html_()
    (before,), (after,) = ex.before, ex.after
    assert before.ok and after.ok and ex.rewrite_preserves_values is True
    assert ex.sections[0].rewrite_verdict.status == "equal"


def split(x):
    y = torch.zeros(4, device=x.device) + x
    print("dynamo splits the graph here")
    z = torch.ones(4, device=x.device) * y
    return {"z": z, "parts": [y, 3]}


def test_every_dynamo_graph_is_explained_with_dynamos_breaks_and_totals():
    ex = neurondev.explain(split, torch.randn(4), quiet=True)
    assert [s.key for s in ex.sections] == [neurondev.SectionKey(0), neurondev.SectionKey(1)]
    assert [p.graph for p in ex.pins] == [0, 1] and [r.graph for r in ex.rewrites] == [0, 1]
    (brk,) = ex.capture.dynamo_breaks
    assert brk.line == line_of(split, "print(")
    assert ex.totals("after").graphs_run == 2 and ex.rewrite_preserves_values is True
    card = ex._repr_html_()
    assert "Graph 0 " in card and "Graph 1 " in card and "Dynamo's own graph breaks (1)" in card
    assert "Totals over 2 graphs" in card and "<tr><th>graphs run</th><td>2</td><td>2</td></tr>" in card
    assert "Dynamo split split into 2 graphs at 1 break(s) of its own." in ex.summary()


def fails_frozen(w, x):
    idx = torch.arange(4, device=x.device)
    return torch.nn.functional.embedding(idx, w) + x


def test_a_graph_that_fails_on_xla_before_the_pass_shows_the_failure_and_its_line():
    ex = neurondev.explain(fails_frozen, torch.randn(10, 3), torch.randn(4, 3), quiet=True)
    (before,), (after,) = ex.before, ex.after
    assert before.error is not None and before.error.node == "embedding"
    assert before.error.line == line_of(fails_frozen, "embedding(")
    assert after.error is None and after.ok and ex.xla_matches_cpu is True
    reason = ex.sections[0].rewrite_verdict.reason
    assert ex.rewrite_preserves_values is None and (reason.kind, reason.graph, reason.device, reason.node) == (
        "graph failed",
        "frozen",
        "xla:0",
        "embedding",
    )
    assert "fails on xla:0 at embedding" in ex.summary() and "FAILED: " in ex.to_dot("before")


def test_the_users_inputs_function_and_counters_are_left_alone():
    from neurondev import xla

    def writes(x):
        x.add_(1)
        return torch.zeros(4, device=x.device) + x

    x = torch.zeros(4)
    code = writes.__code__
    xla.device()
    counters = xla.counts()
    neurondev.explain(writes, x, quiet=True)
    assert torch.equal(x, torch.zeros(4)) and writes.__code__ is code
    assert xla.counts().executions >= counters.executions


def test_a_capture_can_be_explained_without_tracing_again(seed_capture):
    ex = neurondev.explain(seed_capture, quiet=True, run=False)
    assert ex.capture is seed_capture and len(ex.pins) == 1


@pytest.mark.dot
def test_a_graph_of_5000_nodes_gets_a_card_with_the_focus_view():
    gm = testing.long_graph(5_000, pins=2)
    captured = neurondev.Capture("big", [gm], [[torch.randn(4)]])
    ex = neurondev.explain(captured, run=False, quiet=True)
    assert len(ex.pins) == 2 and len(ex.rewrites) == 2
    card = ex._repr_html_()
    assert card.count("<svg") == 2 and "node(s) not shown" in card
    assert ex.to_dot("before").count("[label=") < 40


class TwoLayers(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        positions = torch.arange(4, device=x.device)
        return self.lin(x + positions).sum()


def test_aten_level_with_native_matches_sections_by_key_not_by_position():
    torch.manual_seed(0)
    ex = neurondev.explain(TwoLayers(), torch.randn(2, 4, requires_grad=True), level="aten", native=True, quiet=True)
    assert [s.key for s in ex.sections] == [neurondev.SectionKey(0, "forward"), neurondev.SectionKey(0, "backward")]
    assert ex.traces is not None and ex.traces.native.graphs
    assert all(s.native is None for s in ex.sections)  # the native trace has dynamo graphs, no forward/backward keys
    assert "Traced natively on XLA" in ex._repr_html_()


def test_without_a_dot_program_the_card_shows_everything_else_and_how_to_install_one(seed_capture, monkeypatch):
    monkeypatch.setenv("NEURONDEV_DOT", "/nonexistent/dot")
    ex = neurondev.explain(seed_capture, run=False, quiet=True)
    card = ex._repr_html_()
    assert "<svg" not in card and card.count("Graph not drawn: no Graphviz") == 2
    assert "apt-get install -y graphviz" in card and "pip install graphviz-pure" in card
    assert "x.new_empty(...) (not verified)" in card  # the rest is there (a Capture: nothing to trace again)
    assert "not verified: explain was given a Capture; pass the function and its inputs to verify fixes" in card


def takes_run(x, run=False):
    return torch.zeros(4, device=x.device) + x if run else x * 2


def test_the_two_step_form_keeps_explains_options_and_the_functions_own_apart():
    ex = neurondev.explain(takes_run, run=False, quiet=True)(torch.randn(4), run=True)
    assert ex.skipped == Skip("run off") and len(ex.pins) == 1  # run=True reached takes_run: its pin was traced
    ex = neurondev.explain(takes_run, torch.randn(4), quiet=True)  # no clash when the option is not given
    assert ex.pins == ()


def test_a_warning_points_at_the_users_call_not_inside_neurondev():
    with pytest.warns(neurondev.NoGraphWarning) as caught:
        neurondev.explain(lambda x: 3, torch.randn(2), quiet=True)
    assert caught[0].filename == __file__


def test_a_trace_error_leads_with_the_users_line():
    def broken(x):
        y = x * 2
        return y @ torch.randn(5, 5)

    with pytest.raises(neurondev.TraceError) as caught:
        neurondev.explain(broken, torch.randn(3, 3), quiet=True)
    line = line_of(broken, "y @ torch")
    assert f"at test_explain.py:{line} (return y @ torch.randn(5, 5))" in str(caught.value)
    assert isinstance(caught.value.__cause__, Exception)  # torch's own error, kept as the cause


def many_pins(x):
    total = x
    for _ in range(400):
        total = total + torch.ones(4, device=x.device)  # 400 pins, one line
    return total


def test_a_card_with_400_pins_shows_one_row_per_line_and_stays_small():
    from neurondev.report.options import ExplainOptions
    from neurondev.report.pipeline import explain_with
    from neurondev.results.explanation import Explanation

    # the pin table alone is under test: nothing runs and no fix is verified (400 of them would take the time)
    options = ExplainOptions(torch.device("xla"), run=False, quiet=True, program=False, fixes=False)
    ex = Explanation.of(explain_with(many_pins, (torch.randn(4),), {}, options))
    assert len(ex.pins) == 400
    card = ex._repr_html_()
    grouped = card.split('<table class="nd-pins">', 1)[1].split("</table>", 1)[0]
    assert grouped.count("<tr>") == 2 and "<td>400</td>" in grouped
    every = card.split('<details class="nd-all-pins">', 1)[1].split("</details>", 1)[0]
    assert "Every pin (400)</summary>" in every and every.count("<tr>") == 401 and len(every) < 100_000


def test_a_training_step_in_a_fresh_process_prints_nothing_and_runs_as_a_program():
    """XLA starts before the CPU trace back-propagates (autograd sizes its device queues once), and a graph
    that fails on CPU (an optimizer step's in-place update of a leaf) no longer prints torch.fx's traceback."""
    from tests.helpers import run_python

    result = run_python(
        """
import torch, neurondev
torch.manual_seed(0)
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
def train_step(model, opt, x):
    loss = model(x).pow(2).mean()
    loss.backward(); opt.step(); opt.zero_grad()
    return loss
x = torch.randn(8, 4)
state = torch.get_rng_state()
ex = neurondev.explain(train_step, model, opt, x, quiet=True)
print("rng kept:", torch.equal(state, torch.get_rng_state()))
print("program:", ex.program.as_written.ok, ex.program.rewritten.ok, ex.xla_matches_cpu)
"""
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "rng kept: True" in result.stdout and "program: True True True" in result.stdout
    assert "Traceback" not in result.stderr and "FX-traced Module" not in result.stderr


def test_an_exported_program_is_explained_from_its_graph_and_run_as_its_module():
    class Buffered(torch.nn.Module):
        def forward(self, x):
            out = torch.empty(8, device=x.device)
            out.copy_(x * 2)
            return out

    program = torch.export.export(Buffered(), (torch.randn(8),))
    ex = neurondev.explain(program, torch.randn(8), quiet=True)
    (pin,) = ex.pins
    assert pin.function == "aten.empty.memory_format" and [b.node for b in ex.before[0].graph_breaks] == ["copy_"]
    assert ex.after[0].graph_breaks == () and ex.xla_matches_cpu is True and ex.traces_skipped == Skip("exported")
