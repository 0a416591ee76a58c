"""The plain-text headline of an Explanation, for a terminal, a log or the card's first lines."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from neurondev.render.fix_words import host_value_fix
from neurondev.render.sentences import capture_note_text, describe, skip_text, verdict_text
from neurondev.runs.program_records import DEVICE_MISMATCH
from neurondev.runs.run_records import GraphBreak, RunRecord

if TYPE_CHECKING:
    from neurondev.fx.pins import DevicePin
    from neurondev.report.model import ExplanationData

__all__ = [
    "after_text",
    "before_text",
    "clip",
    "failure_text",
    "first_difference_text",
    "headline",
    "host_values_text",
    "pins_text",
    "program_text",
    "specialised_text",
    "summary",
    "verdicts_text",
]

_NAMED = 3


def clip(text: str, limit: int = 160) -> str:
    """``text`` in at most ``limit`` characters: cut at a word boundary, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 2].rsplit(" ", 1)[0].rstrip(",;:")
    return f"{cut} …"


def _where(pin: DevicePin) -> str:
    return pin.source.where if pin.source else "unknown line"


def pins_text(explanation: ExplanationData) -> str:
    """'2 frozen device pin(s) (torch.empty at f.py:3, ...)', with unused pins and host values apart."""
    live = [pin for pin in explanation.pins if not pin.unused and not pin.output_transfer]
    parts = []
    if live:
        adjective = "frozen " if {pin.kind for pin in live} == {"frozen"} else ""
        named = ", ".join(f"{pin.function} at {_where(pin)}" for pin in live[:_NAMED])
        more = f", and {len(live) - _NAMED} more" if len(live) > _NAMED else ""
        parts.append(f"{len(live)} {adjective}device pin(s) ({named}{more})")
    else:
        parts.append("No device pin: nothing in the graph is frozen to a device other than the target")
    unused = sum(pin.unused for pin in explanation.pins)
    handed_back = sum(pin.output_transfer for pin in explanation.pins)
    if unused:
        parts.append(f"{unused} unused (no node reads them: they cost nothing)")
    if handed_back:
        parts.append(f"{handed_back} move(s) of results to the host at the end, kept")
    if explanation.host_values:
        values = explanation.host_values
        named = ", ".join(f"{value.origin} at {value.where}" for value in values[:_NAMED])
        parts.append(f"{len(values)} host value(s) that stay on the CPU when the model moves to {explanation.place} ({named})")
    return "; ".join(parts)


def host_values_text(explanation: ExplanationData, count: int) -> str:
    """What the card says of ``count`` host values: they stay on the host, and what the user's
    program run on the device showed of them (never a claim that run contradicts)."""
    place = explanation.place
    head = (
        f"{count} host value(s): tensors read from outside the arguments and the module's parameters and buffers. "
        f"They stay on the CPU when the model moves to {place}"
    )
    run = explanation.program.as_written if explanation.program is not None else None
    if run is None:
        return f"{head}: each call reads them from the host."
    if run.failure is not None and run.failure.kind in DEVICE_MISMATCH:
        return f"{head}: your program under torch.compile on {place} fails on them ({run.failure.kind} at {run.failure.where})."
    if run.ok:
        return f"{head}: your program under torch.compile on {place} runs, copying them to the device on every call."
    return f"{head}: each call reads them from the host."


def _break_text(brk: GraphBreak) -> str:
    if brk.transfers_to_host:
        return f"{brk.node} pulls a value to the host"
    return f"{brk.node} forces an execution"


def failure_text(records: Sequence[RunRecord]) -> str | None:
    """'fails on xla:0 at node (file:line): first line of the error', for the first failed run."""
    failed = next((record for record in records if record.error is not None), None)
    if failed is None or failed.error is None:
        return None
    error = failed.error
    message = clip((str(error.exception).strip().splitlines() or [""])[0], 120)
    where = error.source.where if error.source else "unknown line"
    return f"fails on {failed.device} at {error.node} ({where}): {message}"


def _uploads(records: Sequence[RunRecord]) -> str:
    """'2 upload(s) of host data per call (table, steps)', or '' when the runs uploaded nothing per call."""
    nodes = [upload.node for record in records for upload in record.uploads]
    return f"{len(nodes)} upload(s) of host data per call ({', '.join(nodes[:_NAMED])})" if nodes else ""


def _stops_text(records: Sequence[RunRecord]) -> str:
    """On a native device: '1 copy to the host (copy_ at f.py:4)', syncs and CPU fallbacks, with their lines."""
    copies = [c for r in records for c in r.host_copies]
    device = records[0].device if records else "the device"
    parts = []
    moved = sum(c.transfers_to_host for c in copies)
    named = "; ".join(f"{c.node} at {c.where}" for c in copies if c.transfers_to_host)[:200]
    parts.append(f"{moved} copy(ies) to the host on {device}" + (f" ({named})" if named else ""))
    uploads = [u for r in records for u in r.uploads]
    if uploads:
        named = "; ".join(f"{u.node} at {u.where}" for u in uploads[:_NAMED])
        parts.append(f"{sum(u.transfers_to_device for u in uploads)} copy(ies) to the device per call ({named})")
    syncs = sum(r.syncs for r in records)
    if syncs:
        at = "; ".join(f"{c.node} at {c.where}" for c in copies if c.syncs)
        parts.append(f"{syncs} sync(s)" + (f" ({at})" if at else ""))
    fallbacks = [f for r in records for f in r.fallbacks]
    if fallbacks:
        named = ", ".join(f"{f.op} at {f.where}" for f in fallbacks[:_NAMED])
        parts.append(f"{sum(f.calls for f in fallbacks)} CPU fallback(s) ({named})")
    return ", ".join(parts)


def before_text(explanation: ExplanationData) -> str:
    if explanation.skipped:
        return f"not run ({skip_text(explanation.skipped)})"
    failure = failure_text(explanation.before)
    if failure:
        return failure
    if explanation.stack == "native":
        return _stops_text(explanation.before)
    breaks = [b for r in explanation.before for b in r.graph_breaks]
    device = explanation.before[0].device
    uploads = _uploads(explanation.before)
    if not breaks and uploads:
        return f"0 graph breaks on {device}, but {uploads}"
    if not breaks:
        return f"0 graph breaks on {device}"
    reasons = "; ".join(_break_text(b) for b in breaks[:_NAMED]) + ("; ..." if len(breaks) > _NAMED else "")
    return f"{len(breaks)} graph break(s) on {device} ({reasons})"


def verdicts_text(explanation: ExplanationData) -> str:
    """The two graph-level verdicts, each said once: the rewrite and the values, then XLA against CPU;
    with how many graphs were not compared, when some were not."""
    parts = []
    place = explanation.place
    for question in ("rewrite", "cpu"):
        verdicts = [getattr(s, f"{question}_verdict") for s in explanation.sections]
        shown = [v for v in verdicts if v is not None]
        if not shown:
            continue
        worst = next((v for v in shown if v.status == "differ"), None) or next((v for v in shown if v.matches is None), shown[0])
        missing, graphs = explanation.not_compared(question)
        apart = f" (not compared in {missing} of {graphs} graphs)" if missing and graphs > 1 else ""
        parts.append(verdict_text(worst, place=place) + apart)
    return "; ".join(parts) or "values not compared"


def after_text(explanation: ExplanationData) -> str:
    if explanation.skipped:
        return f"After DeviceRewriterPass: {len(explanation.rewrites)} device argument(s) rewritten; not run"
    failure = failure_text(explanation.after)
    if failure:
        return f"After DeviceRewriterPass: still {failure}"
    if explanation.stack == "native":
        return f"After DeviceRewriterPass: {_stops_text(explanation.after)}; {verdicts_text(explanation)}"
    totals = explanation.totals("after")
    text = f"After DeviceRewriterPass: {totals.graph_breaks} breaks, {totals.transfers_to_host - totals.output_transfers} transfers to the host"
    if totals.output_transfers:
        text += f" (and {totals.output_transfers} at the end, results handed back as you wrote)"
    uploads = _uploads(explanation.after)
    if uploads:
        text += f", {uploads}"
    kernels = explanation.cpu_kernels
    if kernels and totals.graph_breaks:
        text += f" (at CPU kernels the CPU trace chose, which no rewrite changes: {kernels[0].function} at {kernels[0].where})"
    return f"{text}; {verdicts_text(explanation)}"


def headline(explanation: ExplanationData) -> str:
    """'1 frozen device pin (...) -> 1 graph break on xla:0 (...)'"""
    return f"{pins_text(explanation)} -> {before_text(explanation)}"


def program_text(explanation: ExplanationData) -> str:
    """'Your program on XLA (torch.compile): as written (openxla) ...; with the neurondev backend ...'"""
    programs = explanation.program
    place = explanation.place
    if programs is None:
        return f"Your program on {place}: not run ({skip_text(explanation.program_skipped, 'program')})"
    written, rewritten = programs.as_written, programs.rewritten
    same = written.failure is not None and rewritten.failure is not None and written.failure.where == rewritten.failure.where
    after = "fails the same way" if same else describe(rewritten)
    text = (
        f"Your program on {place} (torch.compile): as written ({written.backend}) {describe(written)}; with the neurondev backend {after}"
    )
    return text + _host_cause(explanation)


def _host_cause(explanation: ExplanationData) -> str:
    """'. SCALE (a global, on cpu) is read on the host there: ...' when a host value made the program fail."""
    failure = explanation.program.as_written.failure if explanation.program is not None else None
    if failure is None or failure.kind != "mixed devices at compile time" or not explanation.host_values:
        return ""
    values = explanation.host_values
    value = next((v for v in values if v.file == failure.file and v.line == failure.line), values[0])
    place = explanation.place
    return f". {value.origin} ({value.kind}, on {value.device}, used at {value.where}) stays on the host while your inputs are on {place}: {host_value_fix(value)}"


def specialised_text(explanation: ExplanationData) -> str:
    """' 2 line(s) ... traced differently on XLA ...: f.py:3, f.py:4; they change the values ...' or ''."""
    lines = explanation.device_specialised
    if not lines:
        return ""
    named = ", ".join(f"{d.where} `{d.code}`" for d in lines[:_NAMED])
    place = explanation.place
    text = f" {len(lines)} line(s) traced differently on {place} (device-specialised code, no rewrite changes it): {named}"
    if explanation.xla_matches_cpu is False:
        text += f"; your program's values on {place} differ from CPU's"
    return text + "."


def first_difference_text(explanation: ExplanationData) -> str:
    """Where XLA first departs from CPU: a node of a graph, or none (then the code between graphs)."""
    first = explanation.first_difference
    if first is not None:
        return f" {explanation.place} differs from CPU first at {describe(first)}."
    program = explanation.program
    if program is None or program.rewritten.matches_cpu is not False or explanation.graphs_match_cpu is not True:
        return ""
    capture = explanation.capture
    between = len(capture.graphs) > 1 or bool(capture.dynamo_breaks)  # there is code between graphs to blame
    if explanation.device_specialised:
        where = "device-specialised code (above)"
    elif between:
        where = "the code between the graphs"
    else:
        return (
            f" Its one graph agrees with CPU run node by node on {explanation.place}: the difference is in how torch.compile ran it there."
        )
    return f" No node of the graphs differs when each runs on {explanation.place}: the difference is in {where}."


def summary(explanation: ExplanationData) -> str:
    """Your program on XLA first; then the graphs traced on CPU and moved to XLA (the headline and the
    after line), dynamo's split, the lines traced differently on XLA, where XLA first differs, the fixes."""
    if not explanation.sections:
        return f"No graph was recorded for {explanation.name}: " + "; ".join(
            [capture_note_text(n) for n in explanation.notes] or ["nothing to explain"]
        )
    text = f"{program_text(explanation)}. Traced on CPU, the graph moved to {explanation.place}: {headline(explanation)}. {after_text(explanation)}."
    graphs, breaks = len(explanation.capture.graphs), len(explanation.capture.dynamo_breaks)
    if graphs > 1:
        text += f" Dynamo split {explanation.name} into {graphs} graphs at {breaks} break(s) of its own."
    elif breaks:
        text += f" Dynamo made 1 graph of {explanation.name} and ran the rest as Python, after {breaks} break(s) of its own."
    text += specialised_text(explanation) + first_difference_text(explanation)
    return text + fixes_text(explanation)


def fixes_text(explanation: ExplanationData) -> str:
    """' Fixes: 2 verified (model.py:12, model.py:20), 1 with no spelling.' or ''."""
    if not explanation.fixes:
        return ""
    counts: dict[str, list[str]] = {}
    for fix in explanation.fixes:
        counts.setdefault(fix.status, []).append(fix.where)
    parts = [f"{len(wheres)} {status} ({', '.join(wheres[:_NAMED])})" for status, wheres in counts.items()]
    return " Fixes in your code: " + ", ".join(parts) + "."
