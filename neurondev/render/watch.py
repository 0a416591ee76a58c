"""A Watch as text, as a card (an inline SVG chart of compiles per call, the compiles and their causes, the advice) and as a page."""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

from neurondev.render.html import escape as _e

if TYPE_CHECKING:
    from neurondev.loops.result import Compile, Watch

__all__ = ["chart_svg", "watch_card", "watch_report", "watch_summary"]

_BINS = 60
_SERIES = (("compiles", "#d62728"), ("XLA compiles", "#9467bd"), ("transfers to host", "#1f77b4"))


def watch_summary(watch: Watch) -> str:
    """What compiled, how often and why, the XLA compiles, the steady state and the first advice."""
    read = watch.compiles_read
    calls = len(watch._recorder.calls)
    subject = f"{watch.name} ({calls} call{'s' if calls != 1 else ''})" if watch._fn is not None else "the block"
    if not read:
        return f"Watched {subject}: nothing compiled. {_xla_total(watch)}".strip()
    parts = [_function_line(function, compiles) for function, compiles in _by_function(read).items()]
    text = f"Watched {subject}: " + "; ".join(parts) + f". {_xla_total(watch)}{_steady(watch)}"
    named = _causes_said_once(read)
    if named:
        text += " Why: " + "; ".join(named[:3]) + ("; ..." if len(named) > 3 else "") + "."
    advice = watch.advice
    if advice:
        text += f" Advice ({len(advice)}): {advice[0].text}" + (f" ({advice[0].where})" if advice[0].source else "") + "."
    return text


def _by_function(read: tuple[Compile, ...]) -> dict[str, list[Compile]]:
    grouped: dict[str, list[Compile]] = collections.defaultdict(list)
    for compile_ in read:
        grouped[compile_.event.function].append(compile_)
    return grouped


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
            grouped[(compile_.cause.kind, compile_.cause.value or compile_.cause.words)].append(compile_)
    said = []
    for (kind, value), compiles in grouped.items():
        cause = compiles[0].cause
        where = f" (read at {cause.where})" if cause.source is not None else ""
        if kind in ("python number", "cache growth", "changing size") and len(compiles) > 1:
            values = [compiles[0].cause.before] + [c.cause.after for c in compiles]
            shown = values if len(values) <= 6 else [*values[:3], "...", *values[-2:]]
            noun = {"python number": "a Python number burned into the graph", "cache growth": "a cache growing by one per call"}.get(
                kind, "a size that changes"
            )
            said.append(f"{value} changed at {len(compiles)} compiles ({' -> '.join(str(v) for v in shown)}): {noun}{where}")
        else:
            said.append(f"{cause.words}{where}")
    return said


def _xla_total(watch: Watch) -> str:
    from neurondev.loops.recorder import since

    recorder = watch._recorder
    delta = since(recorder.xla_at_start, recorder.xla_at_stop)
    if delta is None:
        return f"({watch.xla_note}.) "
    return (
        f"{delta.compilations} XLA compile(s), {delta.executions} execution(s), {delta.transfers_to_host} transfer(s) to the host in all. "
    )


def _steady(watch: Watch) -> str:
    steady = watch.steady_state
    if steady == "never":
        return "No steady state: compiles continue to the end."
    if watch._fn is not None:
        return "Nothing compiled at all." if steady == 0 else f"Steady state after call {steady}: nothing compiled after it."
    return f"Steady state after {steady} compile(s): compiled code ran on without another."


# --- the chart -----------------------------------------------------------------------------------
def _per_call(watch: Watch) -> tuple[list[str], list[dict[str, int]]]:
    """Per bin (calls, or seconds into the block): compiles, XLA compiles, transfers to host."""
    rows = watch.calls.to_dict("records") if watch._fn is not None else []
    if rows:
        values = [
            {"compiles": r["compiled"], "XLA compiles": r["xla_compiles"] or 0, "transfers to host": r["transfers_to_host"] or 0}
            for r in rows
        ]
        return [str(r["call"]) for r in rows], values
    read = watch.compiles_read
    recorder = watch._recorder
    span = max(recorder.stopped_at - recorder.started_at, 1e-9)
    bins = min(_BINS, max(len(read), 1))
    values = [{"compiles": 0, "XLA compiles": 0, "transfers to host": 0} for _ in range(bins)]
    for c in read:
        slot = min(int((c.event.at - recorder.started_at) / span * bins), bins - 1)
        values[slot]["compiles"] += c.kind != "recompile limit reached"
        values[slot]["XLA compiles"] += c.xla_compiles or 0
    labels = [f"{span * (i + 1) / bins:.1f}s" for i in range(bins)]
    return labels, values


def _binned(labels: list[str], values: list[dict[str, int]]) -> tuple[list[str], list[dict[str, int]]]:
    if len(values) <= _BINS:
        return labels, values
    size = -(-len(values) // _BINS)
    grouped = [values[i : i + size] for i in range(0, len(values), size)]
    names = [f"{labels[i]}-{labels[min(i + size, len(labels)) - 1]}" for i in range(0, len(values), size)]
    return names, [{key: sum(v[key] for v in group) for key in group[0]} for group in grouped]


def chart_svg(watch: Watch) -> str:
    """Bars per call (calls binned beyond 60): compiles, XLA compiles, transfers to the host; the steady state marked."""
    labels, values = _binned(*_per_call(watch))
    width, left, row = 720, 10, 56
    step = (width - left - 10) / max(len(values), 1)
    parts = [f'<svg class="nd-watch-chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{row * 3 + 30}" role="img">']
    for r, (name, colour) in enumerate(_SERIES):
        top = 10 + r * row
        peak = max((v[name] for v in values), default=0)
        parts.append(
            f'<text x="{left}" y="{top + 10}" font-size="12" fill="#59636e">{_e(name)} per {"call" if watch._fn is not None else "stretch"} (max {peak})</text>'
        )
        parts.append(f'<line x1="{left}" y1="{top + row - 8}" x2="{width - 10}" y2="{top + row - 8}" stroke="#d0d7de"/>')
        for i, value in enumerate(values):
            height = 0 if not peak else (row - 26) * value[name] / peak
            x, y = left + i * step, top + row - 8 - height
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(step - 1, 1):.1f}" height="{height:.1f}" fill="{colour}">'
                f"<title>{_e(labels[i])}: {value[name]} {_e(name)}</title></rect>"
            )
    parts.append(_steady_marker(watch, labels, left, step, row))
    parts.append(
        f'<text x="{left}" y="{row * 3 + 26}" font-size="11" fill="#59636e">{"call" if watch._fn is not None else "time"} {_e(labels[0] if labels else "")} to {_e(labels[-1] if labels else "")}</text>'
    )
    return "".join(parts) + "</svg>"


def _steady_marker(watch: Watch, labels: list[str], left: float, step: float, row: int) -> str:
    steady = watch.steady_state
    if watch._fn is None or steady in ("never", 0):
        return ""
    index = next((i for i, label in enumerate(labels) if str(steady) in label.split("-")), None)
    if index is None:
        return ""
    x = left + (index + 1) * step
    return (
        f'<line class="nd-steady" x1="{x:.1f}" y1="6" x2="{x:.1f}" y2="{row * 3 + 6}" stroke="#2e7d32" stroke-dasharray="4 3"/>'
        f'<text x="{x + 3:.1f}" y="16" font-size="11" fill="#2e7d32">steady after call {steady}</text>'
    )


# --- the card ------------------------------------------------------------------------------------
def _compiles_table(watch: Watch) -> str:
    read = watch.compiles_read
    if not read:
        return '<p class="nd-good">Nothing compiled while watched.</p>'
    rows = "".join(
        f"<tr><td>{_e(c.event.call or '')}</td><td><code>{_e(c.event.function)}</code></td><td>{_e(c.event.index)}</td>"
        f"<td>{_e(c.kind)}</td><td>{_e(c.cause.words)}</td><td>{_e(c.cause.where if c.cause.source else '')}</td>"
        f"<td>{_e(c.event.graphs)}</td><td>{_e('—' if c.xla_compiles is None else c.xla_compiles)}</td></tr>"
        for c in read
    )
    head = (
        "<tr><th>call</th><th>function</th><th>index</th><th>kind</th><th>why</th><th>read at</th><th>graphs</th><th>XLA compiles</th></tr>"
    )
    return f'<table class="nd-compiles">{head}{rows}</table>'


def _advice(watch: Watch) -> str:
    advice = watch.advice
    if not advice:
        return ""
    items = "".join(f"<li>{_e(a.text)}{f' <span class=nd-muted>({_e(a.where)})</span>' if a.source else ''}</li>" for a in advice)
    return f'<h4>What to write instead (advice: not run here)</h4><ul class="nd-advice">{items}</ul>'


def watch_card(watch: Watch) -> str:
    from neurondev.render.html import CSS

    css = "nd-good" if watch.reached_steady_state else "nd-bad"
    note = f'<p class="nd-note">{_e(watch.xla_note)}</p>' if watch.xla_note else ""
    return (
        f'<style>{CSS}</style><div class="neurondev-card nd-watch"><h3>neurondev watch: {_e(watch.name)}</h3>'
        f'<p class="nd-headline"><span class="{css}">{_e(watch_summary(watch))}</span></p>{note}'
        f"<h4>Per {'call' if watch._fn is not None else 'stretch of time'}</h4>{chart_svg(watch)}"
        f"<h4>Compiles ({len(watch.compiles_read)})</h4>{_compiles_table(watch)}{_advice(watch)}</div>"
    )


def watch_report(watch: Watch) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>neurondev watch</title></head>'
        f'<body style="margin: 24px">{watch_card(watch)}</body></html>\n'
    )
