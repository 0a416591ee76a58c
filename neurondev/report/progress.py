"""Progress for long work: one tqdm.auto bar per stage (a widget in Jupyter, text in a terminal)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

__all__ = ["Stages"]


class Stages:
    """``with Stages(names) as s: s.start("trace"); ...; s.start("run before", total=3); s.advance()``.

    Each stage gets its own bar, closed when the next starts; ``quiet=True`` draws nothing. The
    bars go to stderr, like every tqdm bar, and never into a captured result. ``seconds`` holds
    the wall time each stage took; ``on_step`` is called at every step (a widget's own bar).
    """

    def __init__(self, names: Iterable[str], *, quiet: bool = False, name: str = "", on_step: Callable[[], None] | None = None) -> None:
        self.names = tuple(names)
        self.quiet = quiet
        self.name = name
        self.on_step = on_step
        self.seen: list[str] = []
        self.seconds: dict[str, float] = {}
        self._bar = None
        self._started: float | None = None

    def __enter__(self) -> Stages:
        return self

    def __exit__(self, *exc: object) -> None:
        self._close()

    def start(self, stage: str, *, total: int = 1) -> None:
        """Finish the current stage's bar and open one for ``stage`` (``total`` steps)."""
        self._close()
        self.seen.append(stage)
        self._started = time.perf_counter()
        if self.quiet:
            return
        from tqdm.auto import tqdm

        number = self.names.index(stage) + 1 if stage in self.names else len(self.seen)
        label = f"neurondev {self.name}: {stage} ({number}/{len(self.names)})"
        self._bar = tqdm(total=total, desc=label, leave=False, bar_format="{desc} {bar} {n_fmt}/{total_fmt}")

    def advance(self, steps: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(steps)
        if self.on_step is not None:
            self.on_step()

    def _close(self) -> None:
        if self._started is not None and self.seen:
            self.seconds[self.seen[-1]] = self.seconds.get(self.seen[-1], 0.0) + time.perf_counter() - self._started
            self._started = None
        if self._bar is not None:
            self._bar.update(self._bar.total - self._bar.n)
            self._bar.close()
            self._bar = None
