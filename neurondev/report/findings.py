"""Finding: one thing neurondev.check reports, with its line, what it costs and what to write instead."""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Iterable
from typing import Any

from neurondev.trace.source import Located, SourceLine

__all__ = ["Finding"]


@dataclasses.dataclass(frozen=True)
class Finding(Located):
    """One thing check reports: a device pin, or a line traced differently on XLA."""

    kind: str  # "pin", "host value", "cpu kernel", "program", "device-specialised" or "fallback"
    node: str
    function: str
    source: SourceLine | None
    detail: str
    fix: str

    def allowed_by(self, rules: Iterable[str]) -> bool:
        """Allowed by a node name, a file:line (file name or path), or a glob over those, the function or code."""
        names = {self.node, self.function, self.where, self.code or ""}
        if self.source is not None:
            names.add(f"{self.source.file}:{self.source.line}")
        return any(rule in names or any(fnmatch.fnmatch(name, rule) for name in names) for rule in rules)

    def to_dict(self) -> dict[str, Any]:
        source = self.source.to_dict() if self.source else {"file": None, "line": None, "code": None, "where": self.where}
        return {"kind": self.kind, "node": self.node, "function": self.function, **source, "detail": self.detail, "fix": self.fix}
