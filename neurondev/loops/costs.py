"""What each finding of a watched loop cost, in seconds the runtime's own clocks measured: one row per line and cause.

Dynamo's compiles are timed by dynamo (``CompilationMetrics.entire_frame_compile_time_s``, per frame); XLA's programs,
executions and transfers to the host by torch_xla (``CompileTime``, ``ExecuteTime``, ``TransferFromDeviceTime``, read
as deltas at each step's marks). A step's XLA compile seconds go to its programs, each the sample torch_xla timed it
with, when torch_xla's analysis named as many programs as it timed compiles; else to the step's programs as one row.
Nothing is estimated: a cost with no clock (a native device's copies and syncs) has no row.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable
from typing import Any

from neurondev.loops.steps import Step
from neurondev.trace.source import short_location

__all__ = ["COST_COLUMNS", "Cost", "costs", "steps_of", "timed_programs"]

COST_COLUMNS = ("rule", "where", "cause", "clock", "events", "seconds", "share", "per_step")


@dataclasses.dataclass(frozen=True)
class Cost:
    """One line's cost of one cause: its rule (None for what is no finding: XLA's executions, transfers), where (a
    file:line, or the function or steps it belongs to), the cause, whose clock timed it, how many events, their
    seconds, their share of the watched wall time and their seconds per step."""

    rule: str | None
    where: str
    cause: str
    clock: str
    events: int
    seconds: float
    share: float
    per_step: float

    def row(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_Key = tuple[str | None, str, str, str]


def costs(record: Any) -> tuple[Cost, ...]:
    """Every timed cost of ``record`` (a WatchRecord), the costliest first."""
    found: dict[_Key, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    for key, events, seconds in (*_dynamo(record), *_xla(record)):
        found[key][0] += events
        found[key][1] += seconds
    wall, steps = record.seconds or 0.0, max(len(record.steps), 1)
    rows = [
        Cost(rule, where, cause, clock, int(events), seconds, seconds / wall if wall > 0 else 0.0, seconds / steps)
        for (rule, where, cause, clock), (events, seconds) in found.items()
    ]
    return tuple(sorted(rows, key=lambda cost: -cost.seconds))


def _dynamo(record: Any) -> Iterable[tuple[_Key, int, float]]:
    for compile_ in record.compiles:
        if compile_.event.seconds is None:
            continue
        row = compile_.row()
        cause = f"dynamo {compile_.kind}" + (f" ({compile_.cause.kind})" if compile_.kind == "recompile" else "")
        yield (row["rule"], short_location(row["file"], row["line"]), cause, "dynamo"), 1, compile_.event.seconds
    for events, cause in ((record.looked_at, "dynamo traced, no graph"), (record.other_threads, "dynamo compile (another thread)")):
        for event in events:
            if event.seconds is not None:
                yield (None, short_location(event.file, event.line), cause, "dynamo"), 1, event.seconds


def _xla(record: Any) -> Iterable[tuple[_Key, int, float]]:
    for step in (*record.outside, *record.steps):
        xla = step.xla
        if xla is None:
            continue
        place = steps_of(step)
        yield from _programs(record, step, place)
        if xla.executions:
            yield (None, place, "XLA execution", "torch_xla"), xla.executions, xla.execute_seconds
        if xla.transfers_to_host:
            yield (None, place, "transfer to host", "torch_xla"), xla.transfers_to_host, xla.transfer_seconds


def _programs(record: Any, step: Step, place: str) -> Iterable[tuple[_Key, int, float]]:
    """A step's XLA compiles: each program with its own sample where they pair one to one, else one row for all."""
    xla = step.xla
    if xla is None or not xla.compilations:
        return
    timed = timed_programs(record, step)
    if timed and len(timed) == xla.compilations and all(program is not None for _, _, program in timed):
        for _, seconds, program in timed:
            where = program.where if program.source is not None else place
            yield (program.rule, where, f"XLA compile ({program.kind})", "torch_xla"), 1, seconds
        return
    kinds = sorted({program.kind for program in step.programs}) or ["torch_xla's analysis off"]
    rule = step.programs[0].rule if step.programs else None
    yield (rule, place, f"XLA compile ({', '.join(kinds)})", "torch_xla"), xla.compilations, xla.compile_seconds


def timed_programs(record: Any, step: Step) -> list[tuple[float, float, Any]]:
    """torch_xla's compile samples within ``step`` as (ended, seconds, its program or None): each paired with the
    program torch_xla's analysis named, in order, where they pair one to one."""
    if step.started is None:
        return []
    start, end = step.started + record.epoch, step.started + step.seconds + record.epoch
    found = [(when, seconds) for what, when, seconds in record.xla_samples if what == "XLA compile" and start <= when <= end]
    programs = list(step.programs) if len(step.programs) == len(found) else [None] * len(found)
    return [(when, seconds, program) for (when, seconds), program in zip(found, programs)]


def steps_of(step: Step) -> str:
    """Where a step's untimed-by-line costs belong: its compiled function, or the loop's steps."""
    if step.number == 0:
        return "before the loop"
    if step.number < 0:
        return "after the loop"
    return f"{step.function} (its steps)" if step.function else "the loop's steps"
