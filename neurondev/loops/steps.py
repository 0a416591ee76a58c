"""A recorded loop cut into steps: what each step compiled (dynamo graphs, XLA programs with their triggers) and cost.

A step ends at a boundary, in this order of preference: your ``w.step()`` marks; else the next call of the compiled
function the loop calls most (more than once: a training step, a decode step of ``generate``); else your
``torch_xla.sync()`` (a lazy-tensor loop without torch.compile); else an optimizer's step; else the block is one
step. A watched function's step is each call. What ran before the first step and after the last is outside the loop
(``outside``). Each step holds dynamo's compiles in it, the cache hits, torch_xla's deltas (programs compiled, their
compile time, executions, transfers), the XLA programs compiled with the cause torch_xla's own analysis gives (when
it is on) and a native device's copies, syncs and fallbacks.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Sequence
from typing import Any

from neurondev.loops.recorder import CompileEvent, Mark
from neurondev.rulebook import Ruled
from neurondev.runs.counts import Counts
from neurondev.runs.run_records import Seen
from neurondev.trace.source import Located, SourceLine, is_program_file, is_user_file, source_line

__all__ = ["STEP_KINDS", "Step", "XlaProgram", "cut", "outside", "step_kind"]

STEP_KINDS = ("call", "mark", "compiled call", "sync", "optimizer step", "block")


@dataclasses.dataclass(frozen=True)
class XlaProgram(Located, Ruled):
    """One XLA program compiled in a step, as torch_xla's analysis explains it: the ``kind`` of cause (a host
    read of a lazy value, the user's sync, the bridge syncing a graph's inputs, a dynamo graph), torch_xla's
    words, the graph's hash and numbers of inputs and outputs, and the line of the program that triggered it."""

    RECORD = "xla program"

    kind: str
    cause: str
    graph_hash: str
    inputs: int | None
    outputs: int | None
    source: SourceLine | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "kind": self.kind,
            "cause": self.cause,
            "graph_hash": self.graph_hash,
            "inputs": self.inputs,
            "outputs": self.outputs,
            **self.source_dict(),
        }


@dataclasses.dataclass(frozen=True)
class Step:
    """One step: its number (from 1), the compiled function it is a call of (if any), the positions of its
    dynamo compiles in the record, graphs made, cache hits of compiled code, the device's deltas (``xla``:
    torch_xla's; ``native``: a native device's accounting), the XLA programs torch_xla analysed, seconds."""

    number: int
    function: str | None
    compiles: tuple[int, ...]
    graphs: int
    hits: int
    xla: Counts | None
    native: Counts | None
    programs: tuple[XlaProgram, ...]
    seconds: float
    seen: Seen | None = None  # a native device's copies, syncs and fallbacks in the step, by line
    phase: str | None = None  # a call's: 'training' (gradients on) or 'evaluation' (off); None for other steps
    started: float | None = None  # its first mark's moment (time.perf_counter; the record's ``epoch`` makes it a date)

    @property
    def dynamo_compiles(self) -> int:
        return len(self.compiles)

    @property
    def xla_compiles(self) -> int | None:
        return None if self.xla is None else self.xla.compilations

    @property
    def compiled(self) -> bool:
        """Anything compiled in this step, dynamo or XLA."""
        return bool(self.compiles) or bool(self.xla_compiles)

    @property
    def lined(self) -> bool | None:
        """Whether each of the native device's costs in this step came with its line (a device that counts by itself
        gives lines to the first steps and to new ones, counts only to steps that repeat them); None: no native figures."""
        if self.native is None or self.seen is None:
            return None
        costs = self.native.transfers_to_host + self.native.transfers_to_device + self.native.syncs + self.native.fallback_calls
        seen = self.seen
        lined = sum(c.transfers_to_host + c.syncs for c in seen.host_copies) + sum(u.transfers_to_device for u in seen.uploads)
        return lined + sum(f.calls for f in seen.fallbacks) >= costs


def step_kind(marks: Sequence[Mark], watched_function: bool) -> str:
    """How the loop's steps are cut (one of ``STEP_KINDS``): the user's marks; else the calls of the compiled
    function the loop calls most (called more than once: a validation call made once is no step); else the
    user's torch_xla.sync() calls; else the optimizer's steps; else the whole block."""
    if watched_function:
        return "call"
    kinds = {mark.kind for mark in marks}
    if "step" in kinds:
        return "mark"
    if _stepping_function(marks) is not None:
        return "compiled call"
    return next((kind for kind, mark in (("sync", "sync"), ("optimizer step", "optimizer")) if mark in kinds), "block")


def _stepping_function(marks: Sequence[Mark]) -> str | None:
    """The compiled function called most often (the first of equals), when it was called more than once: its identity
    (two functions of one name, two lambdas say, are two)."""
    calls = collections.Counter(_identity(mark) for mark in marks if mark.kind == "call" and mark.function is not None)
    if not calls:
        return None
    key, count = max(calls.items(), key=lambda item: item[1])  # max keeps the first of equals: dicts keep order
    return key if count > 1 else None


def _identity(mark: Mark) -> str | None:
    return mark.key or mark.function


def _name_of(marks: Sequence[Mark], key: str | None) -> str | None:
    """The function's name, as its user knows it, for its identity."""
    return next((mark.function for mark in marks if mark.kind == "call" and _identity(mark) == key), None)


def cut(
    marks: Sequence[Mark], events: Sequence[CompileEvent], analysis: Any, *, kind: str, device_events: Sequence[Any] | None = None
) -> tuple[Step, ...]:
    """The steps of a recorded loop (``analysis``: torch_xla's analysis log, or None; ``device_events``: the native
    accounting's events, or None)."""
    before, steps, after = _intervals(marks, kind)
    function = _name_of(marks, _stepping_function(marks)) if kind == "compiled call" else None
    found = [_step(number, function, marks, events, analysis, device_events, bounds) for number, bounds in enumerate(steps, 1)]
    phases = [_phase(marks[bounds[0]]) for bounds in steps] if kind == "compiled call" else []
    if len(set(phases)) > 1:  # calls with gradients on (training) and off (evaluation): two sequences
        found = [dataclasses.replace(step, phase=phase) for step, phase in zip(found, phases)]
    return _with_known_lines(found)


def _phase(call: Mark) -> str | None:
    return None if call.grad is None else "training" if call.grad else "evaluation"


def _with_known_lines(steps: list[Step]) -> tuple[Step, ...]:
    """Each step whose device costs came without their lines (a long loop's accounting only counts once its stretches
    repeat ones seen with lines: ``loops.attribution``) takes, kind by kind, the lines of the latest earlier step that
    cost as much of that kind: its syncs, copies to the host, copies to the device, fallbacks of each op."""
    latest: Seen | None = None
    found = []
    for step in steps:
        if step.seen is not None and any(step.seen):
            latest = step.seen
        elif step.native is not None and step.seen is not None and latest is not None:
            step = dataclasses.replace(step, seen=_same_costs(latest, step.native))
        found.append(step)
    return tuple(found)


def _same_costs(seen: Seen, counts: Counts) -> Seen:
    """The groups of ``seen`` whose kind of cost (syncs, copies each way, each op's fallbacks) adds up to ``counts``'."""
    syncs = sum(c.syncs for c in seen.host_copies) == counts.syncs
    copies = sum(c.transfers_to_host for c in seen.host_copies) == counts.transfers_to_host
    uploads = sum(u.transfers_to_device for u in seen.uploads) == counts.transfers_to_device
    fell: dict[str, int] = collections.Counter()
    for fallback in seen.fallbacks:
        fell[fallback.op] += fallback.calls
    ops = {op for op, calls in fell.items() if dict(counts.fallbacks).get(op) == calls}
    return Seen(
        tuple(
            c
            for c in seen.host_copies
            if (syncs or not c.syncs) and (copies or not c.transfers_to_host) and (c.syncs or c.transfers_to_host)
        ),
        seen.uploads if uploads and counts.transfers_to_device else (),
        tuple(f for f in seen.fallbacks if f.op in ops),
    )


def outside(
    marks: Sequence[Mark], events: Sequence[CompileEvent], analysis: Any, *, kind: str, device_events: Sequence[Any] | None = None
) -> tuple[Step, ...]:
    """What the block ran before its first step and after its last (number 0: before, -1: after), where anything
    ran: reported with its own compiles, never part of the verdict."""
    before, _, after = _intervals(marks, kind)
    found = []
    for number, bounds in ((0, before), (-1, after)):
        if bounds is not None and _moved(marks[bounds[0]], marks[bounds[1]]):
            found.append(_step(number, None, marks, events, analysis, device_events, bounds))
    return tuple(found)


def _step(
    number: int,
    function: str | None,
    marks: Sequence[Mark],
    events: Sequence[CompileEvent],
    analysis: Any,
    device_events: Any,
    bounds: tuple[int, int],
) -> Step:
    first, last = marks[bounds[0]], marks[bounds[1]]
    compiles = tuple(range(first.compiles, last.compiles))
    return Step(
        number,
        function,
        compiles,
        sum(events[i].graphs for i in compiles),
        last.hits - first.hits,
        _delta(first.xla, last.xla),
        _delta(first.native, last.native),
        _programs(analysis, first.analysis, last.analysis),
        last.at - first.at,
        _seen(device_events, first, last),
        started=first.at,
    )


def _seen(device_events: Sequence[Any] | None, first: Mark, last: Mark) -> Seen | None:
    """What the native device did between two marks, grouped by line (None: no native accounting)."""
    if device_events is None or last.native is None:
        return None
    from neurondev.native.device import grouped

    return grouped(list(device_events[first.native_events : last.native_events]))


Bounds = tuple[int, int]


def _intervals(marks: Sequence[Mark], kind: str) -> tuple[Bounds | None, list[Bounds], Bounds | None]:
    """(before the loop, each step, after the loop) as (first mark, last mark). A step ends at a boundary: your mark,
    the next call of the stepping function, your sync, an optimizer step. Before the first boundary's step begins, and
    after the last boundary, is outside the loop: for a compiled function's calls, before its first call, and from the
    first call of another compiled function after its last call (a validation after training); for marks, syncs and
    optimizer steps, after the last one. A watched function's step is each call (its recorder starts and stops per
    call); a block without boundaries is one step."""
    end = len(marks) - 1
    if kind == "call":
        starts = [i for i, mark in enumerate(marks) if mark.kind == "start"]
        stops = [i for i, mark in enumerate(marks) if mark.kind == "stop"]
        return None, list(zip(starts, stops)), None
    if kind == "compiled call":
        function = _stepping_function(marks)
        calls = [i for i, mark in enumerate(marks) if mark.kind == "call" and _identity(mark) == function]
        close = next((i for i in range(calls[-1] + 1, end) if marks[i].kind == "call" and _identity(marks[i]) != function), end)
        bounds = [*calls, close]
        return (0, calls[0]) if calls[0] > 0 else None, list(zip(bounds, bounds[1:])), (close, end) if close < end else None
    cuts = {"mark": "step", "sync": "sync", "optimizer step": "optimizer"}.get(kind)
    if cuts is None:
        return None, [(0, end)], None
    bounds = [0] + [i for i, mark in enumerate(marks) if mark.kind == cuts]
    return None, list(zip(bounds, bounds[1:])), (bounds[-1], end) if bounds[-1] < end else None


def _moved(earlier: Mark, later: Mark) -> bool:
    """Whether anything happened between two marks (a compile, a hit, an XLA execution)."""
    delta = _delta(earlier.xla, later.xla)
    return later.compiles > earlier.compiles or later.hits > earlier.hits or bool(delta and (delta.executions or delta.compilations))


def _delta(before: Any, after: Any) -> Any:
    if after is None:
        return None
    return after - (before if before is not None else Counts())


def _programs(analysis: Any, start: int, end: int) -> tuple[XlaProgram, ...]:
    if analysis is None:
        return ()
    return tuple(
        XlaProgram(record.kind, record.cause, record.graph_hash, record.inputs, record.outputs, _trigger(record.frames, record.kind))
        for record in analysis.between(start, end)
        if record.phase == "compilation"
    )


def _trigger(frames: Sequence[tuple[str, int, str]], kind: str = "") -> SourceLine | None:
    """The innermost frame of the program's own code (the user's, or a library's it calls); a sync's, the user's own
    line that called it, past the libraries between (``xm.mark_step``'s deprecation wrapper, a trainer's loop)."""
    own = [(file, line, function) for file, line, function in frames if is_program_file(file) and not file.startswith("<")]
    if kind == "user sync":
        own = [frame for frame in own if is_user_file(frame[0])] or own
    return source_line(*own[0]) if own else None
