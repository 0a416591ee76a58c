"""The loop's verdict, by the rule written on the loops page (docs/how-to/loops.md, "The rule"), in one function.

The rule, in terms a user can check by hand against the step table:

1. What each step did new: dynamo compiled a function for the first time, recompiled one (a guard failed), gave up
   at its recompile limit, or XLA compiled a program it had not compiled before (a new graph hash: a neuronx-cc compile
   of minutes on Trainium). Work before the first step and after the last is outside the loop: reported, never judged.
2. Warm-up is not counted: everything new in the first two steps but a recompile (the loop's first programs, and the
   optimizer's first step, which makes its state), and a function's first compile anywhere with the XLA programs of
   that step (a validation function first called at step 10).
3. The verdict, on the counted steps c1 < c2 < ... < ck of n steps (tail = n - ck):
   - ``no step`` (nothing ran), ``one step`` (nothing to compare with): exit 0;
   - ``limit``: dynamo reached its recompile limit (the function runs uncompiled from there): exit 1;
   - ``nothing``: nothing new at all, or warm-up only: steady from the start, or after the warm-up: exit 0;
   - ``keeps compiling``: the last two steps are both counted (new work step after step to the end), or the last three
     counted steps are consecutive and one step follows (a quiet last step after new work step after step is the
     loop's last: what the next iteration makes at its top never ran): exit 1;
   - ``recurring``: the last three counted steps are k > 1 apart, and the tail is shorter than k (the next would
     have come after the end): exit 1;
   - ``steady``: the tail is at least the longest gap between counted steps (at least 1; 2 after three in a row):
     steady after ck: exit 0;
   - ``late``: a change late in the loop after a steady stretch (the last run of consecutive counted steps, ending at
     ck, follows at least two steps without counted work, no fewer than the run is long, nor than the steps from c1
     to the counted step before the run), with too few steps after it to know: exit 0, with its advice;
   - ``keeps compiling`` otherwise: new work until near the end, no steady stretch before it, too few steps after it.
4. Training and evaluation: steps that are calls of one compiled function made with gradients on and off are two
   sequences (``phase``), each judged by 1-3 on its own; the loop's verdict is the worse (``VERDICTS``' order).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

from neurondev.loops.causes import Advice, Recurring
from neurondev.loops.steps import Step, XlaProgram
from neurondev.rulebook import Ruled

__all__ = [
    "EXIT_CODES",
    "NEVER_STEADY",
    "ONE_STEP",
    "NotSteady",
    "VERDICTS",
    "WARM_UP_STEPS",
    "SteadyState",
    "StepWork",
    "not_steady",
    "program_advice",
    "steady_state",
    "verdict",
    "work_of",
]

ONE_STEP = "one step"
WARM_UP_STEPS = 2
VERDICTS = ("no step", "one step", "nothing", "steady", "late", "recurring", "keeps compiling", "limit")
NEVER_STEADY = ("keeps compiling", "recurring")  # ND411; the recompile limit ("limit") is ND407's
EXIT_CODES = {"no step": 0, "one step": 0, "nothing": 0, "steady": 0, "late": 0, "recurring": 1, "keeps compiling": 1, "limit": 1}


@dataclasses.dataclass(frozen=True)
class StepWork:
    """What one step did new: functions dynamo compiled for the first time (``first``), recompiles (``recompiles``,
    a failed compile among them), XLA programs it had not compiled before (``programs``), and whether dynamo gave
    up at its recompile limit (``limit``)."""

    first: int = 0
    recompiles: int = 0
    programs: int = 0
    limit: bool = False
    phase: str | None = None  # 'training' or 'evaluation': a call with gradients on or off (None: steps are not calls)

    @property
    def new(self) -> bool:
        return bool(self.first or self.recompiles or self.programs or self.limit)


@dataclasses.dataclass(frozen=True)
class SteadyState:
    """The verdict: ``kind`` (one of ``VERDICTS``); ``after``: the step after which nothing new came (steady, late: the
    late step; nothing: the warm-up's last step, or 0), ``"never"`` (keeps compiling, recurring, limit) or
    ``ONE_STEP``; ``side``: what keeps compiling ('dynamo', 'XLA', 'dynamo and XLA'); ``since``: the first step of
    the run that reaches the end; ``period``: k, for a new program every k steps; ``limit_step``: where dynamo gave
    up; ``tail``: the steps after the last counted one; ``counted``: the counted steps; ``functions``: what it names."""

    kind: str
    after: int | str
    side: str | None = None
    since: int | None = None
    functions: tuple[str, ...] = ()
    limit_step: int | None = None
    period: int | None = None
    tail: int | None = None
    counted: tuple[int, ...] = ()
    phase: str | None = None  # the sequence judged, when training and evaluation calls were judged apart

    @property
    def reached(self) -> bool:
        """Steady: nothing new for long enough (or nothing new at all)."""
        return self.kind in ("steady", "nothing")

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.kind]


@dataclasses.dataclass(frozen=True)
class NotSteady(Ruled):
    """ND411 as a finding: the loop never stopped compiling (its ``steady`` verdict keeps compiling or recurs), over
    ``steps`` steps (``unit``: 'step', or 'call' for a watched function). No line of its own: the causes have theirs."""

    RECORD: ClassVar[str] = "steady state"

    steady: SteadyState
    steps: int
    unit: str = "step"
    source: None = None

    def to_dict(self) -> dict[str, Any]:
        steady = self.steady
        return {
            "verdict": steady.kind,
            "side": steady.side,
            "since": steady.since,
            "period": steady.period,
            "steps": self.steps,
            "where": None,
        }


def not_steady(steady: SteadyState, steps: int, unit: str = "step") -> NotSteady | None:
    """The ND411 finding of a verdict, None when the loop settled (or stopped at the recompile limit: ND407)."""
    return NotSteady(steady, steps, unit) if steady.kind in NEVER_STEADY else None


def work_of(step: Step, kinds: Sequence[str]) -> StepWork:
    """A step's new work, from its compiles' kinds (``kinds[i]``: 'first', 'recompile', 'failed', 'recompile limit
    reached') and its XLA compiles."""
    mine = [kinds[i] for i in step.compiles]
    return StepWork(
        first=mine.count("first"),
        recompiles=mine.count("recompile") + mine.count("failed"),
        programs=step.xla_compiles or 0,
        limit="recompile limit reached" in mine,
        phase=step.phase,
    )


def _warm_up(number: int, work: StepWork) -> bool:
    """Warm-up: new work in the first steps but a recompile; a function's first compile, with its step's programs."""
    return not work.recompiles and not work.limit and (number <= WARM_UP_STEPS or work.first > 0)


def verdict(work: Sequence[StepWork]) -> SteadyState:
    """The rule (the module's docstring) on the steps' new work, in order: training and evaluation calls apart, the
    worse of their verdicts (training's on a tie), its steps numbered as the loop's."""
    phases = sorted(dict.fromkeys(step.phase for step in work), key=lambda phase: phase != "training")
    if len(phases) < 2:
        return _judged(work)
    judged = []
    for phase in phases:
        numbers = [number for number, step in enumerate(work, 1) if step.phase == phase]
        judged.append(_in_the_loop(_judged([work[number - 1] for number in numbers]), numbers, phase))
    return max(judged, key=lambda found: VERDICTS.index(found.kind))  # max keeps the first of equals


def _in_the_loop(found: SteadyState, numbers: Sequence[int], phase: str | None) -> SteadyState:
    """A sequence's verdict with its steps numbered as the loop's (its tail and period stay in its own steps)."""

    def at(step: Any) -> Any:
        return numbers[step - 1] if isinstance(step, int) and step > 0 else step

    return dataclasses.replace(
        found,
        after=at(found.after),
        since=at(found.since),
        limit_step=at(found.limit_step),
        counted=tuple(numbers[step - 1] for step in found.counted),
        phase=phase,
    )


def _judged(work: Sequence[StepWork]) -> SteadyState:
    """The rule on one sequence of steps."""
    n = len(work)
    if n == 0:
        return SteadyState("no step", ONE_STEP)
    limit = next((number for number, step in enumerate(work, 1) if step.limit), None)
    if limit is not None:
        return SteadyState("limit", "never", "dynamo", limit, ("the recompile limit",), limit_step=limit)
    if n == 1:
        return SteadyState("one step", ONE_STEP)
    new = [number for number, step in enumerate(work, 1) if step.new]
    counted = [number for number in new if not _warm_up(number, work[number - 1])]
    if not counted:
        return SteadyState("nothing", max(new, default=0))
    last, tail = counted[-1], n - counted[-1]
    side = _side([work[last - 1]])  # who made the last new work (XLA's programs follow dynamo's new graphs)
    if last == n and n - 1 in counted:
        alike = [number for number in counted if _side([work[number - 1]]) == side]
        return SteadyState("keeps compiling", "never", side, _run_start(alike, 1), tail=0, counted=tuple(counted))
    if tail == 1 and len(counted) >= 3 and counted[-3] == last - 2:  # one quiet step after work step after step
        return SteadyState("keeps compiling", "never", side, _run_start(counted, 1), tail=tail, counted=tuple(counted))
    period = _period(counted)
    if period is not None and tail < period:
        return SteadyState("recurring", "never", side, _run_start(counted, period), period=period, tail=tail, counted=tuple(counted))
    gaps = [later - earlier for earlier, later in zip(counted, counted[1:])]
    if tail >= max(gaps, default=1):
        return SteadyState("steady", last, tail=tail, counted=tuple(counted))
    if _after_a_steady_stretch(counted):
        return SteadyState("late", last, side, last, tail=tail, counted=tuple(counted))
    return SteadyState("keeps compiling", "never", side, counted[0], tail=tail, counted=tuple(counted))


def _after_a_steady_stretch(counted: Sequence[int]) -> bool:
    """Whether the last run of counted steps (consecutive, ending at the last) came after a steady stretch: at least
    two steps without counted work before it (since the counted step before, or the start), no fewer than the run is
    long, nor than the steps from the first counted step to that one (steady at least as long as it had compiled)."""
    start = len(counted) - 1
    while start > 0 and counted[start - 1] == counted[start] - 1:
        start -= 1
    previous = counted[start - 1] if start > 0 else 0
    quiet, run = counted[start] - previous - 1, len(counted) - start
    compiling = previous - counted[0] + 1 if start > 0 else 0
    return quiet >= max(2, run, compiling)


def _side(counted: Sequence[StepWork]) -> str:
    """'dynamo' when dynamo compiles among the counted steps (XLA's programs follow its new graphs), else 'XLA'."""
    return "dynamo" if any(w.first or w.recompiles for w in counted) else "XLA"


def _period(counted: Sequence[int]) -> int | None:
    """k when the last three counted steps are k > 1 apart."""
    if len(counted) < 3:
        return None
    first, second = counted[-2] - counted[-3], counted[-1] - counted[-2]
    return second if second > 1 and first == second else None


def _run_start(counted: Sequence[int], gap: int) -> int:
    """The first counted step of the run ``gap`` apart that reaches the last."""
    start = counted[-1]
    for earlier, later in zip(reversed(counted[:-1]), reversed(counted[1:])):
        if later - earlier != gap:
            break
        start = earlier
    return start


def steady_state(steps: Sequence[Step], kinds: Sequence[str]) -> SteadyState:
    """The verdict of a loop cut into ``steps`` (``kinds``: each compile's kind, by its position in the record)."""
    return verdict([work_of(step, kinds) for step in steps])


# --- what the XLA programs say --------------------------------------------------------------------
_GENERATE = "transformers/generation/utils.py"
_PER_SIZE = {"dynamo graph", "bridge sync", "input sync", "user sync"}  # what a dynamic graph's new size compiles


def program_advice(steps: Sequence[Step], steady: SteadyState, *, analysed: bool, unit: str = "step") -> list[Advice]:
    """Advice on XLA's side when XLA alone keeps compiling: from torch_xla's analysis of the programs of the steps that
    keep compiling (the growing lazy graph, a host read, transformers' stop check), or, without it, the counts. A
    step that ends with a sync of yours is never told to add one."""
    if steady.kind not in ("keeps compiling", "recurring") or steady.side != "XLA":
        return []
    late = [step for step in steps if steady.since is not None and step.number >= steady.since]
    programs = [program for step in late for program in step.programs]
    per_step = tuple(sorted({step.xla_compiles or 0 for step in late if step.compiled}))
    recurring = Recurring(per_step, steady.since, steady.period, unit)
    if not analysed:
        return [Advice("xla programs", recurring=recurring, analysed=False)]
    advice = []
    growing = _growing_inputs(programs)
    synced = any(program.kind == "user sync" for program in programs)
    if growing and not synced:
        trigger = next((program.source for program in programs if program.source is not None), None)
        advice.append(Advice("lazy state growing", recurring=recurring, inputs=tuple(growing), source=trigger))
    kinds = {program.kind for program in programs}
    if "dynamo graph" in kinds and kinds <= _PER_SIZE and not any(step.dynamo_compiles for step in late):
        # dynamo's graph is dynamic (dynamic=True, mark_dynamic) and compiled once; XLA compiles a program per concrete size
        trigger = next((program.source for program in programs if program.source is not None), None)
        advice.append(Advice("program per size", recurring=recurring, source=trigger))
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


def history(steps: Sequence[Step], kinds: Sequence[str]) -> list[dict[str, Any]]:
    """Each step's new work as plain data (the JSON's ``work``): what a user checks the rule against."""
    return [dataclasses.asdict(work_of(step, kinds)) for step in steps]
