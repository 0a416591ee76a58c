"""A watched loop as a Chrome trace-event file (what Perfetto, chrome://tracing, TensorBoard's trace viewer and Holistic
Trace Analysis read): the steps, each dynamo compile, and torch_xla's timed compiles, executions and transfers, each a
slice named with its rule, cause and line, at the moment the runtime's clock gave it."""

from __future__ import annotations

import os
from typing import Any

from neurondev.loops.costs import steps_of, timed_programs
from neurondev.trace.source import short_location

__all__ = ["TRACKS", "trace_events"]

TRACKS = {"steps": 1, "dynamo": 2, "XLA": 3}


def trace_events(record: Any, *, pid: int | None = None, process: str | None = None) -> dict[str, Any]:
    """The trace of ``record`` (a WatchRecord) as trace-event JSON: ``pid`` (a rank under torchrun; this process by
    default) names its tracks ``process``."""
    pid = os.getpid() if pid is None else pid
    events: list[dict[str, Any]] = [_meta(pid, 0, "process_name", process or f"neurondev watch: {record.name}")]
    events += [_meta(pid, tid, "thread_name", name) for name, tid in TRACKS.items()]
    events += _steps(record, pid) + _dynamo(record, pid) + _xla(record, pid)
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": {"producer": "neurondev watch", "watched": record.name}}


def _meta(pid: int, tid: int, kind: str, name: str) -> dict[str, Any]:
    return {"ph": "M", "pid": pid, "tid": tid, "name": kind, "args": {"name": name}}


def _slice(pid: int, track: str, name: str, start: float, seconds: float, args: dict[str, Any]) -> dict[str, Any]:
    """A complete event ('X'): ``start`` in seconds since the epoch, ``seconds`` long (trace-event times are in µs)."""
    return {"ph": "X", "cat": "neurondev", "pid": pid, "tid": TRACKS[track], "name": name, "ts": round(start * 1e6, 3),
            "dur": round(seconds * 1e6, 3), "args": args}  # fmt: skip


def _steps(record: Any, pid: int) -> list[dict[str, Any]]:
    found = []
    for step in (*record.outside, *record.steps):
        if step.started is None:
            continue
        name = "before the loop" if step.number == 0 else "after the loop" if step.number < 0 else f"step {step.number}"
        args = {"step": step.number, "function": step.function, "dynamo_compiles": step.dynamo_compiles, "xla_compiles": step.xla_compiles}
        found.append(_slice(pid, "steps", name, step.started + record.epoch, step.seconds, args))
    return found


def _dynamo(record: Any, pid: int) -> list[dict[str, Any]]:
    found = []
    for compile_ in record.compiles:
        event, row = compile_.event, compile_.row()
        if event.seconds is None or event.started is None:
            continue
        where = short_location(row["file"], row["line"])
        args = {"rule": row["rule"], "line": where, "cause": row["cause"], "kind": compile_.kind, "function": row["function"],
                "value": row["value"], "before": row["before"], "after": row["after"], "step": row["step"]}  # fmt: skip
        found.append(_slice(pid, "dynamo", f"{row['rule']} dynamo {compile_.kind} at {where}", event.started, event.seconds, args))
    return found


def _xla(record: Any, pid: int) -> list[dict[str, Any]]:
    """torch_xla's samples (each timed when it ended): compiles named by their program where one pairs, the rest by kind."""
    named = {}
    for step in (*record.outside, *record.steps):
        for when, seconds, program in timed_programs(record, step):
            if program is not None:
                named[(when, seconds)] = (program, program.where if program.source is not None else steps_of(step))
    found = []
    for what, when, seconds in record.xla_samples:
        program, where = named.get((when, seconds), (None, "")) if what == "XLA compile" else (None, "")
        if program is not None:
            name = f"{program.rule} XLA compile ({program.kind}) at {where}"
            args = {"rule": program.rule, "line": where, "cause": program.cause, "kind": program.kind}
        else:
            name, args = what, {}
        found.append(_slice(pid, "XLA", name, when - seconds, seconds, {**args, "seconds": seconds}))
    return found
