"""The worker processes a watched script starts with torch.multiprocessing (spawn, start_processes): heard, not watched."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

from neurondev.loops.frames import user_call
from neurondev.trace.source import SourceLine, source_line

__all__ = ["Workers", "hear_workers"]


@dataclasses.dataclass(frozen=True)
class Workers:
    """``count`` worker processes started (``method``: 'spawn', 'fork', ...) to run ``function``, at the user's line:
    what they compile happens in processes the watch does not see."""

    count: int
    function: str
    method: str
    source: SourceLine | None


def hear_workers(heard: Callable[[Workers], None]) -> Callable[[], None]:
    """Call ``heard`` each time torch.multiprocessing starts workers (``spawn`` calls ``start_processes``); returns
    what puts torch.multiprocessing back as it was."""
    import inspect

    import torch.multiprocessing

    module = sys.modules["torch.multiprocessing.spawn"]
    original = module.start_processes
    signature = inspect.signature(original)  # (fn, args, nprocs, join, daemon, start_method[, numa_options])

    def start_processes(fn: Any, *args: Any, **kwargs: Any) -> Any:
        called = signature.bind(fn, *args, **kwargs)
        called.apply_defaults()
        file, line = user_call(sys._getframe(1))
        where = source_line(file, line) if file is not None and line is not None else None
        name = getattr(fn, "__qualname__", type(fn).__name__)
        heard(Workers(int(called.arguments["nprocs"]), name, str(called.arguments["start_method"]), where))
        return original(fn, *args, **kwargs)

    def put(function: Any) -> None:
        for owner in (module, torch.multiprocessing):  # spawn's own module reads it, the package re-exports it
            setattr(owner, "start_processes", function)  # noqa: B010

    put(start_processes)

    def put_back() -> None:
        put(original)

    return put_back
