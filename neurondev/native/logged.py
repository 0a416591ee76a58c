"""Accounting from a record kept in C++, paying only at events: the copies, syncs and fallbacks are counted in C++, and
Python is called at each one for its line; no Python runs at any other op.

The record is the dispatcher's observer (``native.observer``: every device alike), or a device's own log where it keeps
one (the host test device's C++ records each copy across devices, each fallback with what it copied, each host read: the
reference the observer is tested against). Either names the op the program called (the outermost on the thread:
``aten::embedding`` for the ``aten::index_select`` that fell back beneath it); while a compiled graph runs, the graph's
node names it (``in_graph``). While the accounting ``attributes`` (the default), each event comes to Python with the
graph node, module and line it happened at; while it only counts, the counts are the record's and no event reaches
Python (a long loop's steady steps). Nothing is a dispatch mode, so compiled code runs under it as it does without it,
on every torch, and no op runs otherwise than it would.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from typing import Any

from neurondev.native.events import ACTIVE, DeviceEvent, Whereabouts, caller
from neurondev.runs.counts import Counts

__all__ = ["LoggedAccounting"]

_KIND = {("copy", "to_host"): "copy to host", ("copy", "to_device"): "copy to device", ("sync", ""): "sync", ("fallback", ""): "fallback"}


class LoggedAccounting(Whereabouts):
    """Counts what the program does on device type ``device_type``, from ``log`` (the observer, or the device's extension:
    ``observe``, ``attribute``, ``observed_totals``), while on (``with``); ``events`` lists each event it attributed,
    ``counts()`` reads the cumulative totals (subtract two readings), ``attributing`` switches attribution."""

    def __init__(self, device_type: str, log: Any, *, modules: dict[int, str] | None = None) -> None:
        super().__init__(modules)
        self.device_type, self.log = device_type, log
        self._events: list[DeviceEvent] = []
        self._seen: list[tuple[Any, ...]] = []  # events as the device told them, made DeviceEvents when read
        self._lock = threading.Lock()
        self._banked = Counts()  # what earlier sessions counted
        self._base: Counts | None = None  # the device's totals when this session began
        self._attributing = True

    # --- on and off -----------------------------------------------------------------------------
    def __enter__(self) -> LoggedAccounting:
        if self._outer() is None:
            self.log.observe(functools.partial(_tell, self.log))
        ACTIVE.append(self)
        self.log.attribute(self._attributing)
        self._base = _totals(self.log)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._banked = self.counts()
        self._base = None
        ACTIVE.remove(self)
        outer = self._outer()
        if outer is not None:
            self.log.attribute(outer.attributing)
        else:
            self.log.observe(None)

    def _outer(self) -> LoggedAccounting | None:
        """The innermost accounting on that reads the same record (a watch's, around a run's)."""
        return next((a for a in reversed(ACTIVE) if isinstance(a, LoggedAccounting) and a.log is self.log and a is not self), None)

    @property
    def attributing(self) -> bool:
        """Whether each event comes to Python with its line (True), or is only counted by the device (False)."""
        return self._attributing

    @attributing.setter
    def attributing(self, on: bool) -> None:
        self._attributing = bool(on)
        if self._base is not None:
            self.log.attribute(self._attributing)

    @property
    def events(self) -> list[DeviceEvent]:
        """Each event attributed so far, in order."""
        with self._lock:
            if self._seen:
                self._events.extend(DeviceEvent(*seen) for seen in self._seen)
                self._seen.clear()
            return self._events

    def counts(self) -> Counts:
        if self._base is None:
            return self._banked
        return _sum(self._banked, _totals(self.log) - self._base)

    @contextlib.contextmanager
    def in_graph(self) -> Iterator[None]:
        """A compiled graph runs inside: the device follows no op meanwhile (each event's node names the op the
        program called), which saves a callback at every op."""
        self.log.graph_running(True)
        try:
            yield
        finally:
            self.log.graph_running(False)

    # --- one event ------------------------------------------------------------------------------
    def seen(self, kind: str, op: str, direction: str, nbytes: int, called: str, collective: str) -> None:
        """The device's call at one event: its line from the Python stack of the thread that ran it."""
        name = _KIND.get((kind, direction if kind == "copy" else ""))
        if name is None:
            return  # a copy on the device: no cost to the host
        node, module, source, node_calls = self.where_called(caller(2))
        called = node_calls or called  # in a compiled graph the device follows no op (``in_graph``): its node says it
        with self._lock:  # a tuple now, a DeviceEvent when read: an event costs the program less
            self._seen.append((name, op or called, nbytes, node, module, source, called, collective or None))


def _tell(log: Any, kind: str, op: str, direction: str, nbytes: int, called: str, collective: str) -> None:
    """A record's callback: the event to the innermost accounting on that reads ``log``."""
    for accounting in reversed(ACTIVE):
        if isinstance(accounting, LoggedAccounting) and accounting.log is log:
            accounting.seen(kind, op, direction, nbytes, called, collective)
            return


def _totals(log: Any) -> Counts:
    to_host, to_device, bytes_to_host, bytes_to_device, syncs, collective_copies, fallback_bytes, fallbacks = log.observed_totals()
    return Counts(
        transfers_to_host=to_host,
        transfers_to_device=to_device,
        fallbacks=tuple(fallbacks.items()),
        syncs=syncs,
        bytes_to_host=bytes_to_host,
        bytes_to_device=bytes_to_device,
        fallback_bytes=fallback_bytes,
        collective_copies=collective_copies,
    )


def _sum(first: Counts, second: Counts) -> Counts:
    """Two stretches of counts, added (``Counts`` subtracts; adding is subtracting a negation)."""
    fallbacks = dict(first.fallbacks)
    for op, calls in second.fallbacks:
        fallbacks[op] = fallbacks.get(op, 0) + calls
    return Counts(
        transfers_to_host=first.transfers_to_host + second.transfers_to_host,
        transfers_to_device=first.transfers_to_device + second.transfers_to_device,
        fallbacks=tuple(fallbacks.items()),
        syncs=first.syncs + second.syncs,
        bytes_to_host=first.bytes_to_host + second.bytes_to_host,
        bytes_to_device=first.bytes_to_device + second.bytes_to_device,
        fallback_bytes=first.fallback_bytes + second.fallback_bytes,
        collective_copies=first.collective_copies + second.collective_copies,
    )
