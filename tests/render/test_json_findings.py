"""Every kind of finding as JSON: the keys a consumer relies on, each fact the record's own (never overwritten by the
finding's words), its rule's code beside its source line, and where it is (None where it has none)."""

from __future__ import annotations

import json

import pytest
import torch

import neurondev
from neurondev import rulebook
from neurondev.render.json import plain
from neurondev.report.findings import explanation_findings, finding_entry, watch_findings
from tests.helpers import line_of

WORDS = {"rule", "name", "scenario", "url", "text"}
WHERE = {"where", "file", "line", "code"}
PIN = {"default_pass", "device", "format", "function", "graph", "kind", "kwargs_pass", "location", "node", "op", "output_transfer"}
PIN |= {"part", "unused", "users"}
# The record's own facts of each rule's finding, beside WORDS and WHERE.
FACTS = {
    "ND101": PIN,
    "ND102": PIN,
    "ND109": {"reason"},
    "ND201": {"executions", "function", "node", "transfers_to_host"},
    "ND202": {"bytes", "calls", "direction", "module", "seen_in", "what"},
    "ND203": {"bytes", "calls", "direction", "module", "seen_in", "what"},
    "ND204": {"bytes", "collective", "function", "module", "node", "syncs", "transfers_to_host"},
    "ND205": {"bytes", "called", "calls", "module", "node", "op"},
    "ND207": {"exception", "function", "input_index", "message", "node"},
    "ND301": {"call", "exception", "graph", "kind", "message", "stage"},
    "ND405": {"after", "before", "dim", "guard", "kind", "library", "limit", "measure", "value"},
    "ND411": {"period", "side", "since", "steps", "verdict"},
}


def native(x, ids, weight):
    host = x.cpu()  # ND202
    scale = x.sum().item()  # ND204
    table = torch.tensor([1.0, 2.0]).to(x.device)  # ND203
    return torch.nn.functional.embedding(ids, weight).sum() + host.sum().to(x.device) * scale + table.sum()  # ND205


def literal(x):
    bias = torch.zeros(64, device="cpu")  # ND102
    return torch.addcmul(bias, x, x)  # ND207 on XLA, ND301 as a program


def _entries(records) -> list[dict]:
    return [json.loads(json.dumps(plain(finding_entry(record, "said")))) for record in records]


def _assert_each_is_its_records(records) -> dict[str, dict]:
    """Each entry holds its record's facts unchanged, its rule's code under "rule" and its line's code under "code"."""
    by_rule = {}
    for record, entry in zip(records, _entries(records)):
        facts = plain(record.to_dict() if hasattr(record, "to_dict") else {**record.row(), "where": record.where})
        if "scenario" in facts:  # a copy site's run: kept as seen_in beside the rule's scenario
            assert entry["seen_in"] == facts.pop("scenario") and entry["scenario"] == rulebook.rule_named(record.rule).scenario
        own = {key: value for key, value in facts.items() if key not in ("rule", "text")}  # the finding's text: the card's sentence
        assert {key: entry[key] for key in own} == own
        assert entry["rule"] == record.rule and entry["text"] == "said" and entry["url"].endswith(f"rules/{record.rule}.html")
        source = getattr(record, "source", None)
        assert entry["code"] == (source.code if source is not None else None)  # the line's text, never the rule's code
        by_rule.setdefault(entry["rule"], entry)
    return by_rule


def _keys_are(by_rule: dict[str, dict]) -> None:
    for rule, entry in by_rule.items():
        assert set(entry) == WORDS | WHERE | FACTS[rule], rule


def test_a_native_programs_copies_syncs_uploads_and_fallbacks_as_json():
    device = neurondev.host_device(fallback=["aten::index_select"])
    try:
        ex = neurondev.explain(native, torch.randn(4), torch.tensor([1, 2]), torch.randn(4, 3), target=device, quiet=True)
    finally:
        neurondev.host_device()
    records = explanation_findings(ex)
    by_rule = _assert_each_is_its_records(records)
    assert {"ND202", "ND203", "ND204", "ND205"} <= set(by_rule)
    assert [record.line for record in records if record.rule == "ND204"] == [line_of(native, ".item()")]  # the copy's line: ND202 only
    _keys_are({rule: entry for rule, entry in by_rule.items() if rule in FACTS})
    assert (by_rule["ND202"]["line"], by_rule["ND202"]["code"]) == (line_of(native, "x.cpu()"), "host = x.cpu()  # ND202")
    assert by_rule["ND204"]["line"] == line_of(native, ".item()") and by_rule["ND204"]["syncs"] == 1
    assert by_rule["ND205"]["op"].startswith("aten::index_select") and by_rule["ND205"]["calls"] == 1
    from neurondev.render.sentences import describe

    data = json.loads(ex.to_json())  # the native run: its record and the card's sentence, and no skip
    assert data["native"] == json.loads(json.dumps(plain({**ex.traces.to_dict(), "summary": describe(ex.traces)})))
    assert data["native"]["summary"] and data["native_skipped"] is None


@pytest.mark.xla
def test_a_pin_a_break_on_the_device_a_run_error_and_a_programs_failure_as_json(seed_explained):
    by_rule = _assert_each_is_its_records(explanation_findings(seed_explained))
    by_rule |= _assert_each_is_its_records(explanation_findings(neurondev.explain(literal, torch.randn(64), quiet=True)))
    assert {"ND101", "ND102", "ND201", "ND207", "ND301"} <= set(by_rule)
    _keys_are({rule: entry for rule, entry in by_rule.items() if rule in FACTS})
    assert (by_rule["ND101"]["kind"], by_rule["ND101"]["node"]) == ("frozen", "out")
    assert by_rule["ND207"]["code"] == "return torch.addcmul(bias, x, x)  # ND207 on XLA, ND301 as a program"
    assert by_rule["ND301"]["kind"] == "mixed devices at compile time"


def test_a_dynamo_break_as_json():
    def split(x):
        y = torch.relu(x)
        print(end="")
        return y * 2

    by_rule = _assert_each_is_its_records(explanation_findings(neurondev.explain(split, torch.randn(8), run=False, quiet=True)))
    _keys_are({"ND109": by_rule["ND109"]})
    assert by_rule["ND109"]["code"] == 'print(end="")'


def test_a_loops_recompiles_and_its_verdict_as_json():
    torch._dynamo.reset()  # what earlier tests of the process compiled is not this loop's
    step = torch.compile(lambda x: x * 2, backend="eager", dynamic=False)
    with torch._dynamo.config.patch(recompile_limit=8), neurondev.watch() as watched:
        for size in (1, 2, 4):  # sizes that change, not by one each call (that is a growing cache: ND404)
            step(torch.ones(size))
    by_rule = _assert_each_is_its_records(watch_findings(watched.record))
    assert sorted(by_rule) == ["ND405", "ND411"], [(c.kind, c.cause.kind) for c in watched.record.compiles]
    _keys_are(by_rule)
    call = f"test_json_findings.py:{line_of(test_a_loops_recompiles_and_its_verdict_as_json, 'step(torch.ones(size))')}"
    assert (by_rule["ND405"]["before"], by_rule["ND405"]["after"], by_rule["ND405"]["where"]) == ("1", "2", call)  # the call
    assert (by_rule["ND411"]["verdict"], by_rule["ND411"]["since"], by_rule["ND411"]["line"]) == ("keeps compiling", 2, None)
    assert [f["rule"] for f in watched.to_dict()["findings"]] == ["ND405", "ND405", "ND411"]  # the JSON the command writes
    never = watch_findings(watched.record)[-1]
    assert (never.rule, never.steps, never.unit, by_rule["ND411"]["steps"]) == ("ND411", 3, "step", 3)


def test_the_xla_programs_of_a_loop_are_findings_from_its_third_step():
    """The loop's first two steps compile its programs (warm-up); a program any later step compiles is a finding."""
    import dataclasses

    from neurondev.loops.steps import XlaProgram

    torch._dynamo.reset()
    step = torch.compile(lambda x: x * 2, backend="eager", dynamic=False)
    with neurondev.watch() as watched:
        for _ in range(4):
            step(torch.ones(2))
    record = watched.record
    programs = [XlaProgram("host read", "torch_xla's words", f"hash{n}", 3, 1) for n in range(4)]
    steps = [dataclasses.replace(s, programs=(program,)) for s, program in zip(record.steps, programs)]
    found = watch_findings(dataclasses.replace(record, steps=tuple(steps)))
    assert [f.graph_hash for f in found if isinstance(f, XlaProgram)] == ["hash2", "hash3"]


def test_a_watched_functions_verdict_counts_its_calls():
    torch._dynamo.reset()
    step = neurondev.watch(torch.compile(lambda x: x * 2, backend="eager", dynamic=False))
    with torch._dynamo.config.patch(recompile_limit=8):
        for size in (1, 2, 3, 4):
            step(torch.ones(size))
    never = watch_findings(step.record)[-1]
    assert (never.rule, never.steps, never.unit, never.steady.kind) == ("ND411", 4, "call", "keeps compiling")


def test_each_key_of_a_watchs_json_is_its_records(tmp_path):
    """Every key of a watch's JSON is its record's, through JSON, and the loop's facts: three sizes, three compiles
    (the first and two recompiles), three steps, keeps compiling from step 2, no gap on the native side, nothing raised."""
    from neurondev.loops.costs import costs
    from neurondev.render.json import watch_dict
    from neurondev.render.watch import watch_summary
    from neurondev.render.watch_words import gap_text

    torch._dynamo.reset()
    step = torch.compile(lambda x: x * 2, backend="eager", dynamic=False)
    with torch._dynamo.config.patch(recompile_limit=8), neurondev.watch() as watched:
        for size in (1, 2, 4):
            step(torch.ones(size))
            watched.step()
    record = watched.record
    data = json.loads(json.dumps(watch_dict(record)))
    as_json = lambda value: json.loads(json.dumps(plain(value)))  # noqa: E731
    gap = lambda g: None if g is None else as_json({**g.to_dict(), "text": gap_text(g)})  # noqa: E731
    assert data == {
        "schema": 3,
        "compiles": as_json([c.row() for c in record.compiles]),
        "steps": as_json(record.step_rows()),
        "outside": [],
        "calls": as_json(record.call_rows()),
        "looked_at": [],
        "other_threads": [],
        "workers": [],
        "verdict": record.steady.kind,
        "exit_code": record.steady.exit_code,
        "counted_steps": list(record.steady.counted),
        "tail": record.steady.tail,
        "steady_state": record.steady_state,
        "reached_steady_state": record.reached_steady_state,
        "keeps_compiling": record.steady.side,
        "since_step": record.steady.since,
        "recompile_limit_step": record.steady.limit_step,
        "period": record.steady.period,
        "phase": record.steady.phase,
        "step_kind": record.step_kind,
        "advice": data["advice"],
        "tried": [],
        "summary": watch_summary(record),
        "xla_gap": gap(record.xla_gap),
        "analysis_gap": gap(record.analysis_gap),
        "native_gap": gap(record.native_gap),
        "raised": None,
        "seconds": record.seconds,
        "costs": as_json([cost.row() for cost in costs(record)]),
        "findings": data["findings"],
    }
    assert len(data["compiles"]) == 3 and [row["step"] for row in data["steps"]] == [1, 2, 3]
    assert (data["verdict"], data["since_step"], data["reached_steady_state"], data["exit_code"]) == ("keeps compiling", 2, False, 1)
    assert data["step_kind"] == "mark" and data["steady_state"] == "never" and data["calls"] == []
    assert [f["rule"] for f in data["findings"]] == ["ND405", "ND405", "ND411"]


def test_a_watch_whose_block_raised_says_what_and_where_in_its_json():
    from neurondev.render.json import watch_dict

    with pytest.raises(ValueError), neurondev.watch() as watched:
        raise ValueError("the loop's own error")  # the line the JSON names
    raised = json.loads(json.dumps(watch_dict(watched.record)))["raised"]
    assert (raised["exception"], raised["message"]) == ("ValueError", "the loop's own error")
    assert raised["line"] == line_of(test_a_watch_whose_block_raised_says_what_and_where_in_its_json, "the line the JSON names")


def test_a_loops_advice_and_what_ran_after_it_as_json_with_the_cards_words():
    """Four sizes, then a validation call after the last step: the advice's facts and its sentence, and the call
    after the loop reported with its own compile, outside the verdict."""
    from neurondev.render.json import watch_dict
    from neurondev.render.watch_words import advice_check_text, advice_text

    torch._dynamo.reset()
    train = torch.compile(lambda x: x * 2, backend="eager", dynamic=False)
    validate = torch.compile(lambda x: x + 1, backend="eager", dynamic=False)
    with torch._dynamo.config.patch(recompile_limit=8), neurondev.watch() as watched:
        for size in (1, 3, 2, 4):  # sizes that change, not by one each call (that is a growing cache: ND404)
            train(torch.ones(size))
            watched.step()
        validate(torch.ones(2))
    record = watched.record
    data = json.loads(json.dumps(watch_dict(record)))
    xla = record.outside[0].xla_compiles  # None where torch_xla is not loaded in the process, else 0: no XLA here
    assert data["outside"] == [{"where": "after the loop", "dynamo_compiles": 1, "xla_compiles": xla}] and xla in (None, 0)
    (advice,) = record.advice
    as_json = json.loads(
        json.dumps(plain({**advice.to_dict(), "text": advice_text(advice), "check_text": advice_check_text(advice.check)}))
    )
    assert data["advice"] == [as_json] and data["tried"] == []
    assert (data["advice"][0]["cause"], data["advice"][0]["sizes"], data["advice"][0]["buckets"]) == (
        "changing size",
        [1, 2, 3, 4],
        [1, 2, 4],
    )
    assert "<lambda>: x takes 4 sizes (1, 2, 3, 4)" in data["advice"][0]["text"] and data["advice"][0]["check_text"] == "not verified"


def _pinned(x):
    return torch.zeros(4, device=x.device) + x  # ND101


def _falls_back(x):
    return (x @ x).sum().item()  # ND205 (aten::mm on the host device) and ND204


@pytest.mark.xla
def test_a_findings_facts_key_by_key_a_pin_a_fallback_and_a_sync():
    """Finding.to_dict, what check's JSON is made of: the rule, kind, node, function, line and place, and the facts of
    what it was found in without their own rule and line (said once, at the top)."""
    with pytest.raises(neurondev.DevicePinsError) as caught:
        neurondev.check(_pinned, torch.randn(4))
    (pin,) = caught.value.findings
    line = line_of(_pinned, "torch.zeros")
    facts = pin.to_dict()
    assert facts == {
        "rule": "ND101",
        "kind": "pin",
        "node": "zeros",
        "function": "torch.zeros",
        "file": pin.source.file,
        "line": line,
        "code": "return torch.zeros(4, device=x.device) + x  # ND101",
        "where": f"test_json_findings.py:{line}",
        "place": "XLA",
        "found": {key: value for key, value in pin.found.row().items() if key not in ("rule", "file", "line", "code", "where")},
    }
    assert pin.source.file.endswith("test_json_findings.py") and facts["found"]["device"] == torch.device("cpu")
    assert (facts["found"]["kind"], facts["found"]["location"], facts["found"]["users"]) == ("frozen", "kwarg", ("add",))
    device = neurondev.host_device(fallback=["aten::mm"])
    try:
        with pytest.raises(neurondev.DevicePinsError) as caught:
            neurondev.check(_falls_back, torch.randn(4, 4), target=device, select=("ND2", "ND3"))
    finally:
        neurondev.host_device()
    by_rule = {finding.rule: finding.to_dict() for finding in caught.value.findings}
    line = line_of(_falls_back, "x @ x")
    assert by_rule["ND205"] == {
        "rule": "ND205",
        "kind": "fallback",
        "node": "mm",
        "function": "aten::mm.out",
        "file": by_rule["ND205"]["file"],
        "line": line,
        "code": "return (x @ x).sum().item()  # ND205 (aten::mm on the host device) and ND204",
        "where": f"test_json_findings.py:{line}",
        "place": "hostdev:0",
        "found": {"op": "aten::mm.out", "called": "aten::mm", "calls": 1, "bytes": 256, "node": "mm", "module": ""},
    }
    assert (by_rule["ND204"]["kind"], by_rule["ND204"]["function"], by_rule["ND204"]["line"]) == ("device", "sync", line)
    assert by_rule["ND204"]["found"]["syncs"] == 1 and by_rule["ND204"]["found"]["function"] == "aten::_local_scalar_dense"


def test_a_record_whose_facts_would_hide_the_findings_words_is_refused():
    """A record's own ``name`` or ``url`` would be overwritten by the rule's: finding_entry refuses it (a developer's
    error, named), and a record's ``scenario`` is kept as ``seen_in``."""

    class Named:
        rule = "ND101"

        def __init__(self, facts):
            self.facts = facts

        def to_dict(self):
            return self.facts

    for key in ("name", "url"):
        with pytest.raises(AssertionError, match=key):
            finding_entry(Named({key: "its own"}), "said")
    entry = finding_entry(Named({"scenario": "your program"}), "said")
    assert entry["seen_in"] == "your program" and entry["scenario"] == rulebook.rule_named("ND101").scenario


def test_a_call_before_the_loops_calls_is_reported_before_the_loop_in_its_json():
    from neurondev.render.json import watch_dict

    torch._dynamo.reset()
    train = torch.compile(lambda x: x * 2, backend="eager", dynamic=False)
    warm_up = torch.compile(lambda x: x + 1, backend="eager", dynamic=False)
    with neurondev.watch() as watched:
        warm_up(torch.ones(2))
        for _ in range(3):
            train(torch.ones(1))
    data = json.loads(json.dumps(watch_dict(watched.record)))
    xla = watched.record.outside[0].xla_compiles  # None where torch_xla is not loaded in the process, else 0
    assert data["step_kind"] == "compiled call" and len(data["steps"]) == 3
    assert data["outside"] == [{"where": "before the loop", "dynamo_compiles": 1, "xla_compiles": xla}]


def test_a_program_level_finding_without_a_line_has_every_key_with_none_where_it_has_no_fact():
    """A program-level finding check makes when the program did not run (ND305's kind, no record, no line): its
    program keys (``backend``, ``as_written``), why it is closed (``why``, ``skip``, ``compiler``), no line."""
    from neurondev.report.findings import Finding
    from neurondev.report.skips import Skip

    finding = Finding("program", "", "your program", None, None, rule="ND305", place="hostdev:0", backend="eager",
                      as_written=False, why="not run", skip=Skip("run off"))  # fmt: skip
    assert finding.to_dict() == {
        "rule": "ND305",
        "kind": "program",
        "node": "",
        "function": "your program",
        "file": None,
        "line": None,
        "code": None,
        "where": "no source line",
        "place": "hostdev:0",
        "backend": "eager",
        "as_written": False,
        "why": "not run",
        "skip": {"kind": "run off"},  # a skip says only the facts it has
        "compiler": None,
        "found": {},
    }
    pin_level = Finding("pin", "zeros", "torch.zeros", None, None, rule="ND101").to_dict()
    assert "backend" not in pin_level and "why" not in pin_level and pin_level["where"] == "no source line"


def test_an_op_allows_each_of_its_overloads_and_an_empty_entry_allows_nothing():
    from neurondev.report.findings import Finding

    fallback = Finding("fallback", "mm", "aten::mm.out", None, None, rule="ND205")
    assert fallback.allowed_by(["aten::mm"]) and fallback.allowed_by(["aten::mm.out"]) and fallback.allowed_by(["aten::m*"])
    assert not fallback.allowed_by(["aten::addmm"]) and not fallback.allowed_by(["aten"]) and not fallback.allowed_by([""])
    pin = Finding("pin", "zeros", "torch.zeros", None, None, rule="ND101")  # no line: no code to match
    assert not pin.allowed_by([""]) and pin.allowed_by(["zeros"]) and not pin.allowed_by(["torch"])


def test_advice_tried_and_not_enough_and_a_native_gap_are_in_a_watchs_json_with_their_words():
    """What only a command's second run (advice tried, checked) or an older torch (the native gap) records, on a
    watch's own record: each in the JSON with its facts and its sentence."""
    import dataclasses

    from neurondev.loops.causes import Advice, AdviceCheck, Recurring
    from neurondev.loops.record import Gap
    from neurondev.render.json import watch_dict
    from neurondev.render.watch_words import gap_text

    torch._dynamo.reset()
    step = torch.compile(lambda x: x * 2, backend="eager", dynamic=False)
    with neurondev.watch() as watched:
        for _ in range(3):
            step(torch.ones(2))
    tried = Advice("xla programs", recurring=Recurring((1,), 3, 2), check=AdviceCheck("not enough", since=5, steps=10))
    gap = Gap("analysis off", level="0")
    data = watch_dict(dataclasses.replace(watched.record, tried=(tried,), xla_gap=gap))
    (entry,) = data["tried"]
    assert (entry["cause"], entry["check"]["kind"], entry["check"]["since"]) == ("xla programs", "not enough", 5)
    assert "5" in entry["check_text"] and entry["check_text"] != ""
    assert data["xla_gap"] == {"kind": "analysis off", "device": None, "torch": None, "level": "0", "text": gap_text(gap)}
    assert data["native_gap"] is None  # the observer counts a native device on every torch: nothing left out


@pytest.mark.xla
def test_a_graph_traced_natively_on_xla_too_has_both_timings_and_their_ratio_in_the_json():
    def only_device_arguments(x):
        out = torch.zeros(x.shape[0], device=x.device)
        out.copy_(torch.relu(x) * 2)
        return out

    explanation = neurondev.explain(only_device_arguments, torch.randn(8), native=True, quiet=True)
    (section,) = explanation.sections
    (graph,) = explanation.to_dict()["graphs"]
    timing = section.native
    assert set(graph["native_seconds"]) == {"rewritten", "native"} and timing.rewritten > 0 and timing.native > 0
    assert graph["native_seconds"] == {"rewritten": timing.rewritten, "native": timing.native}
    assert graph["native_ratio"] == timing.rewritten / timing.native


def _unused_pin(x):
    table = torch.arange(4, device=x.device)  # noqa: F841 - nothing reads it: it costs nothing
    return x * 2


class _Moved(torch.nn.Module):
    def forward(self, x):
        return x.to("cpu") * 2  # torch.export checks .to()'s input with aten._assert_tensor_metadata (no user)


def test_a_pin_nothing_reads_is_no_finding_but_an_assertion_nothing_reads_is():
    quiet = neurondev.explain(_unused_pin, torch.randn(4), run=False, quiet=True)
    assert [(pin.kind, pin.unused) for pin in quiet.pins] == [("frozen", True)] and explanation_findings(quiet) == []
    exported = torch.export.export(_Moved(), (torch.randn(4),))
    ex = neurondev.explain(exported, torch.randn(4), run=False, quiet=True)
    assertion = next(pin for pin in ex.pins if pin.kind == "assertion")
    assert assertion.unused and assertion in explanation_findings(ex) and _entries([assertion])[0]["rule"] == "ND105"


def _scaled(x):
    total = x.sum().item()  # with capture_scalar_outputs, in the graph: the device waits here
    return x * total


def test_a_sync_inside_a_graph_run_natively_is_a_finding_of_each_run_and_the_unseen_fallbacks_of_a_program_close_the_list():
    import dataclasses

    device = neurondev.host_device()
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        ex = neurondev.explain(_scaled, torch.randn(4), target=device, quiet=True)
    found = explanation_findings(ex)
    line = line_of(_scaled, ".item()")
    assert [(type(record).__name__, record.rule, record.line) for record in found] == [("HostCopy", "ND204", line)] * 2  # before, after
    assert [(copy.syncs, copy.transfers_to_host) for copy in found] == [(1, 0)] * 2
    # what a TorchNeuron run records: its graphs are neuron's compiler's, their ops unseen by the dispatcher
    programs = dataclasses.replace(ex.program, rewritten=dataclasses.replace(ex.program.rewritten, unseen="neuron"))
    *_, unseen = explanation_findings(dataclasses.replace(ex, program=programs))
    assert unseen.to_dict() == {
        "rule": "ND206",
        "kind": "fallback",
        "node": "program",
        "function": "",
        "file": None,
        "line": None,
        "code": None,
        "where": "no source line",
        "place": ex.place,
        "why": "unseen",
        "skip": None,
        "compiler": "neuron",
        "found": {},
    }


def _activated(x):
    return torch.tanh(x) * 2


@pytest.mark.xla
def test_values_that_differ_are_the_verdicts_finding_then_the_first_node_that_differs():
    """XLA's tanh differs from ATen's in the last bits (the ND208 card's example): with no tolerance, the graph's
    verdict (ND208) comes before the first node that differs (ND209) and their JSON keys are the records'."""
    ex = neurondev.explain(_activated, torch.randn(1000, generator=torch.Generator().manual_seed(0)), rtol=0.0, atol=0.0, quiet=True)
    found = explanation_findings(ex)
    assert [(type(record).__name__, record.rule) for record in found] == [("Verdict", "ND208"), ("NodeDifference", "ND209")]
    assert found[1] is ex.first_difference and (found[1].node, found[1].line) == ("tanh", line_of(_activated, "torch.tanh"))
    _assert_each_is_its_records(found)
    from neurondev.render.sentences import describe

    data = json.loads(ex.to_json())  # the explanation's own JSON: the first difference with the card's sentence
    assert data["first_difference"] == json.loads(json.dumps(plain({**found[1].to_dict(), "text": describe(found[1])})))
    assert data["first_difference"]["node"] == "tanh"


@pytest.mark.xla
def test_the_seeds_findings_in_the_cards_order(seed_explained):
    found = [(type(record).__name__, record.rule) for record in explanation_findings(seed_explained)]
    assert found == [("DevicePin", "ND101"), ("GraphBreak", "ND201"), ("CopySite", "ND202")]
