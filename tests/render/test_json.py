"""The JSON of an Explanation: strict JSON (no NaN), devices as text, the pins and the program's verdicts as they are."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

from neurondev.render.json import plain
from tests.helpers import line_of

pytestmark = pytest.mark.xla


def test_plain_is_strict_json_devices_and_dtypes_as_text_tuples_as_lists():
    value = {"d": torch.device("xla:0"), "t": torch.float16, "n": math.nan, "i": -math.inf, "xs": (1, 2.5, None, True)}
    assert plain(value) == {"d": "xla:0", "t": "torch.float16", "n": "nan", "i": "-inf", "xs": [1, 2.5, None, True]}
    json.dumps(plain(value), allow_nan=False)
    from types import MappingProxyType

    assert plain(MappingProxyType({"d": torch.device("cpu"), "n": (1,)})) == {"d": "cpu", "n": [1]}  # any mapping: a dict


class _Doubles(torch.nn.Module):
    def forward(self, x):
        return x * 2


def test_an_exported_programs_json_says_why_its_graph_is_not_compared_and_notes_what_it_is():
    import neurondev
    from neurondev.render.sentences import capture_note_text, skip_text

    program = torch.export.export(_Doubles(), (torch.randn(4),))
    ex = neurondev.explain(program, torch.randn(4), run=False, quiet=True)
    data = json.loads(ex.to_json())
    assert data["native_skipped"] == {"kind": "exported", "text": skip_text(ex.traces_skipped, "native")}
    (note,) = ex.notes
    assert data["notes"] == [_as_json({**note.to_dict(), "text": capture_note_text(note)})] and data["notes"][0]["kind"] == "exported"
    assert "ExportedProgram" in data["notes"][0]["text"] and data["runtime"] == {}  # not run: no runtime chosen


def test_checks_json_finding_has_its_facts_its_words_and_its_rules_page():
    import neurondev
    from neurondev.render.json import check_finding
    from neurondev.render.sentences import finding_detail, finding_fix

    def pinned(x):
        return torch.zeros(4, device=x.device) + x

    with pytest.raises(neurondev.DevicePinsError) as caught:
        neurondev.check(pinned, torch.randn(4))
    (finding,) = caught.value.findings
    entry = json.loads(json.dumps(check_finding(finding)))
    assert entry == _as_json({**finding.to_dict(), "detail": finding_detail(finding), "fix": finding_fix(finding), "url": entry["url"]})
    assert entry["url"].endswith("rules/ND101.html") and entry["fix"] and entry["detail"]
    assert (entry["rule"], entry["line"]) == ("ND101", line_of(pinned, "torch.zeros"))


def test_the_seeds_json_names_its_pin_its_fix_and_both_scenarios(seed_explained):
    data = json.loads(seed_explained.to_json())
    (pin,) = data["graphs"][0]["pins"]
    assert (pin["node"], pin["function"], pin["where"], pin["kind"], pin["format"]) == (
        "out",
        "torch.empty",
        "patterns.py:39",
        "frozen",
        "torch.device",
    )
    assert data["pins"] == 1 and data["graphs"][0]["rewrites"][0]["new"] == "xla"
    assert data["totals"]["before"]["graph_breaks"] == 1 and data["totals"]["after"]["graph_breaks"] == 0  # the graph-level runs
    assert data["program"]["rewritten"]["ok"] is True and data["xla_matches_cpu"] is True  # the program runs
    assert data["fixes"][0]["after"] == "out = x.new_empty(64, dtype=torch.float32)" and data["fixes"][0]["status"] == "verified"


def _as_json(value):
    return json.loads(json.dumps(plain(value), allow_nan=False))


def test_each_key_of_a_graphs_json_is_its_sections_record_and_the_seeds_facts_are_in_it(seed_explained):
    """Every key of ``graphs[i]`` carries its section's record as it is (through JSON), and the seed's facts: one
    frozen pin, rewritten to xla; the code before names the CPU and the code after does not; the break before the pass
    and none after; each verdict with the card's sentence."""
    from neurondev.render.sentences import describe

    data = json.loads(seed_explained.to_json())
    (section,) = seed_explained.sections
    (graph,) = data["graphs"]
    native = section.native
    assert graph == {
        "graph": section.key.graph,
        "part": section.key.part,
        "label": section.label,
        "native_seconds": _as_json(dataclasses.asdict(native)) if native else None,
        "native_ratio": _as_json(native.ratio) if native else None,
        "nodes": section.nodes,
        "pins": graph["pins"],  # below, key by key
        "rewrites": _as_json([dataclasses.asdict(r) for r in section.rewrites]),
        "code_before": section.traced.code,
        "code_after": section.rewritten.code,
        "before": _as_json(section.before.to_dict()),
        "after": _as_json(section.after.to_dict()),
        "rewrite_verdict": _as_json({**section.rewrite_verdict.to_dict(), "text": describe(section.rewrite_verdict)}),
        "cpu_verdict": _as_json({**section.cpu_verdict.to_dict(), "text": describe(section.cpu_verdict)}),
        "host_values": [],
        "cpu_kernels": [],
    }
    (pin,) = graph["pins"]
    (record,) = section.pins
    assert pin == _as_json({**record.row(), "where": record.where, "url": pin["url"], "fix": pin["fix"]})
    assert pin["url"].endswith("rules/ND101.html") and "new_empty" in pin["fix"]  # the rule's page, the fix's words
    assert "device(type='cpu')" in graph["code_before"] and "device(type='cpu')" not in graph["code_after"]
    assert [(b["rule"], b["node"]) for b in graph["before"]["graph_breaks"]] == [("ND201", "copy_")] and graph["after"][
        "graph_breaks"
    ] == []
    assert graph["rewrites"][0]["new"] == "xla" and graph["nodes"] == len(list(section.traced.graph.nodes))
    assert graph["rewrite_verdict"]["text"] and graph["cpu_verdict"]["text"]


def test_the_programs_and_the_explanations_own_keys_are_its_records(seed_explained):
    from neurondev.render.sentences import describe

    data = json.loads(seed_explained.to_json())
    ex = seed_explained
    assert (data["name"], data["target"], data["level"], data["pins"]) == (ex.name, str(ex.target), ex.level, 1)
    assert (data["rewrite_preserves_values"], data["graphs_match_cpu"], data["xla_matches_cpu"]) == (True, True, True)
    for name, run in (("as_written", ex.program.as_written), ("rewritten", ex.program.rewritten)):
        failure = _as_json({**run.failure.to_dict(), "text": describe(run.failure)}) if run.failure else None
        assert data["program"][name] == _as_json({**run.to_dict(), "failure": failure, "text": describe(run)}), name
    assert (
        data["program"]["as_written"]["ok"] and "0 transfer(s) to the host" in data["program"]["as_written"]["text"]
    )  # on the device: x.device is xla
    assert data["totals"] == _as_json({"before": ex.totals("before").to_dict(), "after": ex.totals("after").to_dict()})
    assert data["first_difference"] is None and data["dynamo_breaks"] == [] and data["schema"] == 3
    assert data["device_specialised"] == [] and data["moved_inputs"] == [] and data["notes"] == []  # the seed has none
    from neurondev.render.sentences import runtime_info_text, why_text
    from neurondev.render.text import summary

    assert data["summary"] == summary(ex) and "Fixes in your code: 1 verified" in data["summary"]
    assert data["runtime"] == (_as_json({**ex.runtime, "why": runtime_info_text(ex.runtime)}) if ex.runtime else {})
    (fix,) = data["fixes"]
    assert fix == _as_json({**ex.fixes[0].to_dict(), "why": why_text(ex.fixes[0])}) and fix["why"]


TABLE = torch.arange(8.0)  # a host value: a global tensor the program reads


def _split_reading_a_global(x):
    y = x * TABLE
    return y * y.sum().item()  # dynamo splits here


def _attention(q):
    return torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)  # a kernel the CPU trace chose


def test_a_dynamo_split_a_host_value_and_a_cpu_kernel_as_json_with_their_fixes():
    import neurondev
    from neurondev.render.fix_words import CPU_KERNEL_FIX, host_value_fix

    split = neurondev.explain(_split_reading_a_global, torch.randn(8), quiet=True)
    kernels = neurondev.explain(_attention, torch.randn(1, 2, 4, 8), level="aten", quiet=True)
    data = json.loads(split.to_json())
    (dynamo_break,) = data["dynamo_breaks"]
    assert dynamo_break["reason"] and dynamo_break["line"] == line_of(_split_reading_a_global, ".item()")
    for ex in (split, kernels):
        graphs = json.loads(ex.to_json())["graphs"]
        for graph, section in zip(graphs, ex.sections, strict=True):
            assert graph["host_values"] == _as_json([{**v.to_dict(), "fix": host_value_fix(v)} for v in section.host_values])
            assert graph["cpu_kernels"] == _as_json([{**k.to_dict(), "fix": CPU_KERNEL_FIX} for k in section.cpu_kernels])
    assert [value.origin for value in split.host_values] == ["TABLE"] and kernels.cpu_kernels


def test_a_stage_that_did_not_run_says_why_in_its_json_with_the_cards_words():
    import neurondev
    from neurondev.render.sentences import skip_text

    ex = neurondev.explain(lambda x: x * 2, torch.randn(4), run=False, quiet=True)
    data = json.loads(ex.to_json())
    assert data["program_skipped"] == {"kind": "run off", "text": skip_text(ex.program_skipped, "program")}
    assert data["skipped"] == {"kind": "run off", "text": skip_text(ex.skipped, "graphs")}
    assert "not run" in data["program_skipped"]["text"] and data["program"] is None and data["native"] is None


def _mixes_devices(x):
    bias = torch.zeros(64, device="cpu")
    return torch.addcmul(bias, x, x)  # fails to compile on XLA: two devices


def test_a_programs_failure_as_json_with_its_facts_line_and_sentence():
    import neurondev
    from neurondev.render.sentences import describe

    ex = neurondev.explain(_mixes_devices, torch.randn(64), quiet=True)
    failure = json.loads(ex.to_json())["program"]["as_written"]["failure"]
    record = ex.program.as_written.failure
    assert failure == _as_json({**record.to_dict(), "text": describe(record)})
    assert (failure["rule"], failure["kind"], failure["stage"]) == ("ND301", "mixed devices at compile time", "compile")
    assert failure["line"] == line_of(_mixes_devices, "addcmul") and "two different devices" in failure["message"]


def test_a_check_finding_without_a_rule_has_no_page():
    from neurondev.render.json import check_finding
    from neurondev.report.findings import Finding

    entry = check_finding(Finding("program", "", "your program", None, None, why="not run"))  # no rule names it (rule=None)
    assert entry["rule"] is None and entry["url"] is None and entry["why"] == "not run"


def test_an_explanation_of_a_capture_of_inputs_on_the_device_lists_what_was_moved_to_the_cpu_to_trace():
    import dataclasses

    import neurondev

    device = neurondev.host_device()
    model, x = torch.nn.Linear(3, 2).to(device), torch.randn(4, 3).to(device)
    captured = neurondev.capture(model, x)
    data = json.loads(neurondev.explain(captured, target=device, run=False, quiet=True).to_json())
    assert data["moved_inputs"] == _as_json([dataclasses.asdict(moved) for moved in captured.moved_inputs])
    assert data["moved_inputs"] == [{"path": path, "device": "hostdev:0"} for path in ("module.weight", "module.bias", "args[0]")]
