"""An Explanation and a Watch as plain data (strict-JSON-ready): pins, rewrites, per-section run figures, breaks, errors; compiles, steps, advice."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from neurondev.render.fix_words import CPU_KERNEL_FIX, fix_for, host_value_fix
from neurondev.render.sentences import capture_note_text, describe, finding_detail, finding_fix, runtime_info_text, skip_text, why_text
from neurondev.render.text import summary
from neurondev.render.watch_words import advice_check_text, advice_text, gap_text
from neurondev.report.findings import Finding, explanation_findings, finding_entry, watch_findings
from neurondev.report.skips import Skip
from neurondev.rulebook import rule_named

if TYPE_CHECKING:
    from neurondev.fx.pins import DevicePin
    from neurondev.loops.causes import Advice
    from neurondev.loops.record import Gap, WatchRecord
    from neurondev.report.model import ExplanationData, Section
    from neurondev.runs.program_records import Programs
    from neurondev.runs.traces import TraceComparison

__all__ = ["SCHEMA", "check_finding", "explanation_dict", "findings_list", "plain", "watch_dict"]

# The version of the JSON's layout: 2 added ``schema``, ``findings`` and every finding's ``"rule"``; 3 gave a
# watch's advice its facts and ``check`` (``verified`` a bool), turned its notes into ``*_gap`` kinds, and gave each
# finding of check the facts of what it was found in (``found``, ``place``), its words beside them.
SCHEMA = 3


def plain(value: Any) -> Any:
    """A strict-JSON-ready copy: devices and dtypes as text, tuples as lists, NaN and infinities as text."""
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # 'nan', 'inf', '-inf': JSON has no literal for them
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _pin(pin: DevicePin) -> dict[str, Any]:
    data = pin.row()
    data["where"] = pin.where
    data["url"] = rule_named(pin.rule).url if pin.rule else None
    data["fix"] = fix_for(pin)
    return plain(data)


def _with_text(record: Any) -> dict[str, Any] | None:
    """A record's plain data with the sentence the card prints for it (``text``)."""
    return None if record is None else {**record.to_dict(), "text": describe(record)}


def _programs(programs: Programs | None) -> dict[str, Any] | None:
    if programs is None:
        return None
    runs = {"as_written": programs.as_written, "rewritten": programs.rewritten}
    return {name: {**run.to_dict(), "failure": _with_text(run.failure), "text": describe(run)} for name, run in runs.items()}


def _traces(traces: TraceComparison | None) -> dict[str, Any] | None:
    return None if traces is None else {**traces.to_dict(), "summary": describe(traces)}


def _section(section: Section) -> dict[str, Any]:
    native = section.native
    return plain(
        {
            "graph": section.key.graph,
            "part": section.key.part,
            "label": section.label,
            "native_seconds": dataclasses.asdict(native) if native else None,
            "native_ratio": native.ratio if native else None,
            "nodes": section.nodes,
            "pins": [_pin(pin) for pin in section.pins],
            "rewrites": [dataclasses.asdict(r) for r in section.rewrites],
            "code_before": section.traced.code,
            "code_after": section.rewritten.code,
            "before": section.before.to_dict() if section.before else None,
            "after": section.after.to_dict() if section.after else None,
            "rewrite_verdict": _with_text(section.rewrite_verdict),
            "cpu_verdict": _with_text(section.cpu_verdict),
            "host_values": [{**value.to_dict(), "fix": host_value_fix(value)} for value in section.host_values],
            "cpu_kernels": [{**kernel.to_dict(), "fix": CPU_KERNEL_FIX} for kernel in section.cpu_kernels],
        }
    )


def findings_list(records: list[Any]) -> list[dict[str, Any]]:
    """Findings as JSON entries: each with its ``rule`` and facts, and the sentence the card prints (``text``)."""
    return plain([finding_entry(record, describe(record)) for record in records])


def check_finding(finding: Finding) -> dict[str, Any]:
    """One finding of check as JSON: its rule and facts (``found``: the record's), the words beside them (``detail``,
    ``fix``) and its rule's page (``url``)."""
    words = {"detail": finding_detail(finding), "fix": finding_fix(finding)}
    return plain({**finding.to_dict(), **words, "url": rule_named(finding.rule).url if finding.rule else None})


def explanation_dict(explanation: ExplanationData) -> dict[str, Any]:
    captured = explanation.capture
    return plain(
        {
            "schema": SCHEMA,
            "name": explanation.name,
            "target": str(explanation.target),
            "level": explanation.level,
            "summary": summary(explanation),
            "rewrite_preserves_values": explanation.rewrite_preserves_values,
            "graphs_match_cpu": explanation.graphs_match_cpu,
            "xla_matches_cpu": explanation.xla_matches_cpu,
            "program": _programs(explanation.program),
            "program_skipped": _skip(explanation.program_skipped, "program"),
            "first_difference": _with_text(explanation.first_difference),
            "device_specialised": [d.to_dict() for d in explanation.device_specialised],
            "skipped": _skip(explanation.skipped, "graphs"),
            "runtime": {**explanation.runtime, "why": runtime_info_text(explanation.runtime)} if explanation.runtime else {},
            "pins": len(explanation.pins),
            "totals": {"before": explanation.totals("before").to_dict(), "after": explanation.totals("after").to_dict()},
            "graphs": [_section(section) for section in explanation.sections],
            "dynamo_breaks": [{"reason": b.reason, **(b.source.to_dict() if b.source else {})} for b in captured.dynamo_breaks],
            "moved_inputs": [dataclasses.asdict(m) for m in captured.moved_inputs],
            "notes": [{**note.to_dict(), "text": capture_note_text(note)} for note in explanation.notes],
            "native": _traces(explanation.traces),
            "native_skipped": _skip(explanation.traces_skipped, "native"),
            "fixes": [{**fix.to_dict(), "why": why_text(fix)} for fix in explanation.fixes],
            "findings": findings_list(explanation_findings(explanation)),
        }
    )


def watch_dict(record: WatchRecord) -> dict[str, Any]:
    """A watch's plain data: ``compiles``, ``steps`` and ``calls`` (rows as the tables have them), ``steady_state``
    (with ``recompile_limit_step``: where dynamo gave up, the function running uncompiled after it; ``period``: a new
    program every k steps), how steps were cut (``step_kind``), ``advice`` (each its cause, facts, line, ``check`` and
    ``verified``, with ``text`` and ``check_text``), ``tried`` (advice run again with its fix and not enough),
    ``summary``, the frames dynamo looked at and made no graph of (``looked_at``: not compiles), the compiles of
    other threads (``other_threads``: not the loop's), the worker processes it started (``workers``: not watched), what the figures leave out (``xla_gap``, ``analysis_gap``, ``native_gap``: kind, facts, text),
    ``raised``, ``seconds``."""
    from neurondev.loops.costs import costs
    from neurondev.render.watch import watch_summary

    raised = record.raised
    return {
        "schema": SCHEMA,
        "compiles": [c.row() for c in record.compiles],
        "steps": record.step_rows(),
        "outside": [
            {
                "where": "before the loop" if step.number == 0 else "after the loop",
                "dynamo_compiles": step.dynamo_compiles,
                "xla_compiles": step.xla_compiles,
            }
            for step in record.outside
        ],
        "calls": record.call_rows(),
        "looked_at": [{"function": e.function, "file": e.file, "line": e.line} for e in record.looked_at],
        "other_threads": [{"function": e.function, "file": e.file, "line": e.line, "graphs": e.graphs} for e in record.other_threads],
        "workers": [{"count": w.count, "function": w.function, "method": w.method, **_where(w.source)} for w in record.workers],
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
        "advice": [_advice(a) for a in record.advice],
        "tried": [_advice(a) for a in record.tried],
        "summary": watch_summary(record),
        "xla_gap": _gap(record.xla_gap),
        "analysis_gap": _gap(record.analysis_gap),
        "native_gap": _gap(record.native_gap),
        "raised": None
        if raised is None
        else {"exception": raised.exception, "message": raised.message, "signal": raised.signal, **raised.source_dict()},
        "seconds": record.seconds,
        "costs": [cost.row() for cost in costs(record)],
        "findings": findings_list(watch_findings(record)),
    }


def _advice(advice: Advice) -> dict[str, Any]:
    """One piece of advice: its cause, facts and check, the sentences beside them."""
    return {**advice.to_dict(), "text": advice_text(advice), "check_text": advice_check_text(advice.check)}


def _gap(gap: Gap | None) -> dict[str, Any] | None:
    """What the figures leave out: its kind and facts, the sentence beside them."""
    return None if gap is None else {**gap.to_dict(), "text": gap_text(gap)}


def _skip(skip: Skip | None, stage: str) -> dict[str, Any] | None:
    """Why a stage did not run: its kind and facts, the sentence beside them."""
    return None if skip is None else {**skip.to_dict(), "text": skip_text(skip, stage)}


def _where(source: Any) -> dict[str, Any]:
    return {"file": source.file, "line": source.line} if source is not None else {"file": None, "line": None}
