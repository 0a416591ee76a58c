"""A verified fix in words: the statement before and after, what verifying it checked or found, and why it is
spelled so (or has no spelling)."""

from __future__ import annotations

import textwrap

from neurondev.render.describe import describe
from neurondev.render.value_words import comparison_text
from neurondev.report.fixes.records import Fix, FixCheck, SpellingNote

__all__ = ["check_text", "fix_text", "note_text", "why_text"]


def _one_line(statement: str) -> str:
    return " ".join(part.strip() for part in textwrap.dedent(statement).splitlines())


@describe.register
def fix_text(fix: Fix) -> str:
    """A few lines for a terminal: where, the statement before and after, and the verdict."""
    head = f"  {fix.where}: {fix.status}"
    if fix.after is None:
        return f"{head}: {fix.advice}\n      {_one_line(fix.before)}"
    return f"{head}\n    - {_one_line(fix.before)}\n    + {_one_line(fix.after)}\n      {why_text(fix)}"


def why_text(fix: Fix) -> str:
    """What verifying a fix checked or found, then why it is spelled so (or why there is none)."""
    if fix.check.kind == "no spelling":
        return note_text(fix.note)
    said = check_text(fix.check)
    if fix.check.verified:
        note = note_text(fix.note)
        return f"{said}. {note[:1].upper()}{note[1:]}"
    return said


_CHECKED = "traced again: no pin left on the line, no new pin, values of the same dtypes and shapes, the same outputs on CPU"
_MAKE_ONCE = "a value built from Python data is uploaded whatever its spelling; make it once, outside the step (a buffer of the module), or compute it on the device"
_FLOAT64 = "with torch.set_default_dtype(torch.float64)"


def check_text(check: FixCheck) -> str:
    """A fix's verification in words: what was checked, or 'not verified: ' and the check that failed."""
    on = check.place or "the device"
    if check.kind == "verified":
        device = f"; on {check.place} under torch.compile the fixed code runs, its statements make the same ops, on the device"
        return _CHECKED + (device if check.place else "")
    if check.kind == "fails on device":
        written = "as written it ran" if check.was is None else f"as written it failed otherwise ({check.was})"
        failed = f"the fixed code fails on {on} under torch.compile: {check.error}; {written}"
    else:
        failed = {
            "given a capture": "explain was given a Capture; pass the function and its inputs to verify fixes",
            "traced on meta": "traced on the meta device, where there are no values to compare; explain a small configuration to verify",
            "no xla": "there is no XLA device here, so the checks on XLA could not run (the checks on CPU held)",
            "fixed code raised": f"the fixed code raised {check.error}",
            "outputs differ": f"the outputs on CPU differ: {comparison_text(check.comparison) if check.comparison else 'differ'}",
            "other default raised": f"{_FLOAT64} the original runs and the fixed code raises {check.error}",
            "other default differs": f"{_FLOAT64} the fixed statement makes {check.after} where the original makes {check.before}",
            "values differ": f"the fixed statement makes {check.after} where the original made {check.before}",
            "pins left": f"traced again, the fixed statement still has {check.count} pin(s) ({check.where})",
            "new pin": f"traced again, a new pin appears at {check.where}",
            "no program": f"your program does not compile on {on}, fixed or not ({check.error}), so nothing can be checked there",
            "ops differ": f"traced on {on} the fixed statement makes {check.after}, on CPU {check.before}",
            "host value": f"traced on {on} the fixed statement still makes {check.where} on the host",
            "uploads": (
                f"on {on} the fixed statement still copies host data to the device on every call ({check.count} copy(ies), "
                f"{check.bytes} bytes): {_MAKE_ONCE}"
            ),
        }.get(check.kind, check.kind)
    return f"not verified: {failed}"


_FROZEN = "device= is frozen while tracing"


def note_text(note: SpellingNote) -> str:
    """Why a statement is spelled as it is, or has no spelling, in words."""
    said = {
        "method follows tensor": f"a Tensor method follows {note.tensor}'s device when the graph runs; {_FROZEN}",
        "like follows tensor": f"without device=, {note.call} makes the value on {note.tensor}'s device when the graph runs; {_FROZEN}",
        "dtype kept": "keeps the dtype change and drops the device: right when the value is already on that tensor's device",
        "stays on device": f"the value stays on the device: call .{note.method}() on the compiled function's result if the host needs it",
        "no symbolic spelling": "no spelling keeps the device symbolic under dynamo: compile through the neurondev backend",
        "like names another tensor": f"device= names another tensor than the one {note.call} copies: drop it where that is the same tensor",
        "as_tensor of a tensor": "torch.as_tensor of a tensor is a move, not a constructor: no spelling keeps the device symbolic",
        "eye not square": "torch.eye(n, m) is not square: no Tensor method makes it",
        "keyword refused": f"{note.call}(..., {note.keyword}=...) has no Tensor.{note.method} form",
        "device names no tensor": f"the device does not name a tensor: write t.{note.method}(...) with the tensor whose device you mean",
        "self is the module": (
            f"self is the module, not a tensor: take the device of one of its parameters or buffers "
            f"(self.weight.{note.method}(...), or register the value as a buffer)"
        ),
        "does not parse": f"the statement does not parse alone ({note.error})",
        "file does not parse": f"the file does not parse ({note.error})",
        "no statement": "no statement found at the pin's line",
        "no libcst": "no fixed line: libcst is not installed (pip install libcst)",
    }
    return said.get(note.kind, note.kind)
