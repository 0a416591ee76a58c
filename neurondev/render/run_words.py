"""Runs on the device in words: a graph run and its breaks, copies and fallbacks, your program's run and its
failure, and why a stage of explain did not run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from neurondev.render.describe import at_line, describe
from neurondev.render.value_words import comparison_text, not_compared_text, values_text
from neurondev.report.skips import Skip
from neurondev.report.transfers import CopySite
from neurondev.runs.program_records import ProgramFailure, ProgramRun
from neurondev.runs.run_records import Fallback, GraphBreak, HostCopy, RunError, RunRecord

__all__ = [
    "copy_site_text",
    "fallback_text",
    "graph_break_text",
    "host_copy_text",
    "lines_text",
    "native_costs_text",
    "program_failure_text",
    "program_text",
    "run_error_text",
    "run_text",
    "skip_text",
]


@describe.register
def run_error_text(error: RunError) -> str:
    return str(error)


_WHEN = {
    "compile": "at compile time",
    "graph": "while a compiled graph ran",
    "python": "in the code between graphs",
    "inputs": "before it ran: its inputs cannot move to the device",
}


@describe.register
def program_failure_text(failure: ProgramFailure) -> str:
    where = f" at {failure.where} (`{failure.code}`)" if failure.source is not None else ""
    again = f" on call {failure.call}" if failure.call > 1 else ""
    return f"fails {_WHEN[failure.stage]}{again}{where}: {failure.kind}: {failure.error}"


@describe.register
def program_text(run: ProgramRun) -> str:
    """One line: fails (where, why), or runs with its per-call figures and how it compares with CPU."""
    if run.failure is not None:
        return program_failure_text(run.failure)
    steady = f"{run.transfers_to_host} transfer(s) to the host per call"
    if run.stack == "native":
        steady = native_costs_text(run) + " per call"
    again = ", compiles again on the second call" if run.recompiled else ""
    joint = "but" if run.matches_cpu is False else "and" if run.matches_cpu else "with"
    return f"runs ({run.graphs} graph(s), {steady}{again}) {joint} {values_text(run)}"


def lines_text(located: Sequence[Any]) -> str:
    """' (model.py:9, model.py:12)': the lines records were seen at, each once, or '' when none has a line."""
    wheres = list(dict.fromkeys(item.where for item in located if item.source is not None))
    return f" ({', '.join(wheres[:3])}{', ...' if len(wheres) > 3 else ''})" if wheres else ""


def native_costs_text(run: ProgramRun) -> str:
    """'1 copy(ies) to the host (f.py:9), 1 to the device (f.py:10), 0 sync(s), 1 CPU fallback(s) (aten::index_select at f.py:9)'."""
    call = run.calls[-1] if run.calls else None
    if call is None:
        return "nothing measured"
    at = lines_text
    copies = [c for c in call.host_copies if c.transfers_to_host]
    syncs = [c for c in call.host_copies if c.syncs]
    fallbacks = ", ".join(f"{f.op} at {f.where}" for f in call.fallbacks[:3]) + (", ..." if len(call.fallbacks) > 3 else "")
    return (
        f"{call.transfers_to_host} copy(ies) to the host{at(copies)}, {call.transfers_to_device} to the device{at(call.uploads)}, "
        f"{call.syncs} sync(s){at(syncs)}, {call.fallback_calls} CPU fallback(s)" + (f" ({fallbacks})" if fallbacks else "")
    )


@describe.register
def run_text(record: RunRecord) -> str:
    """One paragraph: failure, or breaks (copies) with their nodes, transfers, uploads, values."""
    if record.error is not None:
        return f"failed on {record.device}: {record.error}"
    outputs = ", ".join(record.output_devices) or "nothing"
    if record.stack == "native":
        copies = "; ".join(c.labelled(c.node) for c in record.host_copies)
        fallbacks = ", ".join(f"{op} x{n}" for op, n in record.fallback_ops.items())
        text = (
            f"ran on {record.device}: {record.transfers_to_host} copy(ies) to the host{': ' + copies if copies else ''}, "
            f"{record.syncs} sync(s), {record.transfers_to_device} copy(ies) to the device per call, "
            f"{sum(record.fallback_ops.values())} CPU fallback(s){': ' + fallbacks if fallbacks else ''}; outputs on {outputs}"
        )
    else:
        breaks = "; ".join(b.labelled(b.node) for b in record.graph_breaks)
        text = (
            f"ran on {record.device}: {len(record.graph_breaks)} graph break(s){': ' + breaks if breaks else ''}, "
            f"{record.executions} forced execution(s), {record.transfers_to_host} transfer(s) to host and "
            f"{record.transfers_to_device} to device per call; outputs on {outputs}"
        )
    if record.uploads:
        text += f"; uploads of host data on every call (no break): {', '.join(u.labelled(u.node) for u in record.uploads)}"
    if record.comparison is not None:
        text += f"; values {comparison_text(record.comparison)} against the CPU reference"
    elif record.not_compared:
        text += f"; {not_compared_text(record.not_compared)}"
    return text


@describe.register
def graph_break_text(cut: GraphBreak) -> str:
    return f"{cut.node} ({cut.function}) forced {cut.executions} execution(s) and {cut.transfers_to_host} transfer(s) to the host{at_line(cut)}"


@describe.register
def host_copy_text(copy: HostCopy) -> str:
    if copy.transfers_to_host:
        by = f" for {copy.collective} (this device's collectives go through the host; a real device's do not)" if copy.collective else ""
        return f"{copy.function} copied {copy.bytes} bytes to the host ({copy.transfers_to_host} copies){by}{at_line(copy)}"
    return f"{copy.function} made the host wait for the device ({copy.syncs} sync(s)){at_line(copy)}"


@describe.register
def copy_site_text(site: CopySite) -> str:
    size = f", {site.bytes} bytes" if site.bytes is not None else ""
    return (
        f"{site.scenario}: {site.calls} cop{'y' if site.calls == 1 else 'ies'} {site.direction} per call ({site.what}{size}){at_line(site)}"
    )


@describe.register
def fallback_text(fallback: Fallback) -> str:
    inside = f" inside {fallback.inside}" if fallback.inside else ""
    return (
        f"{fallback.op} fell back to the CPU {fallback.calls} time(s) per call{inside} ({fallback.bytes} bytes copied){at_line(fallback)}"
    )


_META = (
    "traced on the meta device: the weights are shapes without values, so nothing can run. To measure it on the device, build "
    "the same config with fewer layers (e.g. num_hidden_layers=2) and real or random weights, and explain that"
)


def skip_text(skip: Skip | None, stage: str = "graphs") -> str:
    """Why a stage of explain did not run, in words; ``stage`` is 'graphs', 'program' or 'native' (the native trace)."""
    if skip is None:
        return ""
    if skip.kind == "no device":
        return f"no {skip.device} device: {skip.error}"
    if skip.kind == "ran elsewhere":
        head = "the native trace " if stage == "native" else ""
        return f"{head}ran on {skip.device} for the original; explain the function again with target={skip.target!r}"
    said = {
        ("run off", "graphs"): "run=False: the graphs were not run on the device",
        ("run off", "program"): "run=False: your program was not run on the device",
        ("traced on meta", "native"): "traced on the meta device: there are no values to trace with on the device",
        ("from a capture", "program"): "explained from a Capture: pass the function and its inputs to run your program on the device",
        ("from a capture", "native"): "explained from a Capture: there is no function to trace on the device",
    }
    kinds = {
        "no graph": "no graph was recorded, so there is nothing to run",
        "traced on meta": _META,
        "not needed": "nothing here needs the device",
        "exported": "an exported program's graph is ATen-level, the program's dynamo graphs are not: they are not compared line by line",
    }
    return said.get((skip.kind, stage)) or kinds.get(skip.kind, skip.kind)
