"""Fix: one statement of the user's code, what to write instead, and whether tracing the fixed code proved it."""

from __future__ import annotations

import dataclasses
from typing import Any

from neurondev.trace.source import Located, SourceLine

__all__ = ["Fix"]


@dataclasses.dataclass(frozen=True)
class Fix(Located):
    """The fix of one statement: ``before`` as written, ``after`` fixed (None: no spelling keeps the
    device symbolic, see ``advice``), the pins it removes and leaves (node names), and whether it was
    verified: the fixed code traced again has no pin on the line and no new pin, ops equal to a trace
    on XLA (when there is an XLA device) and the same outputs on CPU. ``why`` says what was checked,
    or what failed. ``first``/``last``: the statement's lines in the file.
    """

    source: SourceLine
    first: int
    last: int
    before: str
    after: str | None
    advice: str
    removes: tuple[str, ...] = ()
    left: tuple[str, ...] = ()
    verified: bool = False
    why: str = ""

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
            "why": self.why,
        }
