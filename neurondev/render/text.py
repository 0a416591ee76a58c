"""The plain-text headline of an Explanation, for a terminal, a log or the card's first lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neurondev.xla.run import GraphBreak, RunRecord

if TYPE_CHECKING:
    from neurondev.report.model import Explanation

__all__ = ["after_text", "before_text", "failure_text", "headline", "pins_text", "summary"]

_NAMED = 3


def pins_text(explanation: Explanation) -> str:
    pins = explanation.pins
    if not pins:
        return "No device pin: nothing in the graph is frozen to a device other than the target"
    adjective = "frozen " if {pin.kind for pin in pins} == {"frozen"} else ""
    named = ", ".join(f"{pin.function} at {pin.source.where if pin.source else 'unknown line'}" for pin in pins[:_NAMED])
    more = f", and {len(pins) - _NAMED} more" if len(pins) > _NAMED else ""
    return f"{len(pins)} {adjective}device pin(s) ({named}{more})"


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
    message = (str(error.exception).strip().splitlines() or [""])[0][:120]
    where = error.source.where if error.source else "unknown line"
    return f"fails on {failed.device} at {error.node} ({where}): {message}"


def _uploads(records: list[RunRecord], what: str) -> str:
    """'2 upload(s) of <what> per call (table, steps)', or '' when the runs uploaded nothing per call."""
    nodes = [upload.node for record in records for upload in record.uploads]
    return f"{len(nodes)} upload(s) of {what} per call ({', '.join(nodes[:_NAMED])})" if nodes else ""


def before_text(explanation: Explanation) -> str:
    if explanation.skipped:
        return f"not run ({explanation.skipped})"
    failure = failure_text(explanation.before)
    if failure:
        return failure
    breaks = [b for r in explanation.before for b in r.graph_breaks]
    device = explanation.before[0].device
    uploads = _uploads(explanation.before, "host tensors")
    if not breaks and uploads:
        return f"0 graph breaks on {device}, but {uploads}"
    if not breaks:
        return f"0 graph breaks on {device}"
    reasons = "; ".join(_break_text(b) for b in breaks[:_NAMED]) + ("; ..." if len(breaks) > _NAMED else "")
    return f"{len(breaks)} graph break(s) on {device} ({reasons})"


def after_text(explanation: Explanation) -> str:
    if explanation.skipped:
        return f"After DeviceRewriterPass: {len(explanation.rewrites)} device argument(s) rewritten; not run"
    failure = failure_text(explanation.after)
    if failure:
        return f"After DeviceRewriterPass: still {failure}"
    totals = explanation.totals("after")
    text = f"After DeviceRewriterPass: {totals.graph_breaks} breaks, {totals.transfers_to_host} transfers to the host"
    uploads = _uploads(explanation.after, "host-built values")
    if uploads:
        text += f", {uploads}"
    verdict = {True: "outputs match", False: "outputs DIFFER", None: "outputs not compared"}[explanation.outputs_match]
    return f"{text}, {verdict}"


def headline(explanation: Explanation) -> str:
    """'1 frozen device pin (...) -> 1 graph break on xla:0 (...)'"""
    return f"{pins_text(explanation)} -> {before_text(explanation)}"


def summary(explanation: Explanation) -> str:
    """The headline and the after line, plus dynamo's own graph count when it split the function."""
    if not explanation.sections:
        return f"No graph was recorded for {explanation.name}: " + "; ".join(explanation.notes or ["nothing to explain"])
    text = f"{headline(explanation)}. {after_text(explanation)}."
    graphs, breaks = len(explanation.capture.graphs), len(explanation.capture.dynamo_breaks)
    if graphs > 1 or breaks:
        text += f" Dynamo split {explanation.name} into {graphs} graph(s) ({breaks} dynamo break(s))."
    return text
