"""What a watch saw, frozen: the compiles and their causes, the steps, the steady state, the advice; set once, never changed."""

from __future__ import annotations

import dataclasses
import sys
import traceback
from typing import Any

from neurondev.loops.causes import Advice, AdviceCheck, Cause, advice_for, by_what_sizes_do, cause_of
from neurondev.loops.columns import CALL_COLUMNS, COMPILE_COLUMNS, STEP_COLUMNS
from neurondev.loops.recorder import CompileEvent, Recorder
from neurondev.loops.steps import Step, cut, outside, step_kind
from neurondev.loops.verdict import SteadyState, program_advice, steady_state
from neurondev.loops.workers import Workers
from neurondev.runs.counts import Counts
from neurondev.runs.run_records import Seen
from neurondev.trace.source import Located, SourceLine, is_program_file, source_line

__all__ = [
    "dynamo_seconds",
    "CALL_COLUMNS",
    "COMPILE_COLUMNS",
    "STEP_COLUMNS",
    "SYNC_ADVICE",
    "GAP_KINDS",
    "Compile",
    "Gap",
    "Raised",
    "WatchRecord",
    "device_lines",
    "snapshot",
    "with_checked_advice",
]

GAP_KINDS = ("torch_xla not loaded", "analysis off", "analysis to stderr")


@dataclasses.dataclass(frozen=True)
class Gap:
    """What a watch's figures do not cover, and why: ``kind`` (in ``GAP_KINDS``: the watched code never loaded
    torch_xla; torch_xla's analysis was off, or printed to stderr, so XLA's programs are counted, not their
    triggers) and its facts:
    ``device`` (the native device), ``torch`` (this torch's version), ``level`` (PT_XLA_DEBUG_LEVEL)."""

    kind: str
    device: str | None = None
    torch: str | None = None
    level: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


SYNC_ADVICE = ("lazy state growing", "xla programs")  # advice whose mechanical fix is a torch_xla.sync() per step


@dataclasses.dataclass(frozen=True)
class Compile:
    """One compile, read: the event, its kind, its cause, the step it happened in, and the XLA programs
    compiled from it until the next compile."""

    event: CompileEvent
    kind: str
    cause: Cause
    xla_compiles: int | None
    step: int | None = None
    outside: str | None = None  # 'before the loop' or 'after the loop': reported, never judged

    def row(self) -> dict[str, Any]:
        """The compile as a table row; ``file`` and ``line`` are the user's: the compiled function's own where it is the
        program's, else the line of the program that called it (a compiled nn.Module's ``Linear.forward`` is torch's)."""
        event, cause = self.event, self.cause
        own = is_program_file(event.file) or event.call_file is None
        return {
            "rule": cause.rule,
            "function": event.function,
            "file": event.file if own else event.call_file,
            "line": event.line if own else event.call_line,
            "index": event.index,
            "kind": self.kind,
            "cause": cause.kind,
            "value": cause.value,
            "before": cause.before,
            "after": cause.after,
            "measure": cause.measure,
            "dim": cause.dim,
            "xla_compiles": self.xla_compiles,
            "read_at": cause.where if cause.source is not None else None,
            "step": self.step,
            "call": self.step,
            "outside": self.outside,
            "graphs": event.graphs,
            "graph_hashes": list(event.graph_hashes),
            "seconds": event.seconds,
        }


@dataclasses.dataclass(frozen=True)
class Raised(Located):
    """The watched code raised: the exception's type and first line, the line of the program it came from,
    how many compiles were made before, and the exit code of a script's own ``sys.exit(code)``; ``signal``: the number of
    the signal that killed the script's process (the watch command's record of it, ``exception`` its name)."""

    exception: str
    message: str
    compiles: int
    source: SourceLine | None = None
    exit_code: int | None = None
    signal: int | None = None


@dataclasses.dataclass(frozen=True)
class WatchRecord:
    """Everything a watch recorded, set once: ``compiles`` (each with its cause), ``steps``, ``steady``, the
    advice (each checked or not), what the XLA and native figures leave out (``xla_gap``, ``analysis_gap``,
    ``native_gap``: a ``Gap``, None when nothing is missing), the block's own error (``raised``)."""

    name: str
    watched_function: bool
    step_kind: str
    compiles: tuple[Compile, ...]
    steps: tuple[Step, ...]
    steady: SteadyState
    advice: tuple[Advice, ...]
    seconds: float
    xla_total: Counts | None = None
    native_total: Counts | None = None
    xla_gap: Gap | None = None
    analysis_gap: Gap | None = None
    native_gap: Gap | None = None
    raised: Raised | None = None
    sync_each_step: bool = False
    tried: tuple[Advice, ...] = ()  # advice run again with its fix applied that did not make the loop steady
    outside: tuple[Step, ...] = ()  # before the loop (number 0) and after it (-1): reported, never judged
    looked_at: tuple[CompileEvent, ...] = ()  # frames dynamo made no graph of: not compiles, one line in the summary
    other_threads: tuple[CompileEvent, ...] = ()  # compiles of other threads than the watched one: not the loop's
    workers: tuple[Workers, ...] = ()  # worker processes the script started (torch.multiprocessing): not watched
    epoch: float = 0.0  # a step's ``started`` plus this: seconds since the epoch, the clock of dynamo's and torch_xla's times
    xla_samples: tuple[tuple[str, float, float], ...] = ()  # torch_xla's timed samples in the watch: (what, ended, seconds)

    @property
    def steady_state(self) -> int | str:
        return self.steady.after

    @property
    def reached_steady_state(self) -> bool:
        return self.steady.reached

    @property
    def judged_end(self) -> int:
        """The last step of the sequence the verdict judged: the loop's last, or its last training (evaluation) call
        when the two were judged apart."""
        phase = self.steady.phase
        return max((step.number for step in self.steps if phase is None or step.phase == phase), default=len(self.steps))

    def step_rows(self) -> list[dict[str, Any]]:
        return [_step_row(step, self.compiles) for step in self.steps]

    def call_rows(self) -> list[dict[str, Any]]:
        """The steps as a watched function's calls (its own columns)."""
        if not self.watched_function:
            return []
        return [
            {
                "call": step.number,
                "compiled": step.dynamo_compiles,
                "graphs": step.graphs,
                **{
                    k: getattr(step.xla, k, None) if step.xla is not None else None
                    for k in ("executions", "transfers_to_host", "transfers_to_device")
                },
                "xla_compiles": step.xla_compiles,
                **_native_columns(step),
                "seconds": step.seconds,
            }
            for step in self.steps
        ]


def _step_row(step: Step, compiles: tuple[Compile, ...]) -> dict[str, Any]:
    xla = step.xla
    triggers = "; ".join(f"{p.kind} at {p.where}" if p.source else p.kind for p in step.programs)
    return {
        "step": step.number,
        "function": step.function,
        "phase": step.phase,
        "dynamo_compiles": step.dynamo_compiles,
        "graphs": step.graphs,
        "cache_hits": step.hits,
        "xla_compiles": xla.compilations if xla else None,
        "compile_seconds": xla.compile_seconds if xla else None,
        "cached_programs": xla.cached_compiles if xla else None,
        "executions": xla.executions if xla else None,
        "transfers_to_host": xla.transfers_to_host if xla else None,
        "transfers_to_device": xla.transfers_to_device if xla else None,
        **_native_columns(step),
        "xla_triggers": triggers or None,
        "xla_programs": [program.graph_hash for program in step.programs] or None,
        "dynamo_seconds": dynamo_seconds(step, compiles),
        "execute_seconds": xla.execute_seconds if xla else None,
        "transfer_seconds": xla.transfer_seconds if xla else None,
        "seconds": step.seconds,
    }


def dynamo_seconds(step: Step, compiles: tuple[Compile, ...]) -> float:
    """Dynamo's own seconds for ``step``'s compiles (``compiles``: the record's, by which the step names its own)."""
    return sum(compiles[i].event.seconds or 0.0 for i in step.compiles if i < len(compiles))


def _native_columns(step: Step) -> dict[str, Any]:
    """A native device's copies (both ways), syncs and fallbacks in a step, and the lines they were seen at (None
    where no native accounting was on)."""
    native = step.native
    return {
        "copies_to_host": native.transfers_to_host if native else None,
        "copies_to_device": native.transfers_to_device if native else None,
        "syncs": native.syncs if native else None,
        "fallbacks": native.fallback_calls if native else None,
        "device_lines": device_lines(step.seen) if step.seen is not None else None,
        "lined": step.lined,
    }


def _by(collective: str | None) -> str:
    return f" by {collective}" if collective else ""


def device_lines(seen: Seen) -> str | None:
    """'copy to host at f.py:9; 2 sync(s) at f.py:12; aten::index_select at f.py:14': where a step's device costs were."""
    parts = [f"{c.transfers_to_host} copy(ies) to host{_by(c.collective)} at {_at(c)}" for c in seen.host_copies if c.transfers_to_host]
    parts += [f"{u.transfers_to_device} copy(ies) to device{_by(u.collective)} at {_at(u)}" for u in seen.uploads]
    parts += [f"{c.syncs} sync(s) at {_at(c)}" for c in seen.host_copies if c.syncs]
    parts += [f"{f.calls} x {f.op} at {_at(f)}" for f in seen.fallbacks]
    return "; ".join(parts) or None


def _at(cost: Located) -> str:
    """Where a cost was: its line, and for a helper's line the line that called the helper."""
    return cost.source.where_called if cost.source is not None else cost.where


def snapshot(recorder: Recorder, *, name: str, watched_function: bool, gaps: dict[str, Gap | None], raised: Raised | None) -> WatchRecord:
    """The frozen record of what ``recorder`` holds now."""
    events, marks = tuple(recorder.events), tuple(recorder.marks)
    kind = step_kind(marks, watched_function)
    device_events = recorder.native.events if recorder.native is not None else None
    steps = cut(marks, events, recorder.analysis, kind=kind, device_events=device_events) if len(marks) >= 2 else ()
    around = outside(marks, events, recorder.analysis, kind=kind, device_events=device_events) if len(marks) >= 2 else ()
    compiles = _read(events, marks, steps, around)
    steady = steady_state(steps, [c.kind for c in compiles])
    advice = _advice(compiles, steps, steady, analysed=recorder.analysis is not None, unit="call" if watched_function else "step")
    first, last = (marks[0], marks[-1]) if marks else (None, None)
    xla_total = _total(first.xla if first else None, last.xla if last else None)
    native_total = _total(first.native if first else None, last.native if last else None)
    seconds = sum(step.seconds for step in steps) if watched_function else (last.at - first.at if first and last else 0.0)
    return WatchRecord(
        name, watched_function, kind, compiles, steps, steady, advice, seconds, xla_total, native_total,
        gaps.get("xla"), gaps.get("analysis"), gaps.get("native"), raised, recorder.sync_each_step, outside=around,
        looked_at=tuple(recorder.looked_at), other_threads=tuple(recorder.other_threads), workers=tuple(recorder.workers),
        epoch=recorder.epoch, xla_samples=_xla_samples(marks, recorder.epoch),
    )  # fmt: skip


def _xla_samples(marks: tuple[Any, ...], epoch: float) -> tuple[tuple[str, float, float], ...]:
    """torch_xla's timed samples between the first and the last mark (none when torch_xla never counted there)."""
    if len(marks) < 2 or marks[-1].xla is None or "torch_xla" not in sys.modules:
        return ()
    from neurondev.xla.counters import samples_between

    return samples_between(marks[0].at + epoch, marks[-1].at + epoch)


def _read(
    events: tuple[CompileEvent, ...], marks: tuple[Any, ...], steps: tuple[Step, ...], around: tuple[Step, ...]
) -> tuple[Compile, ...]:
    step_of = {index: step.number for step in steps for index in step.compiles}
    outside_of = {index: "before the loop" if step.number == 0 else "after the loop" for step in around for index in step.compiles}
    read = []
    causes = by_what_sizes_do(events, [cause_of(event) for event in events])
    for index, event in enumerate(events):
        kind = (
            "recompile limit reached"
            if event.limit is not None
            else "failed"
            if event.failed
            else "first"
            if not event.index
            else "recompile"
        )
        cause = _at_the_call(causes[index], event) if kind != "first" else causes[index]
        read.append(Compile(event, kind, cause, _xla_between(events, marks, index), step_of.get(index), outside_of.get(index)))
    return tuple(read)


def _at_the_call(cause: Cause, event: CompileEvent) -> Cause:
    """A cause no line reads (an input's size, a cache's growth) is named at the program's call of the compiled function,
    where the value comes in, not at the function's own line (its decorator's)."""
    if cause.source is not None or event.call_file is None or event.call_line is None or not is_program_file(event.call_file):
        return cause
    return dataclasses.replace(cause, source=source_line(event.call_file, event.call_line))


def _xla_between(events: tuple[CompileEvent, ...], marks: tuple[Any, ...], index: int) -> int | None:
    """XLA programs compiled from compile ``index`` until the next compile (or the end of the recording)."""
    later = events[index + 1].xla if index + 1 < len(events) else (marks[-1].xla if marks else None)
    start = events[index].xla
    if later is None:
        return None
    return (later - (start if start is not None else Counts())).compilations


def _advice(
    compiles: tuple[Compile, ...], steps: tuple[Step, ...], steady: SteadyState, *, analysed: bool, unit: str
) -> tuple[Advice, ...]:
    """Once per cause, what to write instead (dynamo's side), then what the XLA programs say."""
    sizes = _sizes_by_value(compiles)
    on_xla = any(step.xla is not None for step in steps)
    said: dict[tuple[str, str | None], Advice] = {}
    for compile_ in compiles:
        cause = compile_.cause
        key = (cause.kind, cause.value if cause.kind != "recompile limit" else compile_.event.function)
        advice = advice_for(cause, compile_.event.function, sizes.get(cause.value or "", []), on_xla=on_xla)
        if advice is not None and key not in said:
            said[key] = advice
    return tuple(said.values()) + tuple(program_advice(steps, steady, analysed=analysed, unit=unit))


def _sizes_by_value(compiles: tuple[Compile, ...]) -> dict[str, list[int]]:
    """The sizes each changing tensor took across the compiles (what buckets must cover)."""
    sizes: dict[str, list[int]] = {}
    for compile_ in compiles:
        cause = compile_.cause
        if cause.kind in ("changing size", "cache growth") and cause.value and cause.before and cause.after:
            sizes.setdefault(cause.value, []).extend([int(cause.before), int(cause.after)])
    return sizes


def _total(first: Any, last: Any) -> Any:
    if last is None:
        return None
    return last - (first if first is not None else Counts())


def with_checked_advice(record: WatchRecord, causes: tuple[str, ...], check: AdviceCheck) -> WatchRecord:
    """A new record whose advice for ``causes`` carries ``check``, how a second run with the fix applied went;
    advice that was not enough leaves ``advice`` for ``tried`` (it is no longer something to do)."""
    checked = [dataclasses.replace(a, check=check) if a.cause in causes else a for a in record.advice]
    if check.kind != "not enough":
        return dataclasses.replace(record, advice=tuple(checked))
    kept = tuple(a for a in checked if a.cause not in causes)
    return dataclasses.replace(record, advice=kept, tried=record.tried + tuple(a for a in checked if a.cause in causes))


def raised_by(error: BaseException | None, compiles: int) -> Raised | None:
    """The record of the watched code's own error (None for none, or for ``sys.exit(0)``)."""
    if error is None:
        return None
    if isinstance(error, SystemExit):
        code = error.code
        if code in (None, 0):
            return None
        return Raised("SystemExit", f"the script exited with {code!r}", compiles, None, code if isinstance(code, int) else 1)
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if is_program_file(frame.filename)]
    where = source_line(frames[-1].filename, frames[-1].lineno or 0, frames[-1].name) if frames else None
    message = (str(error).strip().splitlines() or [""])[0][:200]
    return Raised(type(error).__name__, message, compiles, where)
