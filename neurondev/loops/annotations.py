"""neurondev's events in the user's own torch.profiler trace: while a profiler records, each dynamo compile a watch
sees is a ``record_function`` range named with its function and line, and the watched block is one range."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["BlockRange", "profiler_range"]


def _profiling() -> bool:
    from torch.autograd.profiler import _is_profiler_enabled

    return bool(_is_profiler_enabled)


@contextlib.contextmanager
def profiler_range(name: Callable[[], str]) -> Iterator[None]:
    """A ``record_function`` range named ``name()`` around the block while a profiler records; nothing otherwise (the
    name is not even made)."""
    if not _profiling():
        yield
        return
    from torch.autograd.profiler import record_function

    with record_function(name()):
        yield


class BlockRange:
    """The watched block as one range of the profiler's trace, opened at ``start`` and closed at ``stop`` (on the
    thread that opened it), when a profiler was recording at its start."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._range: Any = None

    def start(self) -> None:
        if _profiling():
            from torch.autograd.profiler import record_function

            self._range = record_function(self.name)
            self._range.__enter__()

    def stop(self) -> None:
        if self._range is not None:
            self._range.__exit__(None, None, None)
            self._range = None
