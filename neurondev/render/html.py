"""The notebook card and the self-contained HTML report of an Explanation (inline SVG and CSS, no script)."""

from __future__ import annotations

import difflib
import html
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from neurondev.render.drawing import DrawBudget, svg_or_reason
from neurondev.render.fix_words import CPU_KERNEL_FIX, LIBRARY_NOTE, host_value_fix, short_fix
from neurondev.render.run_words import lines_text
from neurondev.render.sentences import (
    capture_note_text,
    describe,
    not_compared_text,
    runtime_info_text,
    skip_text,
    unseen_text,
    values_text,
    verdict_text,
    why_text,
)
from neurondev.render.text import (
    after_text,
    before_text,
    first_difference_text,
    host_values_text,
    pins_text,
    program_text,
    specialised_text,
    summary,
)
from neurondev.report.findings import explanation_findings
from neurondev.rulebook import rule_named
from neurondev.runs.run_records import RunRecord, place_of
from neurondev.trace.source import Located, SourceLine, is_user_file

if TYPE_CHECKING:
    from neurondev.fx.pins import DevicePin
    from neurondev.report.fixes.records import Fix
    from neurondev.report.model import ExplanationData, Section
    from neurondev.report.verdicts import Verdict
    from neurondev.runs.program_records import ProgramRun

__all__ = ["CSS", "card", "code_diff", "escape", "metrics_table", "program_panel", "report"]

CSS = """
.neurondev-card { --nd-fg: var(--jp-ui-font-color1, #1f2328); --nd-muted: var(--jp-ui-font-color2, #59636e);
  --nd-bg: var(--jp-layout-color1, #ffffff); --nd-alt: var(--jp-layout-color2, #f6f8fa);
  --nd-border: var(--jp-border-color2, #d0d7de); --nd-bad: var(--jp-error-color1, #c62828);
  --nd-good: var(--jp-success-color1, #2e7d32); --nd-warn: var(--jp-warn-color1, #b26a00);
  --nd-mono: var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, monospace);
  font-family: var(--jp-ui-font-family, system-ui, -apple-system, "Segoe UI", sans-serif);
  color: var(--nd-fg); background: var(--nd-bg); border: 1px solid var(--nd-border); border-radius: 6px;
  padding: 12px 16px; line-height: 1.45; font-size: 13px; max-width: 100%; overflow-x: auto; }
.neurondev-card h3 { margin: 0 0 6px; font-size: 16px; }
.neurondev-card h4 { margin: 16px 0 6px; font-size: 14px; border-bottom: 1px solid var(--nd-border); }
.neurondev-card .nd-headline, .neurondev-card .nd-program-line { font-size: 14px; margin: 4px 0; }
.neurondev-card .nd-bad { color: var(--nd-bad); font-weight: 600; }
.neurondev-card .nd-good { color: var(--nd-good); font-weight: 600; }
.neurondev-card .nd-muted, .neurondev-card .nd-note { color: var(--nd-muted); }
.neurondev-card table { border-collapse: collapse; margin: 6px 0; }
.neurondev-card table th, .neurondev-card table td { border: 1px solid var(--nd-border); padding: 3px 8px; text-align: left !important; vertical-align: top; }
.neurondev-card table th { background: var(--nd-alt); }
.neurondev-card code, .neurondev-card pre { font-family: var(--nd-mono); font-size: 12px; }
.neurondev-card pre { background: var(--nd-alt); padding: 6px 8px; border-radius: 4px; overflow-x: auto; }
.neurondev-card .nd-graphs { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; }
.neurondev-card figure { margin: 0; flex: 1 1 320px; min-width: 280px; background: #ffffff; border-radius: 4px; padding: 4px; }
.neurondev-card figure svg { max-width: 100%; height: auto; }
.neurondev-card figcaption { color: #59636e; font-size: 12px; }
.neurondev-card .nd-del { background: rgba(214, 39, 40, 0.15); display: block; }
.neurondev-card .nd-add { background: rgba(46, 125, 50, 0.18); display: block; }
.neurondev-card .nd-card-fix { margin: 6px 0 10px; max-width: 100%; }
.neurondev-card pre.nd-fixdiff { white-space: pre-wrap; overflow-wrap: anywhere; margin: 2px 0; }
.neurondev-card .nd-why summary { cursor: pointer; color: var(--nd-muted); font-size: 12px; }
"""

_REPORT_DARK = """
@media (prefers-color-scheme: dark) { body { background: #0d1117; }
  .neurondev-card { --nd-fg: #e6edf3; --nd-muted: #9198a1; --nd-bg: #0d1117; --nd-alt: #161b22; --nd-border: #3d444d;
    --nd-bad: #ff7b72; --nd-good: #3fb950; } }
body { margin: 24px; }
"""


def escape(value: Any) -> str:
    """Text for HTML (None as nothing): the one escape every card and the explorer use."""
    return html.escape("" if value is None else str(value))


_e = escape


def _where(source: SourceLine | None) -> str:
    return source.where if source is not None else "—"


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


def program_panel(explanation: ExplanationData) -> str:
    """'Your program on XLA' (or on the native device): the function under torch.compile, as written and rewritten, side by side."""
    programs = explanation.program
    place = explanation.place
    if programs is None:
        return (
            f'<h4>Your program on {_e(place)}</h4><p class="nd-note">Not run: {_e(skip_text(explanation.program_skipped, "program"))}</p>'
        )
    runs = (programs.as_written, programs.rewritten)
    table = _NATIVE_PROGRAM_ROWS if explanation.stack == "native" else _PROGRAM_ROWS
    rows = "".join(f"<tr><th>{_e(label)}</th>" + "".join(f"<td>{cell(run)}</td>" for run in runs) + "</tr>" for label, cell in table)
    head = f"<tr><th></th><th>as written ({_e(programs.as_written.backend)})</th><th>rewritten (neurondev backend)</th></tr>"
    specialised = specialised_text(explanation).strip()
    first = first_difference_text(explanation).strip()
    notes = "".join(f'<p class="nd-note">{_e(text)}</p>' for text in (specialised, first) if text)
    unseen = programs.rewritten.unseen
    notes += f'<p class="nd-note">Not seen: {_e(unseen_text(unseen))}.</p>' if unseen else ""
    return (
        f'<h4>Your program on {_e(place)}</h4><p class="nd-note">Your whole function under <code>torch.compile</code>, its inputs and '
        f"module on {_e(place)}, called twice (the second call is the steady state), against the function run eagerly on CPU.</p>"
        f'<table class="nd-program">{head}{rows}</table>{notes}'
    )


def _program_outcome(run: ProgramRun) -> str:
    if run.failure is None:
        return '<span class="nd-good">runs</span>'
    failure = run.failure
    where = f"<br>at {_e(failure.where)}: <code>{_e(failure.code)}</code>" if failure.source is not None else ""
    return f'<span class="nd-bad">fails: {_e(failure.kind)}</span>{where}<br><span class="nd-muted">{_e(failure.exception)}: {_e(failure.message)}</span>'


def _program_values(run: ProgramRun) -> str:
    css = {True: "nd-good", False: "nd-bad", None: "nd-muted"}[run.matches_cpu]
    return f'<span class="{css}">{_e(values_text(run))}</span>'


_PROGRAM_ROWS: list[tuple[str, Callable[[ProgramRun], str]]] = [
    ("outcome", _program_outcome),
    ("values vs CPU", _program_values),
    ("dynamo graphs", lambda r: str(r.graphs)),
    ("XLA compiles (both calls)", lambda r: str(r.xla_compiles)),
    ("executions per call", lambda r: str(r.executions) if r.calls else "—"),
    ("transfers to host per call", lambda r: str(r.transfers_to_host) if r.calls else "—"),
    ("compiles again on call 2", lambda r: ("yes" if r.recompiled else "no") if len(r.calls) > 1 else "—"),
]


def _at(count: int, located: Sequence[Located]) -> str:
    """'2 (model.py:9, model.py:12)': a count and the lines it was seen at."""
    return f"{count}{lines_text(located)}"


_NATIVE_PROGRAM_ROWS: list[tuple[str, Callable[[ProgramRun], str]]] = [
    ("outcome", _program_outcome),
    ("values vs CPU", _program_values),
    ("dynamo graphs", lambda r: str(r.graphs)),
    (
        "copies to the host per call",
        lambda r: _at(r.transfers_to_host, [c for c in r.host_copies if c.transfers_to_host]) if r.calls else "—",
    ),
    ("copies to the device per call", lambda r: _at(r.transfers_to_device, r.uploads) if r.calls else "—"),
    ("syncs per call", lambda r: _at(r.syncs, [c for c in r.host_copies if c.syncs]) if r.calls else "—"),
    ("CPU fallbacks per call", lambda r: ", ".join(f"{f.op} at {f.where} ×{f.calls}" for f in r.fallbacks) or "0" if r.calls else "—"),
    ("compiles again on call 2", lambda r: ("yes" if r.recompiled else "no") if len(r.calls) > 1 else "—"),
]


def _runtime(explanation: ExplanationData) -> str:
    info = explanation.runtime
    if not info:
        return f'<p class="nd-muted">Target {_e(explanation.target)}; not run: {_e(skip_text(explanation.skipped))}</p>'
    xla = f" &middot; torch_xla {_e(info['torch_xla'])}" if info.get("torch_xla") else ""
    return (
        f'<p class="nd-muted">Ran on {_e(info.get("device"))} ({_e(info.get("runtime"))}: {_e(runtime_info_text(info))}) '
        f"&middot; torch {_e(info.get('torch'))}{xla} &middot; target {_e(explanation.target)}</p>"
    )


def _pin_table(explanation: ExplanationData, section: Section) -> str:
    """One row per source line and advice (with a count), the full list of pins behind a disclosure;
    the backend advice for library code said once, under the table."""
    if not section.pins:
        return '<p class="nd-good">No device pin in this graph: nothing to rewrite.</p>'
    groups: dict[tuple[str, str, str, str], list[DevicePin]] = {}
    for pin in section.pins:
        groups.setdefault((_where(pin.source), pin.function, _role(pin), _instead(explanation, pin)), []).append(pin)
    library = any(pin.source is not None and not is_user_file(pin.file) for pin in section.pins)
    note = f'<p class="nd-note">Pins {_e(LIBRARY_NOTE)}.</p>' if library else ""
    rows = "".join(
        f"<tr><td>{_e(where)}</td><td><code>{_e(pins[0].code)}</code></td><td><code>{_e(function)}</code></td>"
        f"<td>{len(pins)}</td><td>{_e(role)}</td><td>{_e(fix)}</td></tr>"
        for (where, function, role, fix), pins in groups.items()
    )
    head = "<tr><th>line</th><th>your code</th><th>function</th><th>pins</th><th>kind</th><th>write instead</th></tr>"
    return f'<table class="nd-pins">{head}{rows}</table>' + note + _every_pin(section.pins)


def _instead(explanation: ExplanationData, pin: DevicePin) -> str:
    """A short phrase: the fix of the pin's line (and whether it is verified), or what to do instead."""
    if pin.source is not None and not is_user_file(pin.file):
        return "library code: see below"
    fix = explanation.fix_of(pin)
    if fix is None or pin.output_transfer:
        return short_fix(pin)
    if fix.after is None:
        return f"no spelling: {fix.advice}"
    return f"{fix.advice} ({fix.status})"


def _fixes(explanation: ExplanationData) -> str:
    """Per statement of the user's code: a small diff (as written over fixed), its line and verdict beside it."""
    if not explanation.fixes:
        return ""
    verified = sum(fix.verified for fix in explanation.fixes)
    blocks = "".join(_fix_block(fix) for fix in explanation.fixes)
    hint = " <code>explanation.patch()</code> is the diff of the verified ones." if verified else ""
    return (
        f"<h4>Fixes in your code ({verified} of {len(explanation.fixes)} verified)</h4>{blocks}"
        '<p class="nd-note">Verified: every check ran and held: the fixed code, traced again with the same inputs, has no pin on '
        "the line and no new one, makes values of the same dtypes and shapes, gives the same outputs on CPU, and runs on XLA "
        f"under torch.compile with its statements traced as on CPU.{hint}</p>"
    )


def _fix_block(fix: Fix) -> str:
    css = {"verified": "nd-good", "not verified": "nd-bad", "no spelling": "nd-muted"}[fix.status]
    removed = "".join(f'<span class="nd-del">- {_e(line)}</span>' for line in fix.before.splitlines())
    added = (
        "".join(f'<span class="nd-add">+ {_e(line)}</span>' for line in fix.after.splitlines())
        if fix.after is not None
        else f'<span class="nd-muted"># {_e(fix.advice)}</span>'
    )
    return (
        f'<div class="nd-card-fix"><div class="nd-fix-head"><b>{_e(fix.where)}</b> <span class="{css}">{_e(fix.status)}</span></div>'
        f'<pre class="nd-fixdiff">{removed}{added}</pre>'
        f'<details class="nd-why"><summary>why</summary><span class="nd-muted">{_e(why_text(fix))}</span></details></div>'
    )


def _role(pin: DevicePin) -> str:
    if pin.unused:
        return f"{pin.kind}, unused (costs nothing)"
    if pin.output_transfer:
        return "results handed back to the host (kept)"
    return pin.kind


def _every_pin(pins: tuple[DevicePin, ...]) -> str:
    rows = "".join(
        f"<tr><td><code>{_e(pin.node)}</code></td><td><code>{_e(pin.function)}</code></td><td><code>{_e(pin.device)}</code></td>"
        f"<td>{_e(pin.location)}</td><td>{_e(_role(pin))}</td><td>{_e(_where(pin.source))}</td></tr>"
        for pin in pins
    )
    head = "<tr><th>node</th><th>function</th><th>device</th><th>location</th><th>kind</th><th>line</th></tr>"
    return f'<details class="nd-all-pins"><summary>Every pin ({len(pins)})</summary><table>{head}{rows}</table></details>'


def _host_values(explanation: ExplanationData, section: Section) -> str:
    if not section.host_values:
        return ""
    rows = "".join(
        f"<tr><td><code>{_e(value.origin)}</code></td><td>{_e(value.kind)}</td><td>{_e(value.where)}</td>"
        f"<td><code>{_e(value.code or '')}</code></td><td>{_e(host_value_fix(value))}</td></tr>"
        for value in section.host_values
    )
    head = "<tr><th>value</th><th>held in</th><th>used at</th><th>your code</th><th>write instead</th></tr>"
    text = host_values_text(explanation, len(section.host_values))
    return f'<p class="nd-bad">{_e(text)}</p><table class="nd-host">{head}{rows}</table>'


def _cpu_kernels(section: Section) -> str:
    if not section.cpu_kernels:
        return ""
    rows = "".join(
        f"<tr><td><code>{_e(kernel.node)}</code></td><td><code>{_e(kernel.function)}</code></td><td>{_e(kernel.where)}</td></tr>"
        for kernel in section.cpu_kernels
    )
    head = "<tr><th>node</th><th>kernel</th><th>your line</th></tr>"
    return (
        f'<p class="nd-bad">{len(section.cpu_kernels)} CPU kernel(s) chosen while tracing on CPU: {_e(CPU_KERNEL_FIX)}.</p>'
        f'<table class="nd-kernels">{head}{rows}</table>'
    )


def _graphs(explanation: ExplanationData, section: Section, budget: DrawBudget) -> str:
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
        f"<tr><td>{_e(_where(b.source))}</td><td><code>{_e(b.source.code if b.source else '')}</code></td><td>{_e(b.reason)}</td></tr>"
        for b in breaks
    )
    return f"<h4>Dynamo's own graph breaks ({len(breaks)})</h4><table><tr><th>line</th><th>code</th><th>reason</th></tr>{rows}</table>"


def _native(explanation: ExplanationData) -> str:
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
            f"<tr><td>{_e(_where(d.source))}</td><td><code>{_e(d.code)}</code></td>"
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


def _notes(explanation: ExplanationData) -> str:
    return "".join(f'<p class="nd-note">Note: {_e(capture_note_text(n))}</p>' for n in explanation.notes)


def _section(explanation: ExplanationData, section: Section, budget: DrawBudget) -> str:
    return (
        f"<h4>{_e(section.label.capitalize())} ({section.nodes} nodes, {len(section.pins)} pin(s))</h4>"
        + _pin_table(explanation, section)
        + _host_values(explanation, section)
        + _cpu_kernels(section)
        + _graphs(explanation, section, budget)
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
        + _fixes(explanation)
        + _totals(explanation)
        + _native(explanation)
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
        f"<style>{_REPORT_DARK}</style></head><body>{card(explanation)}</body></html>\n"
    )
