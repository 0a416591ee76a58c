"""Is the loop steady, and if not who keeps compiling from which step; what the XLA programs compiled each step say.

A loop is steady when, for every function it called compiled, its last calls compiled nothing, dynamo or
XLA, and its last steps compiled nothing for as long as the longest gap between recompiles seen: a new XLA
program (one torch_xla has no compiled program for: a graph hash it has not seen) is a neuronx-cc compile of
minutes on Trainium, so XLA's programs count as much as dynamo's graphs, and one that recurs every k steps
(gradient accumulation without a sync) is never steady, whatever step the loop ends at. One step cannot
show a steady state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from neurondev.loops.causes import Advice, Recurring
from neurondev.loops.recorder import CompileEvent, Mark
from neurondev.loops.steps import Step, XlaProgram

__all__ = ["ONE_STEP", "SteadyState", "program_advice", "steady_state"]

ONE_STEP = "one step"


@dataclasses.dataclass(frozen=True)
class SteadyState:
    """``after``: the step after which nothing compiled (0: nothing compiled at all), ``"never"`` (the last
    step compiled, or a function's last call did, or dynamo gave up at its recompile limit, or the clean
    steps at the end are no more than the longest gap between compiles seen) or ``ONE_STEP``;
    ``side``: what keeps compiling ('dynamo', 'XLA', 'dynamo and XLA'); ``since``: from which step it
    compiles on to the end; ``functions``: functions whose last call compiled; ``limit_step``: the step where
    dynamo reached its recompile limit (the function runs uncompiled after it); ``period``: compiles recur
    every ``period`` steps (a new program every k steps); ``tail``: the clean steps at the end, too few."""

    after: int | str
    side: str | None = None
    since: int | None = None
    functions: tuple[str, ...] = ()
    limit_step: int | None = None
    period: int | None = None  # a new program every ``period`` steps, to the end
    tail: int | None = None  # clean steps after the last compile, when too few to call it steady

    @property
    def reached(self) -> bool:
        return self.after != "never"


def steady_state(steps: Sequence[Step], events: Sequence[CompileEvent], marks: Sequence[Mark]) -> SteadyState:
    """The verdict for a loop cut into ``steps``."""
    if any(event.limit is not None for event in events):
        limit = next((step.number for step in steps if any(events[i].limit is not None for i in step.compiles)), None)
        return SteadyState("never", "dynamo", _since(steps, lambda s: True), ("the recompile limit",), limit)
    compiling = [step.number for step in steps if step.compiled]
    late = _functions_compiling_last(events, marks)
    if len(steps) < 2 and not late:
        return SteadyState(ONE_STEP)
    if not compiling and not late:
        return SteadyState(0)
    last = steps[-1]
    if last.compiled or late:
        if last.dynamo_compiles > 0 or late:  # dynamo compiles again (XLA's programs follow its new graphs)
            return SteadyState("never", "dynamo", _since(steps, lambda s: s.dynamo_compiles > 0), tuple(late), period=_period(compiling))
        return SteadyState("never", "XLA", _since(steps, _xla_alone), (), period=_period(compiling))  # XLA's own programs, step after step
    return _tail_verdict(steps, compiling)


def _tail_verdict(steps: Sequence[Step], compiling: list[int]) -> SteadyState:
    """The last steps compiled nothing: steady only when they reach the step where the longest gap between two
    recompiles seen would have brought the next one (a new program every k steps, the loop ending between two of
    them, is not steady). The first compile is the warm-up: a gap is measured between the compiles after it."""
    recompiles = compiling[1:]
    gaps = [later - earlier for earlier, later in zip(recompiles, recompiles[1:])]
    tail = len(steps) - compiling[-1]
    if not gaps or tail >= max(gaps):
        return SteadyState(compiling[-1])
    recurring = [step for step in steps if step.number in recompiles]
    side = "dynamo" if any(step.dynamo_compiles for step in recurring) else "XLA"
    period = _period(compiling)
    return SteadyState("never", side, _recurring_since(compiling, period), period=period, tail=tail)


def _recurring_since(compiling: list[int], period: int | None) -> int:
    """The first compiling step of the run of recompiles ``period`` apart that reaches the last (the first recompile
    without a period)."""
    if period is None:
        return compiling[1]
    since = compiling[-1]
    for earlier, later in zip(reversed(compiling[:-1]), reversed(compiling[1:])):
        if later - earlier != period:
            break
        since = earlier
    return since


def _period(compiling: list[int]) -> int | None:
    """k when the last three compiling steps (or more) are k steps apart, k > 1: a new program every k steps."""
    if len(compiling) < 3:
        return None
    gaps = [later - earlier for earlier, later in zip(compiling, compiling[1:])]
    return gaps[-1] if gaps[-1] > 1 and gaps[-1] == gaps[-2] else None


def _xla_alone(step: Step) -> bool:
    """XLA compiled in a step where dynamo did not: a program of the lazy graph, not of a new dynamo graph."""
    return bool(step.xla_compiles) and step.dynamo_compiles == 0


def _since(steps: Sequence[Step], compiles: object) -> int | None:
    """The first step of the run of compiling steps that reaches the last step."""
    since = None
    for step in reversed(steps):
        if not compiles(step):  # type: ignore[operator]
            break
        since = step.number
    return since


def _functions_compiling_last(events: Sequence[CompileEvent], marks: Sequence[Mark]) -> list[str]:
    """Functions called compiled more than once whose last call compiled (its compile is the event right
    after the call's mark: the recorder marks a call before dynamo compiles it)."""
    calls: dict[str, list[int]] = {}
    for mark in marks:
        if mark.kind == "call" and mark.function is not None:
            calls.setdefault(mark.function, []).append(mark.compiles)
    late = []
    for function, positions in calls.items():
        last = positions[-1]
        if len(positions) > 1 and last < len(events) and events[last].top and events[last].function == function:
            late.append(function)
    return late


# --- what the XLA programs say --------------------------------------------------------------------
_GENERATE = "transformers/generation/utils.py"


def program_advice(steps: Sequence[Step], steady: SteadyState, *, analysed: bool, unit: str = "step") -> list[Advice]:
    """Advice on XLA's side: from torch_xla's analysis of the programs compiled in the steps that keep
    compiling (the growing lazy graph, a host read, transformers' stop check), or, without it, the counts."""
    if steady.after != "never" or steady.side != "XLA":
        return []
    late = [step for step in steps if steady.since is not None and step.number >= steady.since]
    programs = [program for step in late for program in step.programs]
    per_step = tuple(sorted({step.xla_compiles or 0 for step in late if step.compiled}))
    recurring = Recurring(per_step, steady.since, steady.period, unit)
    if not analysed:
        return [Advice("xla programs", recurring=recurring, analysed=False)]
    advice = []
    growing = _growing_inputs(programs)
    if growing:
        trigger = next((program.source for program in programs if program.source is not None), None)
        advice.append(Advice("lazy state growing", recurring=recurring, inputs=tuple(growing), source=trigger))
    reads = [program for program in programs if program.kind == "host read" and program.source is not None]
    generate = next((program for program in reads if program.file and program.file.replace("\\", "/").endswith(_GENERATE)), None)
    if generate is not None:
        advice.append(Advice("stop check", recurring=recurring, source=generate.source))
    elif reads:
        advice.append(Advice("host read", recurring=recurring, source=reads[0].source))
    return advice or [Advice("xla programs", recurring=recurring, programs=_by_kind(programs))]


def _growing_inputs(programs: Sequence[XlaProgram]) -> list[int]:
    """The input counts of the lazy graph's programs (not dynamo's) each time they reach a new high, when
    that happens twice or more: the graph carries more state every few steps (22, 39, 56 ...)."""
    highs: list[int] = []
    for program in programs:
        if program.kind != "dynamo graph" and program.inputs is not None and program.inputs > (highs[-1] if highs else 0):
            highs.append(program.inputs)
    grown = [count for count in highs if count > 1]
    return grown if len(grown) >= 2 else []


def _by_kind(programs: Sequence[XlaProgram]) -> tuple[tuple[str, int], ...]:
    """XLA's programs counted by the kind of their trigger, in the order first seen."""
    kinds: dict[str, int] = {}
    for program in programs:
        kinds[program.kind] = kinds.get(program.kind, 0) + 1
    return tuple(kinds.items())
