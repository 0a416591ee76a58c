"""Watch: every compile across a loop (or the calls of a watched function), why each happened, and what to write instead.

``with neurondev.watch() as w: loop()`` records while the block runs; the record is set when the
block exits (an exception inside still leaves the record, and propagates unchanged).
``w = neurondev.watch(fn)`` wraps a callable: each call is recorded, with a row in ``w.calls``.
Tables, the summary, the advice, the card and JSON are computed from the record when asked.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from neurondev._paths import output_file
from neurondev._views import view
from neurondev.errors import InvalidOptionError, NestedWatchError, NotCallableError
from neurondev.loops.causes import Advice, Cause, advice_for, cause_of
from neurondev.loops.recorder import CallRecord, CompileEvent, Recorder, active, settled, since, xla_counts
from neurondev.trace.source import display_name, short_location

__all__ = ["CALL_COLUMNS", "COMPILE_COLUMNS", "Compile", "Watch", "watch"]

COMPILE_COLUMNS = (
    "function",
    "file",
    "line",
    "index",
    "kind",
    "reason",
    "value",
    "before",
    "after",
    "xla_compiles",
    "read_at",
    "call",
    "graphs",
)
CALL_COLUMNS = ("call", "compiled", "graphs", "xla_compiles", "executions", "transfers_to_host", "transfers_to_device", "seconds")
_NO_XLA = "torch_xla was not loaded by the watched code: XLA figures are empty"


@dataclasses.dataclass(frozen=True)
class Compile:
    """One compile, read: the event, its kind, its cause, and the XLA programs compiled from it until the next compile."""

    event: CompileEvent
    kind: str
    cause: Cause
    xla_compiles: int | None

    def row(self) -> dict[str, Any]:
        event, cause = self.event, self.cause
        return {
            "function": event.function,
            "file": event.file,
            "line": event.line,
            "index": event.index,
            "kind": self.kind,
            "reason": cause.words,
            "value": cause.value,
            "before": cause.before,
            "after": cause.after,
            "xla_compiles": self.xla_compiles,
            "read_at": cause.where if cause.source is not None else None,
            "call": event.call,
            "graphs": event.graphs,
        }


class Watch:
    """A watch over a loop, or over the calls of a function (``neurondev.watch(fn)``); see the module docstring."""

    _fn: Callable[..., Any] | None
    _recorder: Recorder
    _state: str
    name: str

    def __init__(self, fn: Callable[..., Any] | None = None) -> None:
        if fn is not None and not callable(fn):
            raise NotCallableError(
                f"watch takes the function to watch, or nothing (with neurondev.watch(): ...), got {type(fn).__name__}; "
                "pass the function itself: neurondev.watch(step), not neurondev.watch(step(x))"
            )
        object.__setattr__(self, "_fn", fn)
        object.__setattr__(self, "_recorder", Recorder())
        object.__setattr__(self, "_state", "new")
        object.__setattr__(self, "name", _name(fn))
        if fn is not None:
            object.__setattr__(self, "__wrapped__", fn)
            object.__setattr__(self, "__doc__", getattr(fn, "__doc__", None))

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"a Watch is set by what it records; {name!r} cannot be assigned")

    # --- recording ------------------------------------------------------------------------------
    def __enter__(self) -> Watch:
        if self._fn is not None:
            raise InvalidOptionError("a watch of a function records its calls: call it (w(x)); use neurondev.watch() for a block")
        if self._state != "new":
            raise InvalidOptionError("this watch has recorded its block already: start another with neurondev.watch()")
        self._start()
        return self

    def __exit__(self, *exc: object) -> None:
        settled()  # the block's executions counted as the block's (it waits, and changes no value)
        self._recorder.stop()
        object.__setattr__(self, "_state", "done")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fn is None:
            raise NotCallableError("neurondev.watch() is a context manager: write `with neurondev.watch() as w:` around the loop")
        recorder = self._recorder
        number = len(recorder.calls) + 1
        self._start()
        recorder.call = number
        events, start, before = len(recorder.events), time.perf_counter(), xla_counts()
        try:
            return self._fn(*args, **kwargs)
        finally:
            settled()  # this call's executions counted as this call's (it waits, and changes no value)
            seconds, after = time.perf_counter() - start, xla_counts()
            made = [event for event in recorder.events[events:] if event.limit is None]  # a refusal at the limit compiles nothing
            xla = since(before, after)
            recorder.calls.append(CallRecord(number, len(made), sum(e.graphs for e in made), xla, seconds))
            recorder.call = None
            recorder.stop()
            object.__setattr__(self, "_state", "done")

    def _start(self) -> None:
        if active() is not None:
            raise NestedWatchError("a watch is already on: watches do not nest (the outer one sees every compile); remove the inner one")
        settled()  # work launched before the block (or the call) finishes, and is counted, before it
        self._recorder.start()
        object.__setattr__(self, "_state", "recording")

    # --- what was recorded ----------------------------------------------------------------------
    @property
    def compiles_read(self) -> tuple[Compile, ...]:
        """Every compile with its kind, cause and XLA compiles, in order."""
        recorder = self._recorder
        events = recorder.events
        read = []
        for i, event in enumerate(events):
            cause = cause_of(event.reason, index=event.index, limit=event.limit, now=event.now, frame_file=event.file)
            kind = (
                "recompile limit reached"
                if event.limit is not None
                else "failed"
                if event.failed
                else "first"
                if not event.index
                else "recompile"
            )
            later = events[i + 1].xla if i + 1 < len(events) else recorder.xla_at_stop
            read.append(Compile(event, kind, cause, _compiles_between(event.xla, later)))
        return tuple(read)

    @property
    def compiles(self) -> Any:
        """A pandas DataFrame, one row per compile (``COMPILE_COLUMNS``)."""
        import pandas

        return pandas.DataFrame([c.row() for c in self.compiles_read], columns=list(COMPILE_COLUMNS))

    @property
    def calls(self) -> Any:
        """A pandas DataFrame, one row per call of the watched function (``CALL_COLUMNS``); empty for a block."""
        import pandas

        return pandas.DataFrame([_call_row(record) for record in self._recorder.calls], columns=list(CALL_COLUMNS))

    @property
    def steady_state(self) -> int | str:
        """The first call after which nothing compiled (0: nothing compiled at all), or "never" (the last
        call compiled, or dynamo gave up at its recompile limit). For a block: the number of compiles
        after which compiled code kept running without another, or "never"."""
        read = self.compiles_read
        if any(c.event.limit is not None for c in read):
            return "never"
        calls = self._recorder.calls
        if calls:
            compiling = [record.call for record in calls if record.compiles]
            return 0 if not compiling else "never" if compiling[-1] == calls[-1].call else compiling[-1]
        if not read:
            return 0
        return len(read) if self._recorder.hits > read[-1].event.hits_before else "never"

    @property
    def reached_steady_state(self) -> bool:
        return self.steady_state != "never"

    @property
    def advice(self) -> tuple[Advice, ...]:
        """What to write instead, once per cause (with the line dynamo names for it); advice, not verified."""
        read = self.compiles_read
        sizes = _sizes_by_value(tuple(c.event for c in read))
        said: dict[tuple[str, str | None], Advice] = {}
        for compile_ in read:
            cause = compile_.cause
            key = (cause.kind, cause.value if cause.kind != "recompile limit" else compile_.event.function)
            text = advice_for(cause, sizes.get(cause.value or "", []))
            if text is not None and key not in said:
                said[key] = Advice(cause.kind, f"{compile_.event.function}: {text}", cause.source)
        return tuple(said.values())

    @property
    def xla_note(self) -> str | None:
        """Why the XLA figures are empty, when they are."""
        recorder = self._recorder
        return _NO_XLA if recorder.xla_at_stop is None else None

    @property
    def seconds(self) -> float:
        recorder = self._recorder
        return max(recorder.stopped_at - recorder.started_at, 0.0) if self._fn is None else sum(r.seconds for r in recorder.calls)

    @property
    def state(self) -> str:
        """'new', 'recording' or 'done'."""
        return str(self._state)

    # --- views ----------------------------------------------------------------------------------
    def summary(self) -> str:
        return str(view("watch_summary")(self))

    def __repr__(self) -> str:
        read = self.compiles_read
        calls = f", {len(self._recorder.calls)} call(s)" if self._fn is not None else ""
        return (
            f"<Watch{' of ' + self.name if self._fn is not None else ''}: {len(read)} compile(s){calls}, steady state: {self.steady_state}>"
        )

    def _repr_html_(self) -> str:
        return str(view("watch_card")(self))

    def save_html(self, path: str | Path) -> Path:
        """Write the card as one self-contained page (inline SVG, no script)."""
        path = output_file(path, what="save_html's path", example="watch.html")
        path.write_text(view("watch_page")(self), encoding="utf-8")
        return path

    def to_dict(self) -> dict[str, Any]:
        """Plain data: ``compiles`` and ``calls`` (rows as the tables have them), ``steady_state``,
        ``advice`` ([{cause, text, file, line, code, where}]), ``summary``, ``xla_note``, ``seconds``."""
        return view("plain")(
            {
                "compiles": [c.row() for c in self.compiles_read],
                "calls": [_call_row(record) for record in self._recorder.calls],
                "steady_state": self.steady_state,
                "reached_steady_state": self.reached_steady_state,
                "advice": [a.to_dict() for a in self.advice],
                "summary": self.summary(),
                "xla_note": self.xla_note,
                "seconds": self.seconds,
            }
        )

    def to_json(self, **options: Any) -> str:
        return json.dumps(self.to_dict(), indent=options.pop("indent", 2), allow_nan=False, **options)


def watch(fn: Callable[..., Any] | None = None) -> Watch:
    """``with neurondev.watch() as w:`` around a loop, or ``w = neurondev.watch(fn)`` around a function;
    see ``Watch``. The loop runs exactly as without it (no dynamo reset, no config change)."""
    return Watch(fn)


def _name(fn: Any) -> str:
    return "the block" if fn is None else display_name(fn)


def _compiles_between(before: Any, after: Any) -> int | None:
    delta = since(before, after)
    return None if delta is None else delta.compilations


def _call_row(record: CallRecord) -> dict[str, Any]:
    delta = record.xla
    figures = {
        "xla_compiles": delta.compilations if delta else None,
        "executions": delta.executions if delta else None,
        "transfers_to_host": delta.transfers_to_host if delta else None,
        "transfers_to_device": delta.transfers_to_device if delta else None,
    }
    return {"call": record.call, "compiled": record.compiles, "graphs": record.graphs, **figures, "seconds": record.seconds}


def _sizes_by_value(events: tuple[CompileEvent, ...] | list[CompileEvent]) -> dict[str, list[int]]:
    """The sizes each changing tensor took across the compiles (what buckets must cover)."""
    sizes: dict[str, list[int]] = {}
    for event in events:
        cause = cause_of(event.reason, index=event.index, limit=event.limit, now=event.now, frame_file=event.file)
        if cause.kind in ("changing size", "cache growth") and cause.value and cause.before and cause.after:
            sizes.setdefault(cause.value, []).extend([int(cause.before), int(cause.after)])
    return sizes


def location(event: CompileEvent) -> str:
    return short_location(event.file, event.line)
