"""The plain-text headline of an Explanation, for a terminal, a log or the card's first lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neurondev.xla.run import GraphBreak, RunRecord

if TYPE_CHECKING:
    from neurondev.fx.pins import DevicePin
    from neurondev.report.model import Explanation

__all__ = ["after_text", "before_text", "clip", "failure_text", "headline", "pins_text", "summary", "verdicts_text"]

_NAMED = 3


def clip(text: str, limit: int = 160) -> str:
    """``text`` cut at a word boundary before ``limit`` characters, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(",;:")
    return f"{cut} …"


def _where(pin: DevicePin) -> str:
    return pin.source.where if pin.source else "unknown line"


def pins_text(explanation: Explanation) -> str:
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
        parts.append(f"{len(values)} host value(s) that stay on the CPU when the model moves to XLA ({named})")
    return "; ".join(parts)


def _break_text(brk: GraphBreak) -> str:
    if brk.transfers_to_host:
        return f"{brk.node} pulls a value to the host"
    return f"{brk.node} forces an execution"


def failure_text(records: list[RunRecord]) -> str | None:
    """'fails on xla:0 at node (file:line): first line of the error', for the first failed run."""
    failed = next((record for record in records if record.error is not None), None)
    if failed is None or failed.error is None:
        return None
    error = failed.error
    message = clip((str(error.exception).strip().splitlines() or [""])[0], 120)
    where = error.source.where if error.source else "unknown line"
    return f"fails on {failed.device} at {error.node} ({where}): {message}"


def _uploads(records: list[RunRecord]) -> str:
    """'2 upload(s) of host data per call (table, steps)', or '' when the runs uploaded nothing per call."""
    nodes = [upload.node for record in records for upload in record.uploads]
    return f"{len(nodes)} upload(s) of host data per call ({', '.join(nodes[:_NAMED])})" if nodes else ""


def before_text(explanation: Explanation) -> str:
    if explanation.skipped:
        return f"not run ({explanation.skipped})"
    failure = failure_text(explanation.before)
    if failure:
        return failure
    breaks = [b for r in explanation.before for b in r.graph_breaks]
    device = explanation.before[0].device
    uploads = _uploads(explanation.before)
    if not breaks and uploads:
        return f"0 graph breaks on {device}, but {uploads}"
    if not breaks:
        return f"0 graph breaks on {device}"
    reasons = "; ".join(_break_text(b) for b in breaks[:_NAMED]) + ("; ..." if len(breaks) > _NAMED else "")
    return f"{len(breaks)} graph break(s) on {device} ({reasons})"


def verdicts_text(explanation: Explanation) -> str:
    """The two verdicts, each said once: the rewrite and the values, then XLA against CPU."""
    parts = []
    for question in ("rewrite", "cpu"):
        verdicts = [getattr(s, f"{question}_verdict") for s in explanation.sections]
        shown = [v for v in verdicts if v is not None]
        if not shown:
            continue
        worst = next((v for v in shown if v.status == "differ"), None) or next((v for v in shown if v.matches is None), shown[0])
        parts.append(worst.describe())
    return "; ".join(parts) or "values not compared"


def after_text(explanation: Explanation) -> str:
    if explanation.skipped:
        return f"After DeviceRewriterPass: {len(explanation.rewrites)} device argument(s) rewritten; not run"
    failure = failure_text(explanation.after)
    if failure:
        return f"After DeviceRewriterPass: still {failure}"
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


def headline(explanation: Explanation) -> str:
    """'1 frozen device pin (...) -> 1 graph break on xla:0 (...)'"""
    return f"{pins_text(explanation)} -> {before_text(explanation)}"


def summary(explanation: Explanation) -> str:
    """The headline and the after line, plus dynamo's split and the lines traced differently on XLA."""
    if not explanation.sections:
        return f"No graph was recorded for {explanation.name}: " + "; ".join(explanation.notes or ["nothing to explain"])
    text = f"{headline(explanation)}. {after_text(explanation)}."
    graphs, breaks = len(explanation.capture.graphs), len(explanation.capture.dynamo_breaks)
    if graphs > 1 or breaks:
        text += f" Dynamo split {explanation.name} into {graphs} graph(s) ({breaks} dynamo break(s))."
    traces = explanation.traces
    if traces is not None and traces.differences:
        lines = ", ".join(d.where for d in traces.differences[:_NAMED])
        text += f" {len(traces.differences)} line(s) traced differently on XLA (device-specialised code, no rewrite changes it): {lines}."
    return text + fixes_text(explanation)


def fixes_text(explanation: Explanation) -> str:
    """' Fixes: 2 verified (model.py:12, model.py:20), 1 with no spelling.' or ''."""
    if not explanation.fixes:
        return ""
    counts: dict[str, list[str]] = {}
    for fix in explanation.fixes:
        counts.setdefault(fix.status, []).append(fix.where)
    parts = [f"{len(wheres)} {status} ({', '.join(wheres[:_NAMED])})" for status, wheres in counts.items()]
    return " Fixes in your code: " + ", ".join(parts) + "."
