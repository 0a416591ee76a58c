"""Where a watched loop's time went, shown: the costliest lines in a sentence, the cost table, and a per-step strip of
seconds (dynamo's compiles, XLA's compiles, executions and transfers stacked), each from the runtime's clocks."""

from __future__ import annotations

from typing import Any

from neurondev.loops.costs import Cost, costs
from neurondev.loops.record import dynamo_seconds
from neurondev.render.card_style import escape as _e

__all__ = ["BINS", "binned", "costliest_text", "costs_section", "strip_svg"]

_SHOWN = 3
BINS = 60  # bars at most in a chart per step: a longer loop's steps are shown in groups
_PARTS = (
    ("dynamo compile", "#d62728"),
    ("XLA compile", "#9467bd"),
    ("XLA execution", "#2ca02c"),
    ("transfer to host", "#1f77b4"),
)


def _label(cost: Cost) -> str:
    rule = f" [{cost.rule}]" if cost.rule else ""
    return f"{cost.cause} at {cost.where}{rule}"


def costliest_text(record: Any) -> str:
    """'Where the time went (the runtime's clocks): ... of N s watched. ' for the costliest lines; '' when none was timed."""
    timed = [cost for cost in costs(record) if cost.seconds > 0]
    if not timed:
        return ""
    shown = "; ".join(f"{_label(cost)} {cost.seconds:.2f} s ({cost.share:.0%})" for cost in timed[:_SHOWN])
    more = f"; {len(timed) - _SHOWN} more" if len(timed) > _SHOWN else ""
    return f"Where the time went (the runtime's own clocks): {shown}{more}, of {record.seconds:.2f} s watched. "


def costs_section(record: Any) -> str:
    """The card's 'where the time went': the strip per step, then the cost table (every timed line, costliest first)."""
    timed = [cost for cost in costs(record) if cost.seconds > 0]
    if not timed:
        return ""
    rows = "".join(
        f"<tr><td>{_e(cost.rule or '')}</td><td>{_e(cost.where)}</td><td>{_e(cost.cause)}</td><td>{_e(cost.clock)}</td>"
        f"<td>{cost.events}</td><td>{cost.seconds:.3f}</td><td>{cost.share:.1%}</td></tr>"
        for cost in timed
    )
    table = (
        '<table class="nd-costs"><tr><th>rule</th><th>where</th><th>cause</th><th>clock</th><th>events</th><th>seconds</th>'
        f"<th>share</th></tr>{rows}</table>"
    )
    return f"<h4>Where the time went</h4>{strip_svg(record)}{table}"


def binned(labels: list[str], values: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """Per-step values in at most ``BINS`` groups of consecutive steps (each labelled 'first-last', its values summed)."""
    if len(values) <= BINS:
        return labels, values
    size = -(-len(values) // BINS)
    grouped = [values[i : i + size] for i in range(0, len(values), size)]
    names = [f"{labels[i]}-{labels[min(i + size, len(labels)) - 1]}" for i in range(0, len(values), size)]
    return names, [{key: sum(v[key] for v in group) for key in group[0]} for group in grouped]


def _seconds(record: Any, step: Any) -> dict[str, float]:
    xla = step.xla
    return {
        "dynamo compile": dynamo_seconds(step, record.compiles),
        "XLA compile": xla.compile_seconds if xla else 0.0,
        "XLA execution": xla.execute_seconds if xla else 0.0,
        "transfer to host": xla.transfer_seconds if xla else 0.0,
    }


def strip_svg(record: Any) -> str:
    """One bar per step (grouped beyond ``BINS``, as the chart of counts), its seconds stacked by kind, on one scale."""
    labels, values = binned([str(step.number) for step in record.steps], [_seconds(record, step) for step in record.steps])
    width, height, left = 720, 120, 10
    peak = max((sum(v.values()) for v in values), default=0.0) or 1.0
    slot = (width - left - 10) / max(len(values), 1)
    parts = [f'<svg class="nd-time-strip" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 44}" role="img">']
    for i, value in enumerate(values):
        y = 10.0 + height
        for name, colour in _PARTS:
            tall = height * value[name] / peak
            y -= tall
            parts.append(
                f'<rect x="{left + i * slot:.1f}" y="{y:.1f}" width="{max(slot - 1, 1):.1f}" height="{tall:.1f}" fill="{colour}">'
                f"<title>step {_e(labels[i])}: {_e(name)} {value[name]:.4f} s</title></rect>"
            )
    legend = "".join(
        f'<rect x="{left + k * 150}" y="{height + 20}" width="10" height="10" fill="{colour}"/>'
        f'<text x="{left + k * 150 + 14}" y="{height + 29}" font-size="11" fill="#59636e">{_e(name)}</text>'
        for k, (name, colour) in enumerate(_PARTS)
    )
    scale = f'<text x="{left}" y="10" font-size="11" fill="#59636e">seconds per step (the tallest {peak:.3f} s)</text>'
    return "".join(parts) + legend + scale + "</svg>"
