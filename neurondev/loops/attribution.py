"""When a long loop's device costs come to Python with their lines, and when the device only counts them: lines on the
first stretches between marks and on any stretch that is new (a compile began in it, or its costs differ from every
stretch seen with lines), counts only once the loop repeats itself."""

from __future__ import annotations

from typing import Any

__all__ = ["Attribution", "SETTLE"]

SETTLE = 5  # stretches in a row that repeat one already seen with lines: from then on the device only counts


class Attribution:
    """Switches ``accounting.attributing`` (a device's own log: ``native.logged``) at each mark of a watch."""

    def __init__(self, accounting: Any) -> None:
        self.accounting = accounting
        self._known: set[tuple[Any, ...]] = set()  # what stretches with lines cost (the mark that ended each, and counts)
        self._repeats = 0
        self._last: Any = None

    def compiling(self) -> None:
        """A compile began: what follows is new work, its costs on their lines."""
        self._repeats = 0
        self.accounting.attributing = True

    def marked(self, kind: str, function: str | None, counts: Any) -> None:
        """A mark ended a stretch that cost ``counts - the last reading``: lines on or off for the next one."""
        if counts is None:
            return
        cost = counts - self._last if self._last is not None else counts
        self._last = counts
        signature = (kind, function, cost.transfers_to_host, cost.transfers_to_device, cost.syncs, cost.fallbacks, cost.bytes_to_host)
        if self.accounting.attributing:
            self._known.add(signature)
            self._repeats = self._repeats + 1 if signature in self._known else 0
        elif signature not in self._known:
            self._repeats = 0
        self.accounting.attributing = self._repeats < SETTLE or signature not in self._known
