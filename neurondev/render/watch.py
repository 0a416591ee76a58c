"""A watch's record as text, as a card (an inline SVG chart per step, the compiles and their causes, the advice) and as a page."""

from __future__ import annotations

import collections
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from neurondev.loops.record import device_lines
from neurondev.loops.verdict import not_steady
from neurondev.render.card_style import escape as _e
from neurondev.render.sentences import cause_words
from neurondev.render.time_spent import binned, costliest_text, costs_section
from neurondev.render.watch_words import advice_check_text, advice_text, gap_text, never_steady_text, workers_text
from neurondev.report.findings import watch_findings
from neurondev.trace.source import is_user_file

if TYPE_CHECKING:
    from neurondev.loops.causes import Advice
    from neurondev.loops.record import Compile, WatchRecord
    from neurondev.loops.steps import Step

__all__ = ["chart_svg", "steady_text", "watch_card", "watch_report", "watch_summary"]


def _subject(record: WatchRecord) -> str:
    steps = len(record.steps)
    if record.watched_function:
        return f"{record.name} ({steps} call{'s' if steps != 1 else ''})"
    unit = {
        "compiled call": "call(s) of the compiled function",
        "mark": "step(s) you marked",
        "sync": "torch_xla.sync()-delimited step(s)",
        "optimizer step": "optimizer step(s)",
    }
    return f"the block ({steps} {unit.get(record.step_kind, 'step(s)')})"


def _unit(record: WatchRecord) -> str:
    return "call" if record.watched_function else "step"


def _after_the_limit(record: WatchRecord, limit: int, unit: str) -> str:
    """Dynamo gave up at its recompile limit in ``limit``: the steps after it run uncompiled (and XLA, when on, compiles what they trace)."""
    text = f"No steady state: dynamo compiled until its recompile limit at {unit} {limit}"
    after = record.steps[limit:]
    if not after:
        return text + "."
    text += f", then the function ran uncompiled for the {len(after)} {unit}(s) after it"
    if record.xla_gap is None:
        text += f", XLA compiling programs in {sum(1 for step in after if step.xla_compiles)} of them"
    return text + "."


def watch_summary(record: WatchRecord) -> str:
    """What compiled, how often and why, the XLA programs, the steady state (or the error), and the advice."""
    read = record.compiles
    library = [c for c in read if _library_frame(c)]
    parts = [_function_line(function, compiles) for function, compiles in _by_function([c for c in read if c not in library]).items()]
    if library:
        files = list(dict.fromkeys(_short(c.event.file) for c in library))
        shown = ", ".join(files[:4]) + (", ..." if len(files) > 4 else "")
        parts.append(f"{len(library)} compile(s) of library frames after graph breaks ({shown})")
    text = f"Watched {_subject(record)}: " + ("; ".join(parts) if parts else "nothing compiled by dynamo") + ". "
    text += costliest_text(record)
    text += _looked_at(record) + _other_threads(record) + workers_text(record.workers)
    text += _xla_total(record) + _native_total(record) + steady_text(record)
    named = _causes_said_once(read)
    if named:
        text += " Why: " + "; ".join(named[:3]) + ("; ..." if len(named) > 3 else "") + "."
    if record.advice:
        first = record.advice[0]
        checked = f" [{advice_check_text(first.check)}]" if first.check is not None else ""
        text += f" Advice ({len(record.advice)}): {advice_text(first)}" + (f" ({first.where})" if first.source else "") + f"{checked}."
    if record.tried:
        text += " Tried, not enough: " + "; ".join(f"{a.cause} ({advice_check_text(a.check)})" for a in record.tried) + "."
    return text


def _looked_at(record: WatchRecord) -> str:
    """The frames dynamo looked at and made no graph of (a logging call's, after a break): one sentence, no compiles."""
    if not record.looked_at:
        return ""
    files = list(dict.fromkeys(_short(event.file) for event in record.looked_at))
    shown = ", ".join(files[:4]) + (", ..." if len(files) > 4 else "")
    return f"Dynamo also looked at {len(record.looked_at)} frame(s) it made no graph of ({shown}): not compiles. "


def _other_threads(record: WatchRecord) -> str:
    """Compiles another thread made while the watch recorded its own: apart, not in the verdict."""
    if not record.other_threads:
        return ""
    functions = list(dict.fromkeys(event.function for event in record.other_threads))
    return (
        f"Other threads compiled {len(record.other_threads)} time(s) meanwhile ({', '.join(functions[:3])}): not this loop's, not judged. "
    )


def steady_text(record: WatchRecord) -> str:
    """The verdict in words: steady after which step, never (who keeps compiling from when), one step, or the error."""
    unit = _unit(record)
    raised = record.raised
    if raised is not None and raised.signal is not None:
        return (
            f"The script was killed by {raised.exception} (signal {raised.signal}) after {len(record.steps)} {unit}(s) and "
            f"{raised.compiles} compile(s): the record is up to there."
        )
    if raised is not None and raised.exit_code is None:
        where = f" at {raised.where}" if raised.source is not None else ""
        return f"The watched code raised {raised.exception}{where} after {raised.compiles} compile(s) ({raised.message}): the record is up to there."
    return _verdict_text(record, unit) + _outside_text(record)


def _verdict_text(record: WatchRecord, unit: str) -> str:
    """The verdict by the loops page's rule, in its words."""
    steady = record.steady
    if steady.kind == "no step":
        return "Nothing ran in the block."
    if steady.kind == "one step":
        return f"One {unit} cannot show a steady state (nothing to compare it with)."
    if steady.kind == "limit" and steady.limit_step is not None:
        return _after_the_limit(record, steady.limit_step, unit)
    last = record.judged_end
    apart = (
        f"Training calls (gradients on) and evaluation calls (gradients off) judged apart, the {steady.phase} calls decide: "
        if steady.phase is not None
        else ""
    )
    found = not_steady(steady, last, unit)
    if found is not None:
        return apart + never_steady_text(found)
    if steady.kind == "late":
        return apart + (
            f"A recompile late in the loop, at {unit} {steady.after} of {last}: {steady.tail} {unit}(s) after it are too few to tell "
            "whether it comes back (the advice says what would prevent it)."
        )
    if steady.kind == "nothing" and steady.after == 0:
        return "Nothing compiled at all: steady from the start."
    measured = "dynamo or XLA" if record.xla_gap is None else "by dynamo (no XLA figures in this loop)"
    warm = " (the warm-up)" if steady.kind == "nothing" else ""
    return apart + f"Steady state after {unit} {steady.after}{warm}: nothing compiled after it, {measured}."


def _outside_text(record: WatchRecord) -> str:
    """What compiled outside the loop (before its first step, after its last): said, not judged."""
    said = []
    for part in record.outside:
        compiles = [
            c for c in record.compiles if c.event is not None and c.outside == ("before the loop" if part.number == 0 else "after the loop")
        ]
        if compiles or part.xla_compiles:
            where = "Before the loop" if part.number == 0 else "After the loop"
            xla = f" and {part.xla_compiles} XLA program(s)" if part.xla_compiles else ""
            said.append(
                f"{where}: {len(compiles)} dynamo compile(s){xla} ({', '.join(dict.fromkeys(c.event.function for c in compiles)) or 'lazy ops'}), not part of the verdict."
            )
    return (" " + " ".join(said)) if said else ""


def _short(file: str) -> str:
    path = Path(file)
    return f"{path.parent.name}/{path.name}" if path.name == "__init__.py" else path.name


def _library_frame(compile_: Compile) -> bool:
    """A frame of a library (typing, logging, ...) dynamo compiled because a graph break's code called it: not a
    call of a function the user compiled, and not in the user's files."""
    return not compile_.event.top and not is_user_file(compile_.event.file) and " (after the break at line" not in compile_.event.function


def _by_function(read: Sequence[Compile]) -> dict[str, list[Compile]]:
    """The compiles by the function they compiled: two functions of one name (two lambdas) are two, each named
    with where it is defined."""
    grouped: dict[tuple[str, str, int], list[Compile]] = collections.defaultdict(list)
    for compile_ in read:
        grouped[(compile_.event.function, compile_.event.file, compile_.event.line)].append(compile_)
    named = collections.Counter(function for function, _, _ in grouped)
    return {
        (f"{function} ({_short(file)}:{line})" if named[function] > 1 else function): compiles
        for (function, file, line), compiles in grouped.items()
    }


def _function_line(function: str, compiles: list[Compile]) -> str:
    kinds = collections.Counter(c.kind for c in compiles)
    counted = ", ".join(
        f"{n} {kind}{'s' if n > 1 and kind in ('recompile',) else ''}" for kind, n in kinds.items() if kind != "recompile limit reached"
    )
    limit = next((c.event.limit for c in compiles if c.event.limit is not None), None)
    after = f", then dynamo's recompile limit ({limit}): it runs uncompiled from there" if limit is not None else ""
    return f"{function} compiled {sum(c.kind != 'recompile limit reached' for c in compiles)} time(s) ({counted}{after})"


def _causes_said_once(read: tuple[Compile, ...]) -> list[str]:
    """Each cause once: a value that changed at several compiles with the values it went through."""
    grouped: dict[tuple[str, str | None], list[Compile]] = collections.defaultdict(list)
    for compile_ in read:
        if compile_.cause.kind != "first compile":
            grouped[(compile_.cause.kind, compile_.cause.value or cause_words(compile_.cause))].append(compile_)
    said = []
    for (kind, value), compiles in grouped.items():
        cause = compiles[0].cause
        where = f" (read at {cause.where})" if cause.source is not None else ""
        if kind in ("python number", "cache growth", "changing size") and len(compiles) > 1:
            values = [compiles[0].cause.before] + [c.cause.after for c in compiles]
            shown = values if len(values) <= 6 else [*values[:3], "...", *values[-2:]]
            noun = {
                "python number": "a Python number burned into the graph",
                "cache growth": "a size growing by one per call (a cache or a sequence)",
            }.get(kind, "a size that changes")
            said.append(f"{value} changed at {len(compiles)} compiles ({' -> '.join(str(v) for v in shown)}): {noun}{where}")
        else:
            said.append(f"{cause_words(cause)}{where}")
    return said


def _xla_total(record: WatchRecord) -> str:
    delta = record.xla_total
    if delta is None:
        return f"({gap_text(record.xla_gap)}.) " if record.xla_gap else ""
    compiled = (
        f"{delta.compilations} XLA program(s) compiled ({delta.compile_seconds:.1f} s)" if delta.compilations else "0 XLA programs compiled"
    )
    return f"{compiled}, {delta.executions} execution(s), {delta.transfers_to_host} transfer(s) to the host in all. "


def _native_total(record: WatchRecord) -> str:
    delta = record.native_total
    if delta is None:
        return f"({gap_text(record.native_gap)}.) " if record.native_gap else ""
    text = (
        f"On the native device: {delta.transfers_to_host} copy(ies) to the host, {delta.transfers_to_device} to the device, "
        f"{delta.syncs} sync(s), {delta.fallback_calls} CPU fallback(s)"
    )
    seen = next(((step.number, step.seen) for step in reversed(record.steps) if step.seen is not None and device_lines(step.seen)), None)
    where = f"; step {seen[0]}: {device_lines(seen[1])}" if seen is not None else ""
    return text + where + ". " + _counted_only(record)


def _counted_only(record: WatchRecord) -> str:
    """Which steps' device costs came without their lines: a loop that repeats itself is counted by the device alone."""
    counted = [step.number for step in record.steps if step.lined is False]
    if not counted:
        return ""
    lined = [step.number for step in record.steps if step.lined]
    return (
        f"The device's costs have their lines at {_unit(record)}(s) {_spans(lined)}; at {_spans(counted)} the device counted them "
        "without lines (lines are taken on the first steps, from any compile on, and after a step whose costs changed). "
    )


def _spans(numbers: list[int]) -> str:
    """'1-3, 7': runs of consecutive numbers."""
    spans: list[list[int]] = []
    for number in numbers:
        if spans and number == spans[-1][-1] + 1:
            spans[-1].append(number)
        else:
            spans.append([number])
    return ", ".join(f"{span[0]}-{span[-1]}" if len(span) > 1 else str(span[0]) for span in spans) or "none"


# --- the chart -----------------------------------------------------------------------------------
def _series(record: WatchRecord) -> list[tuple[str, str]]:
    native = record.native_total is not None
    third = ("copies to host", "#1f77b4") if native else ("transfers to host", "#1f77b4")
    return [("dynamo compiles", "#d62728"), ("XLA compiles", "#9467bd"), third] + ([("CPU fallbacks", "#8c564b")] if native else [])


def _values(step: Step) -> dict[str, int]:
    xla, native = step.xla, step.native
    return {
        "dynamo compiles": step.dynamo_compiles,
        "XLA compiles": xla.compilations if xla else 0,
        "transfers to host": xla.transfers_to_host if xla else 0,
        "copies to host": native.transfers_to_host if native else 0,
        "CPU fallbacks": native.fallback_calls if native else 0,
    }


def chart_svg(record: WatchRecord) -> str:
    """Bars per step in step order (binned beyond 60): dynamo compiles, XLA compiles, transfers (a native
    device: copies to the host and CPU fallbacks); the steady state marked."""
    labels, values = binned([str(step.number) for step in record.steps], [_values(step) for step in record.steps])
    series = _series(record)
    width, left, row = 720, 10, 56
    slot = (width - left - 10) / max(len(values), 1)
    unit = _unit(record)
    parts = [
        f'<svg class="nd-watch-chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{row * len(series) + 30}" role="img">'
    ]
    for r, (name, colour) in enumerate(series):
        top = 10 + r * row
        peak = max((v[name] for v in values), default=0)
        parts.append(f'<text x="{left}" y="{top + 10}" font-size="12" fill="#59636e">{_e(name)} per {unit} (max {peak})</text>')
        parts.append(f'<line x1="{left}" y1="{top + row - 8}" x2="{width - 10}" y2="{top + row - 8}" stroke="#d0d7de"/>')
        for i, value in enumerate(values):
            height = 0 if not peak else (row - 26) * value[name] / peak
            x, y = left + i * slot, top + row - 8 - height
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(slot - 1, 1):.1f}" height="{height:.1f}" fill="{colour}">'
                f"<title>{unit} {_e(labels[i])}: {value[name]} {_e(name)}</title></rect>"
            )
    parts.append(_steady_marker(record, labels, left, slot, row * len(series)))
    span = f"{labels[0]} to {labels[-1]}" if labels else "none"
    parts.append(f'<text x="{left}" y="{row * len(series) + 26}" font-size="11" fill="#59636e">{unit} {_e(span)}</text>')
    return "".join(parts) + "</svg>"


def _steady_marker(record: WatchRecord, labels: list[str], left: float, slot: float, height: int) -> str:
    steady = record.steady.after
    if not isinstance(steady, int) or steady == 0:
        return ""
    index = next((i for i, label in enumerate(labels) if str(steady) in label.split("-")), None)
    if index is None:
        return ""
    x = left + (index + 1) * slot
    return (
        f'<line class="nd-steady" x1="{x:.1f}" y1="6" x2="{x:.1f}" y2="{height + 6}" stroke="#2e7d32" stroke-dasharray="4 3"/>'
        f'<text x="{x + 3:.1f}" y="16" font-size="11" fill="#2e7d32">steady after {_unit(record)} {steady}</text>'
    )


# --- the card ------------------------------------------------------------------------------------
def _compiles_table(record: WatchRecord) -> str:
    read = record.compiles
    if not read:
        return '<p class="nd-good">Dynamo compiled nothing while watched.</p>'
    rows = "".join(
        f"<tr><td>{_e(c.step or '')}</td><td><code>{_e(c.event.function)}</code></td><td>{_e(c.event.index)}</td>"
        f"<td>{_e(c.kind)}</td><td>{_e(cause_words(c.cause))}</td><td>{_e(c.cause.where if c.cause.source else '')}</td>"
        f"<td>{_e(c.event.graphs)}</td><td>{_e('—' if c.xla_compiles is None else c.xla_compiles)}</td></tr>"
        for c in read
    )
    head = f"<tr><th>{_unit(record)}</th><th>function</th><th>index</th><th>kind</th><th>why</th><th>read at</th><th>graphs</th><th>XLA compiles</th></tr>"
    return f'<table class="nd-compiles">{head}{rows}</table>'


def _programs_table(record: WatchRecord) -> str:
    rows = "".join(
        f"<tr><td>{step.number}</td><td>{_e(p.kind)}</td><td>{_e(p.where if p.source else '')}</td><td><code>{_e(p.code or '')}</code></td>"
        f"<td>{_e(p.inputs)}</td><td><code>{_e(p.graph_hash[:10])}</code></td></tr>"
        for step in record.steps
        for p in step.programs
    )
    if not rows:
        return f'<p class="nd-note">{_e(gap_text(record.analysis_gap))}</p>' if record.analysis_gap else ""
    head = f"<tr><th>{_unit(record)}</th><th>cause</th><th>triggered at</th><th>code</th><th>graph inputs</th><th>graph hash</th></tr>"
    return f'<h4>XLA programs compiled (torch_xla\'s analysis)</h4><table class="nd-programs">{head}{rows}</table>'


def _advice(record: WatchRecord) -> str:
    def items(advice: Sequence[Advice]) -> str:
        return "".join(
            f"<li>{_e(advice_text(a))}{f' <span class=nd-muted>({_e(a.where)})</span>' if a.source else ''} "
            f"<span class=nd-muted>[{_e(advice_check_text(a.check))}]</span></li>"
            for a in advice
        )

    shown = f'<h4>What to write instead</h4><ul class="nd-advice">{items(record.advice)}</ul>' if record.advice else ""
    tried = f'<h4>Tried, not enough</h4><ul class="nd-advice nd-tried">{items(record.tried)}</ul>' if record.tried else ""
    return shown + tried


def watch_card(record: WatchRecord) -> str:
    from neurondev.render.card_style import CSS
    from neurondev.render.html import findings_table

    css = "nd-good" if record.reached_steady_state and record.raised is None else "nd-bad"
    notes = "".join(f'<p class="nd-note">{_e(gap_text(gap))}</p>' for gap in (record.xla_gap, record.native_gap) if gap)
    return (
        f'<style>{CSS}</style><div class="neurondev-card nd-watch"><h3>neurondev watch: {_e(record.name)}</h3>'
        f'<p class="nd-headline"><span class="{css}">{_e(watch_summary(record))}</span></p>{notes}{costs_section(record)}'
        f"<h4>Per {_unit(record)}</h4>{chart_svg(record)}"
        f"<h4>Dynamo's compiles ({len(record.compiles)})</h4>{_compiles_table(record)}{_programs_table(record)}{_advice(record)}"
        f"{findings_table(watch_findings(record))}</div>"
    )


def watch_report(record: WatchRecord) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>neurondev watch</title></head>'
        f'<body style="margin: 24px">{watch_card(record)}</body></html>\n'
    )
