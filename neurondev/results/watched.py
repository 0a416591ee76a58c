"""The public Watch (the recorder's frozen data from ``loops``, its displays from ``render``) and ``watch``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neurondev.errors import InvalidOptionError
from neurondev.render.display import WatchDisplay

if TYPE_CHECKING:
    from neurondev.results.jobs import Ranks

__all__ = ["Watch", "watch"]


class Watch(WatchDisplay):
    """A watch over a loop, or over the calls of a function: the data (``WatchData``: ``record``, ``compiles``,
    ``steps``, ``calls``, ``steady_state``, ``advice``) and the displays (``WatchDisplay``: the card, ``summary()``,
    ``save_html()``, ``to_dict()``/``to_json()``)."""

    def across_ranks(self, folder: str | os.PathLike[str] = ".", *, timeout: float = 600.0) -> Ranks | None:
        """Under torchrun, every rank calls it after its watch: the ranks' records gathered to rank 0, which gets
        the job's ``Ranks`` (each rank's watch, where they diverge, a card); the other ranks get None. The records
        travel through the job's process group while it is up, else through files in ``folder`` (removed after).
        Outside a torchrun job it is a job of one rank."""
        from neurondev.render.json import plain, watch_dict
        from neurondev.results.jobs import across_ranks

        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise InvalidOptionError(f"timeout is a number of seconds above 0, got {timeout!r}")
        if not isinstance(folder, (str, os.PathLike)) or not Path(folder).is_dir():
            raise InvalidOptionError(
                f"folder is an existing folder every rank can write to (the ranks' records meet there), got {folder!r}"
            )
        return across_ranks(plain(watch_dict(self.record)), Path(folder), timeout=float(timeout))


def watch(fn: Callable[..., Any] | None = None, *, sync_each_step: bool = False, xla_analysis: bool = False) -> Watch:
    """``with neurondev.watch() as w:`` around a loop, or ``w = neurondev.watch(fn)`` around a function; see ``Watch``.
    The loop runs exactly as without it (no dynamo reset, no config or logging change). ``sync_each_step``
    applies the sync advice (``torch_xla.sync()`` at the end of each step) to check it; ``xla_analysis``
    turns torch_xla's own analysis of each compile on, when this process has compiled nothing on XLA yet
    (it is read once per process; ``neurondev watch script.py`` always can)."""
    return Watch(fn, sync_each_step=sync_each_step, xla_analysis=xla_analysis)
