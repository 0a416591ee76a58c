"""The public Watch (the recorder's frozen data from ``loops``, its displays from ``render``) and ``watch``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from neurondev.render.display import WatchDisplay

__all__ = ["Watch", "watch"]


class Watch(WatchDisplay):
    """A watch over a loop, or over the calls of a function: the data (``WatchData``: ``record``, ``compiles``,
    ``steps``, ``calls``, ``steady_state``, ``advice``) and the displays (``WatchDisplay``: the card, ``summary()``,
    ``save_html()``, ``to_dict()``/``to_json()``)."""


def watch(fn: Callable[..., Any] | None = None, *, sync_each_step: bool = False, xla_analysis: bool = False) -> Watch:
    """``with neurondev.watch() as w:`` around a loop, or ``w = neurondev.watch(fn)`` around a function; see ``Watch``.
    The loop runs exactly as without it (no dynamo reset, no config or logging change). ``sync_each_step``
    applies the sync advice (``torch_xla.sync()`` at the end of each step) to check it; ``xla_analysis``
    turns torch_xla's own analysis of each compile on, when this process has compiled nothing on XLA yet
    (it is read once per process; ``neurondev watch script.py`` always can)."""
    return Watch(fn, sync_each_step=sync_each_step, xla_analysis=xla_analysis)
