"""The card's view of the graphs on the device: both graphs drawn, the runs before and after the pass as a table with
their verdicts, the generated code's diff, and the graph traced natively on the device."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import TYPE_CHECKING

from neurondev.render.card_style import escape as _e
from neurondev.render.card_style import where_or_dash
from neurondev.render.drawing import DrawBudget, svg_or_reason
from neurondev.render.sentences import describe, not_compared_text, verdict_text
from neurondev.runs.run_records import RunRecord, place_of

if TYPE_CHECKING:
    from neurondev.report.model import ExplanationData, Section
    from neurondev.report.verdicts import Verdict

__all__ = ["code_diff", "graphs_html", "metrics_table", "native_html"]


def graphs_html(explanation: ExplanationData, section: Section, budget: DrawBudget) -> str:
    figures = []
    for which, caption in (("before", "before: pins orange, breaks red"), ("after", "after: rewritten blue")):
        svg, reason = svg_or_reason(explanation, which, section.key, budget=budget)
        if svg is None:
            body = f'<p class="nd-note">Graph not drawn: {_e(reason)}</p>'
        else:
            body = svg + (f'<p class="nd-note">Note: {_e(reason)}</p>' if reason else "")
        figures.append(f'<figure class="nd-graph nd-{which}">{body}<figcaption>{_e(caption)}</figcaption></figure>')
    return f'<div class="nd-graphs">{"".join(figures)}</div>'


def _metric_rows(before: RunRecord | None, after: RunRecord | None) -> list[tuple[str, str, str]]:
    def cell(record: RunRecord | None, value: Callable[[RunRecord], str], label: str) -> str:
        if record is None or (record.error is not None and label != "failure"):
            return "—"  # a failed run has no figures to show
        return value(record)

    def time(record: RunRecord) -> str:
        return f"{record.seconds * 1e3:.3f} ms" if record.seconds else "—"

    def values(record: RunRecord) -> str:
        if record.comparison is not None:
            return describe(record.comparison)
        return not_compared_text(record.not_compared) if record.not_compared is not None else "—"

    native = any(record is not None and record.stack == "native" for record in (before, after))
    stops: list[tuple[str, Callable[[RunRecord], str]]] = [
        ("copies to the host", lambda r: str(r.transfers_to_host)),
        ("syncs", lambda r: str(r.syncs)),
        ("copies to the device", lambda r: str(r.transfers_to_device)),
    ]
    if not native:
        stops = [
            ("graph breaks", lambda r: str(len(r.graph_breaks))),
            ("mid-graph executions", lambda r: str(r.executions)),
            ("transfers to host", lambda r: str(r.transfers_to_host)),
            ("transfers to device", lambda r: str(r.transfers_to_device)),
        ]
    measures: list[tuple[str, Callable[[RunRecord], str]]] = [
        *stops,
        ("uploads (host-built values)", lambda r: ", ".join(u.node for u in r.uploads) or "0"),
        ("CPU fallbacks", lambda r: ", ".join(f"{k} ×{v}" for k, v in r.fallback_ops.items()) or "0"),
        ("time per call", time),
        ("outputs on", lambda r: ", ".join(r.output_devices) or "—"),
        ("values vs CPU", values),
        ("failure", lambda r: str(r.error) if r.error else "—"),
    ]
    return [(label, cell(before, measure, label), cell(after, measure, label)) for label, measure in measures]


def metrics_table(section: Section) -> str:
    """One section's runs before vs after as a table, and its values verdict."""
    if section.before is None and section.after is None:
        return ""
    rows = "".join(f"<tr><th>{_e(a)}</th><td>{_e(b)}</td><td>{_e(c)}</td></tr>" for a, b, c in _metric_rows(section.before, section.after))
    record = section.after or section.before
    place = "XLA" if record is None else place_of(record.device)
    verdicts = "".join(
        f'<p class="nd-verdict">{_e(label)}: <span class="{_verdict_class(verdict)}">{_e(verdict_text(verdict, figures=True, place=place))}</span></p>'
        for label, verdict in (("The rewrite", section.rewrite_verdict), (f"{place} against CPU", section.cpu_verdict))
        if verdict is not None
    )
    first = section.cpu_verdict.first_difference if section.cpu_verdict is not None else None
    departs = f'<p class="nd-bad nd-first-difference">{_e(place)} departs from CPU first at {_e(describe(first))}</p>' if first else ""
    return f'<table class="nd-metrics"><tr><th></th><th>before</th><th>after</th></tr>{rows}</table>{verdicts}{departs}'


def _verdict_class(verdict: Verdict) -> str:
    return {True: "nd-good", False: "nd-bad", None: "nd-muted"}[verdict.matches]


def code_diff(before: str, after: str) -> str:
    """The generated code before vs after as HTML: removed lines marked red, added green."""
    lines = []
    for line in difflib.unified_diff(before.strip().splitlines(), after.strip().splitlines(), "before", "after", lineterm="", n=2):
        if line.startswith(("---", "+++")):
            continue
        css = "nd-del" if line.startswith("-") else "nd-add" if line.startswith("+") else "nd-muted" if line.startswith("@@") else ""
        lines.append(f'<span class="{css}">{_e(line)}</span>' if css else _e(line))
    return '<pre class="nd-diff">' + ("\n".join(lines) or "(no change)") + "</pre>"


def native_html(explanation: ExplanationData) -> str:
    """The native trace: device-specialised lines, graphs in one trace only, rewritten/native time."""
    if explanation.traces_skipped:
        return f'<h4>Traced natively on {_e(explanation.place)}</h4><p class="nd-note">Not traced: {_e(explanation.traces_skipped)}</p>'
    native = explanation.traces
    if native is None:
        return ""
    css = "nd-good" if native.agree else "nd-bad"
    parts = [f'<h4>Traced natively on {_e(explanation.place)}</h4><p class="{css}">{_e(describe(native))}</p>']
    if native.differences:
        rows = "".join(
            f"<tr><td>{_e(where_or_dash(d.source))}</td><td><code>{_e(d.code)}</code></td>"
            f"<td><code>{_e(', '.join(d.cpu_ops))}</code></td><td><code>{_e(', '.join(d.xla_ops))}</code></td></tr>"
            for d in native.differences
        )
        place = _e(explanation.place)
        parts.append(f'<table class="nd-native"><tr><th>line</th><th>code</th><th>CPU trace</th><th>{place} trace</th></tr>{rows}</table>')
    if native.native_failure is not None:
        parts.append(f'<p class="nd-bad">The native graph fails on {_e(explanation.place)}: {_e(describe(native.native_failure))}</p>')
    for section in explanation.sections:
        timing = section.native
        if timing is not None:
            parts.append(
                f"<p>{_e(section.label)}: rewritten {timing.rewritten * 1e3:.3f} ms/call, native {timing.native * 1e3:.3f} ms/call: "
                f"<b>rewritten/native {timing.ratio:.2f}</b> (measured side by side)</p>"
            )
    return "".join(parts)
