"""Honest verdicts: two questions answered apart (did the rewrite change the values; does XLA agree
with CPU), random values named instead of called a difference, a wrong frozen run not blamed on
the rewrite, host values, unused pins and results handed back at the end said as what they are."""

from __future__ import annotations

import json

import pytest
import torch

import neurondev
from neurondev.render.fix_words import host_value_fix
from neurondev.render.sentences import describe
from tests.helpers import line_of

pytestmark = pytest.mark.xla

TABLE = torch.arange(8.0)


def reads_a_global(x):
    return x * TABLE


def test_a_global_tensor_is_a_host_value_kept_on_the_host_in_the_runs_and_a_finding_of_check():
    ex = neurondev.explain(reads_a_global, torch.randn(8), quiet=True)
    (value,) = ex.host_values
    assert (value.origin, value.kind, value.line if hasattr(value, "line") else value.source.line) == (
        "TABLE",
        "global",
        line_of(reads_a_global, "x * TABLE"),
    )
    assert [u.node for u in ex.after[0].uploads] == ["mul"]  # it stayed on the host: uploaded on every call
    assert "1 host value(s) that stay on the CPU when the model moves to XLA (TABLE at test_verdicts.py:" in ex.summary()
    assert "register_buffer" not in host_value_fix(value) and "pass TABLE in as an argument" in host_value_fix(value)
    ran = ex.program.as_written
    said = "runs, copying them to the device on every call" if ran.ok else f"fails on them ({ran.failure.kind}"
    assert said in ex._repr_html_() and "refuses" not in ex._repr_html_()  # the card says what its own program run showed
    with pytest.raises(neurondev.DevicePinsError, match="host value") as caught:
        neurondev.check(reads_a_global, torch.randn(8))
    assert [f.kind for f in caught.value.findings] == ["host value"]


SCALE = torch.tensor(3.0)


def reads_a_scalar_global(x):
    return x * SCALE


def test_a_0_dim_global_is_a_scalar_the_device_takes_not_a_host_value_for_the_card_and_the_backend_alike():
    from neurondev.devices.compiler import input_placement

    ex = neurondev.explain(reads_a_scalar_global, torch.randn(8), quiet=True)
    assert ex.host_values == () and ex.program.as_written.ok and ex.program.rewritten.ok
    gm, inputs = ex.capture.graphs[0], ex.capture.example_inputs[0]
    assert not any("scale" in name.lower() for name in input_placement(gm, list(inputs)).host_names)  # the backend's rule is the card's
    table = neurondev.capture(reads_a_global, torch.randn(8))
    assert any("table" in name.lower() for name in input_placement(table.graphs[0], list(table.example_inputs[0])).host_names)


class WithTable(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.table = torch.arange(8.0)  # a plain attribute: model.to(device) leaves it behind
        self.register_buffer("scale", torch.ones(8))

    def forward(self, x):
        return self.lin(x) * self.table * self.scale


def test_a_plain_module_attribute_is_a_host_value_and_buffers_and_parameters_are_not():
    ex = neurondev.explain(WithTable(), torch.randn(2, 8), quiet=True)
    assert [(v.origin, v.kind) for v in ex.host_values] == [("self.table", "attribute")]
    assert ex.host_values[0].kind == "attribute" and "self.register_buffer('table', ...)" in host_value_fix(ex.host_values[0])
    assert "host value" in ex._repr_html_()


def draws(x):
    return x + torch.rand(4, device=x.device)


def test_random_values_are_named_never_called_a_difference():
    ex = neurondev.explain(draws, torch.randn(4), quiet=True)
    (section,) = ex.sections
    assert section.rewrite_verdict.status == "not comparable" and section.cpu_verdict.status == "not comparable"
    line = line_of(draws, "torch.rand")
    reason = section.rewrite_verdict.reason
    assert (reason.kind, reason.node, reason.where, reason.draws) == ("random", "rand", f"test_verdicts.py:{line}", "moved")
    assert f"random node rand (test_verdicts.py:{line})" in ex.summary()  # one golden sentence
    assert ex.rewrite_preserves_values is None and ex.xla_matches_cpu is None and "DIFFER" not in ex.summary()


def drops(x):
    return torch.nn.functional.dropout(x, 0.5, training=True) * torch.ones(4, device=x.device)


def test_random_ops_on_the_same_device_before_and_after_compare_with_the_same_seed():
    ex = neurondev.explain(drops, torch.randn(4), quiet=True)
    (section,) = ex.sections
    assert section.rewrite_verdict.status == "equal" and section.cpu_verdict.status == "not comparable"


def test_the_cli_does_not_call_random_values_a_difference(tmp_path, monkeypatch, capsys):
    from neurondev import cli

    (tmp_path / "user.py").write_text("import torch\ndef f(x):\n    return x + torch.rand(4, device=x.device)\n")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["explain", "user.py:f", "--input", "randn(4)"]) == 0
    assert "not comparable: random node rand" in capsys.readouterr().out


def frozen_run_is_wrong(x):
    with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
        return x @ x.T


def test_a_wrong_frozen_run_is_not_blamed_on_the_rewrite():
    ex = neurondev.explain(frozen_run_is_wrong, torch.randn(4, 4), quiet=True)
    (section,) = ex.sections
    assert section.rewrite_verdict.status == "fixed" and "was wrong (dtypes DIFFER" in describe(section.rewrite_verdict)
    assert section.cpu_verdict.status == "equal" and ex.rewrite_preserves_values is True and ex.xla_matches_cpu is True


def test_both_verdicts_are_said_and_kept_apart_in_the_data():
    fn = neurondev.examples.get("seed").build()[0]
    ex = neurondev.explain(fn, torch.randn(64), quiet=True)
    assert "the rewrite changed no values; the graph on XLA agrees with CPU" in ex.summary()
    data = json.loads(ex.to_json())
    assert data["rewrite_preserves_values"] is True and data["xla_matches_cpu"] is True
    assert data["graphs"][0]["rewrite_verdict"]["status"] == "equal" and data["graphs"][0]["cpu_verdict"]["question"] == "cpu"
    with pytest.warns(DeprecationWarning, match="merged two verdicts"):
        assert ex.outputs_match is True


def hands_back(x):
    y = torch.relu(x) * 2
    return y.to("cpu")


def test_results_handed_back_at_the_end_are_kept_and_counted_apart_from_breaks():
    ex = neurondev.explain(hands_back, torch.randn(4), quiet=True)
    (pin,) = ex.pins
    assert pin.output_transfer and ex.rewrites == ()
    (after,) = ex.after
    assert after.graph_breaks == () and [t.node for t in after.output_transfers] == ["to"] and after.ok
    assert after.output_devices == ("cpu",) and ex.totals("after").output_transfers == 1
    assert "1 move(s) of results to the host at the end, kept" in ex.summary()
    assert "(and 1 at the end, results handed back as you wrote)" in ex.summary()
    assert neurondev.check(hands_back, torch.randn(4)).pins == (pin,)  # not a finding


def makes_a_dead_arange(x):
    unused = torch.arange(4, device=x.device)  # noqa: F841 - transformers' mask code leaves one like it
    return x * 2


def test_a_pin_nothing_uses_is_listed_as_unused_not_alarmed_about():
    ex = neurondev.explain(makes_a_dead_arange, torch.randn(4), quiet=True)
    (pin,) = ex.pins
    assert pin.unused and "1 unused (no node reads them: they cost nothing)" in ex.summary()
    assert "Traced on CPU, the graph moved to XLA: No device pin" in ex.summary()
    neurondev.check(makes_a_dead_arange, torch.randn(4))  # passes


@pytest.mark.parametrize(
    "actual, expected, words",
    [
        (torch.tensor([float("-inf"), 1.0]), torch.tensor([float("-inf"), 1.0]), "equal"),
        (torch.tensor([1 + 2j, 3j]), torch.tensor([1 + 2j, 3j]), "equal"),
        (torch.tensor([1 + 2j, 3j]), torch.tensor([1 + 2j, 4j]), "DIFFER (1 of 2 elements off"),
        (torch.ones(3), torch.ones(0), "shapes DIFFER at output 0: (3,) vs (0,)"),
        (torch.ones(3), torch.ones(3, dtype=torch.bfloat16), "dtypes DIFFER at output 0: float32 vs bfloat16"),
    ],
    ids=["equal-infinities", "complex-equal", "complex-imaginary-differs", "shape", "dtype"],
)
def test_comparisons_say_what_differs(actual, expected, words, recwarn):
    from neurondev.runs.values import compare_outputs

    assert describe(compare_outputs(actual, expected)).startswith(words)
    assert not [w for w in recwarn if "imaginary" in str(w.message)]  # no torch warning leaks


def test_the_json_is_strict_even_with_infinite_figures():
    def infinite(x):
        return torch.zeros(2, device=x.device) + x / 0

    ex = neurondev.explain(infinite, torch.ones(2), quiet=True)
    text = ex.to_json()
    assert "Infinity" not in text and "NaN" not in text
    data = json.loads(text)
    assert data["xla_matches_cpu"] is True and data["rewrite_preserves_values"] is True  # inf on both sides: a match


def test_a_frozen_run_of_the_wrong_shape_is_a_shape_mismatch_the_rewrite_fixed():
    from neurondev.report.verdicts import rewrite_verdict
    from neurondev.runs.run_records import RunRecord
    from neurondev.runs.values import compare_outputs

    reference = torch.arange(4.0)
    gm = torch.fx.symbolic_trace(lambda x: x * 2)
    before = RunRecord("xla:0", outputs=torch.zeros(0), comparison=compare_outputs(torch.zeros(0), reference))
    after = RunRecord("xla:0", outputs=reference.clone(), comparison=compare_outputs(reference.clone(), reference))
    verdict = rewrite_verdict(gm, before, after, None, None)
    assert verdict.status == "fixed" and "shapes DIFFER at output 0: (0,) vs (4,)" in describe(verdict)
    assert "0 of 0 elements off" not in describe(verdict)
