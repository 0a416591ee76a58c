"""The causes of the XLA programs a loop keeps compiling, as torch_xla's dump of its graphs tells them, made advice."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from neurondev.loops.causes import Advice
from neurondev.trace.source import is_program_file, source_line
from neurondev.xla.saved_graphs import Change

__all__ = ["named_advice", "with_named_causes"]

_ADVICE = {"number": "number in program", "size": "size in program"}


def named_advice(changes: Sequence[Change], recurring: Any = None) -> list[Advice]:
    """One Advice a line of the program's own code (yours, or a library's) where a value or a size made new programs."""
    return [
        Advice(
            _ADVICE[change.kind],
            value=" -> ".join(_shown(change.values)),
            source=source_line(change.file, change.line),
            recurring=recurring,
        )
        for change in changes
        if is_program_file(change.file)
    ]


def with_named_causes(record: Any, changes: Sequence[Change]) -> Any:
    """The record with the named causes as its XLA advice, in place of the programs only counted by their triggers."""
    recurring = next((advice.recurring for advice in (*record.advice, *record.tried) if advice.recurring is not None), None)
    named = named_advice(changes, recurring)
    if not named:
        return record
    kept = tuple(advice for advice in record.advice if advice.cause != "xla programs")
    return dataclasses.replace(record, advice=kept + tuple(named))


def _shown(values: Sequence[str]) -> list[str]:
    """The first three values and the last: 9 -> 10 -> 11 -> ... -> 15."""
    return list(values) if len(values) <= 4 else [*values[:3], "...", values[-1]]
