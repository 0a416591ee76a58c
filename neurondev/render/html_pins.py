"""The card's view of what the trace on CPU found, per graph: the pins grouped by line with what to write instead,
every pin, the host values and CPU kernels; and the fixes in the user's code, each a small verified diff."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neurondev.render.card_style import escape as _e
from neurondev.render.card_style import where_or_dash
from neurondev.render.fix_words import CPU_KERNEL_FIX, LIBRARY_NOTE, host_value_fix, short_fix
from neurondev.render.sentences import (
    why_text,
)
from neurondev.render.text import host_values_text
from neurondev.trace.source import is_user_file

if TYPE_CHECKING:
    from neurondev.fx.pins import DevicePin
    from neurondev.report.fixes.records import Fix
    from neurondev.report.model import ExplanationData, Section

__all__ = ["cpu_kernels_html", "fix_block", "fixes_html", "host_values_html", "pin_table"]


def pin_table(explanation: ExplanationData, section: Section) -> str:
    """One row per source line and advice (with a count), the full list of pins behind a disclosure;
    the backend advice for library code said once, under the table."""
    if not section.pins:
        return '<p class="nd-good">No device pin in this graph: nothing to rewrite.</p>'
    groups: dict[tuple[str, str, str, str], list[DevicePin]] = {}
    for pin in section.pins:
        groups.setdefault((where_or_dash(pin.source), pin.function, _role(pin), _instead(explanation, pin)), []).append(pin)
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


def fixes_html(explanation: ExplanationData) -> str:
    """Per statement of the user's code: a small diff (as written over fixed), its line and verdict beside it."""
    if not explanation.fixes:
        return ""
    verified = sum(fix.verified for fix in explanation.fixes)
    blocks = "".join(fix_block(fix) for fix in explanation.fixes)
    hint = " <code>explanation.patch()</code> is the diff of the verified ones." if verified else ""
    return (
        f"<h4>Fixes in your code ({verified} of {len(explanation.fixes)} verified)</h4>{blocks}"
        '<p class="nd-note">Verified: every check ran and held: the fixed code, traced again with the same inputs, has no pin on '
        "the line and no new one, makes values of the same dtypes and shapes, gives the same outputs on CPU, and runs on XLA "
        f"under torch.compile with its statements traced as on CPU.{hint}</p>"
    )


def fix_block(fix: Fix) -> str:
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
        f"<td>{_e(pin.location)}</td><td>{_e(_role(pin))}</td><td>{_e(where_or_dash(pin.source))}</td></tr>"
        for pin in pins
    )
    head = "<tr><th>node</th><th>function</th><th>device</th><th>location</th><th>kind</th><th>line</th></tr>"
    return f'<details class="nd-all-pins"><summary>Every pin ({len(pins)})</summary><table>{head}{rows}</table></details>'


def host_values_html(explanation: ExplanationData, section: Section) -> str:
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


def cpu_kernels_html(section: Section) -> str:
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
