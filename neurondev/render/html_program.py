"""The card's "Your program on the device" panel: the user's function under torch.compile, as written and with the
neurondev backend, side by side (XLA's figures, or a native device's copies, syncs and fallbacks with their lines)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from neurondev.render.card_style import escape as _e
from neurondev.render.run_words import lines_text
from neurondev.render.sentences import skip_text, unseen_text, values_text
from neurondev.render.text import first_difference_text, specialised_text
from neurondev.trace.source import Located

if TYPE_CHECKING:
    from neurondev.report.model import ExplanationData
    from neurondev.runs.program_records import ProgramRun

__all__ = ["program_panel"]


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
