"""``describe(record)``: the sentence neurondev prints for one of its records, one function per record type,
registered by the family of sentences that says it (``render/sentences.py`` loads every family: import it from there)."""

from __future__ import annotations

import functools
from typing import Any

from neurondev.errors import InvalidOptionError

__all__ = ["at_line", "describe"]


@functools.singledispatch
def describe(record: Any) -> str:
    """The sentence neurondev prints for ``record``: a run, a program run or its failure, a comparison
    of values, a verdict, a fix, a host value, a check's finding, a trace comparison or a difference."""
    kinds = ", ".join(sorted(cls.__name__ for cls in describe.registry if cls is not object))
    raise InvalidOptionError(
        f"neurondev.describe takes one of neurondev's records ({kinds}), not {type(record).__name__}; "
        "an Explanation or a Watch says its own: ex.summary()"
    )


def at_line(record: Any) -> str:
    """' at model.py:12' for a record with a source line, '' for one without."""
    return f" at {record.where}" if getattr(record, "source", None) is not None else ""
