"""The notebook card and the self-contained HTML report of an Explanation (inline SVG and CSS, no script), put
together from its views: the program panel, each graph's pins, drawings and runs, the fixes, the findings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from neurondev.render.card_style import CSS, REPORT_CSS, where_or_dash
from neurondev.render.card_style import escape as _e
from neurondev.render.drawing import DrawBudget
from neurondev.render.html_pins import cpu_kernels_html, fixes_html, host_values_html, pin_table
from neurondev.render.html_program import program_panel
from neurondev.render.html_runs import code_diff, graphs_html, metrics_table, native_html
from neurondev.render.sentences import capture_note_text, describe, runtime_info_text, skip_text
from neurondev.render.text import after_text, before_text, pins_text, program_text, summary
from neurondev.report.findings import explanation_findings
from neurondev.rulebook import rule_named

if TYPE_CHECKING:
    from neurondev.report.model import ExplanationData, Section

__all__ = ["card", "findings_table", "report"]


def _headline(explanation: ExplanationData) -> str:
    verdicts = (explanation.rewrite_preserves_values, explanation.graphs_match_cpu)
    before, after = explanation.totals("before"), explanation.totals("after")
    stops = lambda totals: totals.graph_breaks or totals.host_copies or totals.fallbacks or totals.failures  # noqa: E731
    after_class = "nd-bad" if False in verdicts or stops(after) else "nd-good" if True in verdicts else ""
    before_class = "nd-bad" if stops(before) else ""
    program = explanation.program
    program_class = "" if program is None else "nd-good" if program.rewritten.ok and program.rewritten.matches_cpu else "nd-bad"
    return (
        f'<p class="nd-program-line"><span class="{program_class}">{_e(program_text(explanation))}</span></p>'
        f'<p class="nd-headline"><b>Traced on CPU, the graph moved to {_e(explanation.place)}:</b> {_e(pins_text(explanation))} &rarr; '
        f'<span class="{before_class}">{_e(before_text(explanation))}</span></p>'
        f'<p class="nd-headline"><span class="{after_class}">{_e(after_text(explanation))}</span></p>'
    )


def _runtime(explanation: ExplanationData) -> str:
    info = explanation.runtime
    if not info:
        return f'<p class="nd-muted">Target {_e(explanation.target)}; not run: {_e(skip_text(explanation.skipped))}</p>'
    xla = f" &middot; torch_xla {_e(info['torch_xla'])}" if info.get("torch_xla") else ""
    return (
        f'<p class="nd-muted">Ran on {_e(info.get("device"))} ({_e(info.get("runtime"))}: {_e(runtime_info_text(info))}) '
        f"&middot; torch {_e(info.get('torch'))}{xla} &middot; target {_e(explanation.target)}</p>"
    )


def _totals(explanation: ExplanationData) -> str:
    """Sums over the graphs, when there are several and they ran."""
    if len(explanation.sections) < 2 or explanation.skipped:
        return ""
    before, after = explanation.totals("before").to_dict(), explanation.totals("after").to_dict()
    rows = "".join(f"<tr><th>{_e(key.replace('_', ' '))}</th><td>{before[key]}</td><td>{after[key]}</td></tr>" for key in before)
    return f'<h4>Totals over {len(explanation.sections)} graphs</h4><table class="nd-totals"><tr><th></th><th>before</th><th>after</th></tr>{rows}</table>'


def _dynamo_breaks(explanation: ExplanationData) -> str:
    breaks = explanation.capture.dynamo_breaks
    if not breaks:
        return ""
    rows = "".join(
        f"<tr><td>{_e(where_or_dash(b.source))}</td><td><code>{_e(b.source.code if b.source else '')}</code></td><td>{_e(b.reason)}</td></tr>"
        for b in breaks
    )
    return f"<h4>Dynamo's own graph breaks ({len(breaks)})</h4><table><tr><th>line</th><th>code</th><th>reason</th></tr>{rows}</table>"


def _notes(explanation: ExplanationData) -> str:
    return "".join(f'<p class="nd-note">Note: {_e(capture_note_text(n))}</p>' for n in explanation.notes)


def _section(explanation: ExplanationData, section: Section, budget: DrawBudget) -> str:
    return (
        f"<h4>{_e(section.label.capitalize())} ({section.nodes} nodes, {len(section.pins)} pin(s))</h4>"
        + pin_table(explanation, section)
        + host_values_html(explanation, section)
        + cpu_kernels_html(section)
        + graphs_html(explanation, section, budget)
        + metrics_table(section)
        + "<details><summary>Generated code, before vs after</summary>"
        + code_diff(section.traced.code, section.rewritten.code)
        + "</details>"
    )


def _seed_scenario(place: str) -> str:
    return (
        f'<h3 class="nd-scenario">Traced on CPU, the graph moved to {_e(place)}</h3><p class="nd-note">What a backend sees that '
        f"traces on CPU and moves the graph to {_e(place)} (as vLLM's Neuron backend does): each graph dynamo made on CPU, run "
        "node by node on the device before and after DeviceRewriterPass.</p>"
    )


def findings_table(records: Sequence[Any]) -> str:
    """Every finding of a card, each with its rule's code linked to the rule's page, its line and the card's sentence."""
    if not records:
        return ""
    rows = "".join(
        f'<tr><td><a class="nd-rule" href="{_e(rule_named(r.rule).url)}" target="_blank">{_e(r.rule)}</a></td>'
        f"<td>{_e(rule_named(r.rule).name)}</td><td>{_e(r.where if getattr(r, 'source', None) is not None else '')}</td>"
        f"<td>{_e(describe(r))}</td></tr>"
        for r in records
    )
    head = "<tr><th>rule</th><th>name</th><th>line</th><th>what was found</th></tr>"
    return f'<details class="nd-findings"><summary>Findings by rule ({len(records)})</summary><table>{head}{rows}</table></details>'


def card(explanation: ExplanationData) -> str:
    """The notebook card: headline, runtime, per graph the pins, both graphs, metrics and code diff."""
    budget = DrawBudget()  # every drawing of the card together: a card of many graphs never blocks a notebook for long
    sections = "".join(_section(explanation, s, budget) for s in explanation.sections)
    if not explanation.sections:
        sections = f'<p class="nd-note">{_e(summary(explanation))}</p>'
    return (
        f'<style>{CSS}</style><div class="neurondev-card"><h3>neurondev: {_e(explanation.name)}</h3>'
        + _headline(explanation)
        + _runtime(explanation)
        + program_panel(explanation)
        + _seed_scenario(explanation.place)
        + sections
        + fixes_html(explanation)
        + _totals(explanation)
        + native_html(explanation)
        + _dynamo_breaks(explanation)
        + findings_table(explanation_findings(explanation))
        + _notes(explanation)
        + "</div>"
    )


def report(explanation: ExplanationData) -> str:
    """One self-contained HTML page: the card, its CSS inline, no script, font or image from the network."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>neurondev: {_e(explanation.name)}</title>'
        f"<style>{REPORT_CSS}</style></head><body>{card(explanation)}</body></html>\n"
    )
