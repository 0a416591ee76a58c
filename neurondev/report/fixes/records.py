"""Fix: one statement of the user's code, what to write instead, and whether tracing the fixed code proved it."""

from __future__ import annotations

import dataclasses
from typing import Any

from neurondev.runs.values import Comparison
from neurondev.trace.source import Located, SourceLine

__all__ = ["CHECK_KINDS", "NOTE_KINDS", "NO_SPELLING", "Fix", "FixCheck", "SpellingNote"]


NOTE_KINDS = (
    "method follows tensor",  # torch.zeros(..., device=x.device) -> x.new_zeros(...): tensor, method
    "like follows tensor",  # torch.zeros_like(x, device=x.device) -> torch.zeros_like(x): call, tensor
    "dtype kept",  # .to(device, dtype) -> .to(dtype)
    "stays on device",  # x.cpu() inside the graph dropped: method
    "no symbolic spelling",  # nothing but the backend keeps the device symbolic under dynamo
    "like names another tensor",  # call
    "as_tensor of a tensor",
    "eye not square",
    "keyword refused",  # call, keyword, method
    "device names no tensor",  # method
    "self is the module",  # method
    "does not parse",  # the statement alone: error
    "file does not parse",  # error
    "no statement",  # no statement at the pin's line
    "no libcst",  # libcst is not installed
)


@dataclasses.dataclass(frozen=True)
class SpellingNote:
    """Why a statement is spelled as it is, or has no spelling: a kind of ``NOTE_KINDS`` and its facts
    (the call as written, the Tensor method, the tensor whose device it follows, the refused keyword,
    the parser's error). ``render.sentences.note_text`` says it in words."""

    kind: str
    call: str | None = None
    method: str | None = None
    tensor: str | None = None
    keyword: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {key: value for key, value in dataclasses.asdict(self).items() if value is not None}


NO_SPELLING = SpellingNote("no symbolic spelling")  # what a statement gets where no spelling keeps the device symbolic

CHECK_KINDS = (
    "verified",  # every check ran and held: place (None: no device run)
    "no spelling",  # nothing to check: the note says why
    "given a capture",  # explain got a Capture, not the function and inputs
    "traced on meta",  # no values to compare
    "no xla",  # the checks on CPU held, the device ones could not run
    "fixed code raised",  # error
    "outputs differ",  # comparison: what differs
    "other default raised",  # with float64 as the default dtype: error (its type)
    "other default differs",  # with float64 as the default dtype: before, after
    "values differ",  # before, after
    "pins left",  # count, where (the functions)
    "new pin",  # where
    "fails on device",  # place, error, was (None: as written it ran)
    "no program",  # place, error: the program compiles on the device neither fixed nor as written
    "ops differ",  # place, before (CPU ops), after (device ops)
    "host value",  # place, where
    "uploads",  # place, count, bytes
)


@dataclasses.dataclass(frozen=True)
class FixCheck:
    """What verifying a fix found: ``verified`` or the first check that failed (a kind of ``CHECK_KINDS``)
    with its facts: the device it ran on, an error, what the original and the fixed code make, a count,
    bytes, a location. ``render.sentences.check_text`` says it in words."""

    kind: str
    place: str | None = None
    error: str | None = None
    before: str | None = None
    after: str | None = None
    count: int | None = None
    bytes: int | None = None
    where: str | None = None
    was: str | None = None
    comparison: Comparison | None = None

    @property
    def verified(self) -> bool:
        return self.kind == "verified"

    def to_dict(self) -> dict[str, Any]:
        facts = {key: value for key, value in dataclasses.asdict(self).items() if value is not None}
        return {**facts, **({"comparison": self.comparison.to_dict()} if self.comparison is not None else {})}


@dataclasses.dataclass(frozen=True)
class Fix(Located):
    """The fix of one statement: ``before`` as written, ``after`` fixed (None: no spelling keeps the
    device symbolic, see ``advice``), the pins it removes and leaves (node names), and whether it was
    verified: the fixed code traced again has no pin on the line and no new pin, ops equal to a trace
    on XLA (when there is an XLA device) and the same outputs on CPU. ``check`` is what verification
    found, ``note`` why the statement is spelled so (or has no spelling); ``render.sentences.why_text``
    says both in words. ``first``/``last``: the statement's lines in the file.
    """

    source: SourceLine
    first: int
    last: int
    before: str
    after: str | None
    advice: str
    removes: tuple[str, ...] = ()
    left: tuple[str, ...] = ()
    check: FixCheck = FixCheck("no spelling")
    note: SpellingNote = SpellingNote("no symbolic spelling")

    @property
    def verified(self) -> bool:
        return self.check.verified

    @property
    def in_notebook_cell(self) -> bool:
        return self.source.in_notebook_cell

    @property
    def in_pseudo_file(self) -> bool:
        """In a notebook cell or an IPython terminal's input: shown, never in a patch."""
        return self.source.in_pseudo_file

    @property
    def status(self) -> str:
        """'verified', 'not verified' (a spelling that failed a check) or 'no spelling'."""
        if self.after is None:
            return "no spelling"
        return "verified" if self.verified else "not verified"

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.source_dict(),
            "first": self.first,
            "last": self.last,
            "before": self.before,
            "after": self.after,
            "advice": self.advice,
            "removes": list(self.removes),
            "left": list(self.left),
            "status": self.status,
            "verified": self.verified,
            "check": self.check.to_dict(),
            "note": self.note.to_dict(),
        }
