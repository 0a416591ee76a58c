"""What a capture did that a user should know, as a kind and its facts (``render.sentences`` says it)."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["CAPTURE_NOTE_KINDS", "CaptureNote"]

CAPTURE_NOTE_KINDS = (
    "meta",  # traced on the meta device: shapes without values
    "already compiled",  # name, original: a torch.compile'd function; its original was traced
    "not a dense input",  # no graph: an input is sparse (or another layout) and dynamo does not trace it
    "no tensor op",  # no graph: nothing dynamo could put in one
    "dynamic marks kept",  # path, dims: the user's mark_dynamic carried over to the traced copy
    "arguments copied apart",  # error: the arguments could not be deep-copied together
    "exported",  # an ExportedProgram: its graph as exported
)


@dataclasses.dataclass(frozen=True)
class CaptureNote:
    """``kind`` (``CAPTURE_NOTE_KINDS``) and its facts: ``name`` and ``original`` (an already compiled function
    and what was traced instead), ``path`` and ``dims`` (an input and its dimensions marked dynamic), ``error``
    (why the arguments could not be copied together: the exception's type and message)."""

    kind: str
    name: str | None = None
    original: str | None = None
    path: str | None = None
    dims: tuple[int, ...] = ()
    error: str | None = None

    @property
    def no_graph(self) -> bool:
        """The note says why no graph was recorded."""
        return self.kind in ("not a dense input", "no tensor op")

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "dims": list(self.dims)}
