"""The loop verdict against an oracle: hypothesis makes loop histories (which steps make which new work), and the one
verdict function must agree with a second, plain reading of the rule the loops page writes down."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from neurondev.loops.verdict import EXIT_CODES, VERDICTS, StepWork, verdict

EXITS = {"no step": 0, "one step": 0, "nothing": 0, "steady": 0, "late": 0, "recurring": 1, "keeps compiling": 1, "limit": 1}


SEVERITY = ("no step", "one step", "nothing", "steady", "late", "recurring", "keeps compiling", "limit")  # the page's order


def oracle(history: list[StepWork]) -> tuple[str, int | str | None, int | None]:
    """The rule of docs/how-to/loops.md, read plainly: (verdict, the step it names, the period). Training calls and
    evaluation calls are two sequences, each judged alone; the worse verdict is the loop's, training's on a tie."""
    phases = []
    for work in history:
        if work.phase not in phases:
            phases.append(work.phase)
    if len(phases) < 2:
        return one_sequence(history)
    if "training" in phases:
        phases.remove("training")
        phases.insert(0, "training")
    worst = None
    for phase in phases:
        numbers = [number for number in range(1, len(history) + 1) if history[number - 1].phase == phase]
        kind, step, period = one_sequence([history[number - 1] for number in numbers])
        if isinstance(step, int) and step > 0:
            step = numbers[step - 1]  # numbered as the loop's steps
        if worst is None or SEVERITY.index(kind) > SEVERITY.index(worst[0]):
            worst = (kind, step, period)
    return worst


def one_sequence(history: list[StepWork]) -> tuple[str, int | str | None, int | None]:
    """Rules 3-5 on one sequence of steps."""
    steps = len(history)
    if steps == 0:
        return "no step", None, None
    for number in range(1, steps + 1):
        if history[number - 1].limit:
            return "limit", None, None
    if steps == 1:
        return "one step", None, None
    counted = []
    warm_up_seen = 0
    for number in range(1, steps + 1):
        work = history[number - 1]
        anything_new = work.first > 0 or work.recompiles > 0 or work.programs > 0
        if not anything_new:
            continue
        # warm-up: no recompile, and either in the first two steps or a function's first compile (with its programs)
        if work.recompiles == 0 and (number in (1, 2) or work.first > 0):
            warm_up_seen = number
        else:
            counted.append(number)
    if counted == []:
        return "nothing", warm_up_seen, None
    last = counted[len(counted) - 1]
    tail = steps - last
    if last == steps and len(counted) >= 2 and counted[len(counted) - 2] == steps - 1:
        return "keeps compiling", None, None
    if len(counted) >= 3:
        a, b, c = counted[len(counted) - 3], counted[len(counted) - 2], counted[len(counted) - 1]
        if c - b == 1 and b - a == 1 and tail == 1:
            return "keeps compiling", None, None  # one quiet step after three in a row is the loop's last, no stretch
        if c - b == b - a and c - b > 1 and tail < c - b:
            return "recurring", None, c - b
    longest = 1
    for i in range(1, len(counted)):
        if counted[i] - counted[i - 1] > longest:
            longest = counted[i] - counted[i - 1]
    if tail >= longest:
        return "steady", last, None
    run_start = last  # the last run of consecutive counted steps
    while run_start - 1 in counted:
        run_start = run_start - 1
    before_run = [number for number in counted if number < run_start]
    previous = before_run[len(before_run) - 1] if before_run else 0
    without_work = run_start - previous - 1
    run_length = last - run_start + 1
    compiled_for = before_run[len(before_run) - 1] - before_run[0] + 1 if before_run else 0
    if without_work >= 2 and without_work >= run_length and without_work >= compiled_for:
        return "late", last, None  # a steady stretch (as long as it had compiled, at least), then the change
    return "keeps compiling", None, None


steps = st.builds(StepWork, first=st.integers(0, 2), recompiles=st.integers(0, 2), programs=st.integers(0, 3))  # the limit: below
quiet = st.just(StepWork())


@st.composite
def histories(draw) -> list[StepWork]:
    """A loop: warm-up work at the start, quiet steps, and new work at some steps (every step, every k steps, once late),
    as real loops make it: gradient accumulation (the optimizer's micro-step every m steps), logging every k steps
    that settles after a few, a checkpoint step, and evaluation calls interleaved with the training calls."""
    length = draw(st.integers(0, 40))
    history = [draw(st.one_of(quiet, quiet, steps)) for _ in range(length)]
    if length and draw(st.booleans()):  # new work every k steps from some step: recurring, or stopped
        k, start = draw(st.integers(2, 6)), draw(st.integers(1, length))
        stop = draw(st.integers(start, length))
        for number in range(start, stop + 1, k):
            history[number - 1] = StepWork(recompiles=draw(st.integers(0, 1)), programs=1)
    if length and draw(st.booleans()):  # gradient accumulation: the optimizer's step every m micro-steps compiles
        m = draw(st.integers(2, 8))
        settles = draw(st.one_of(st.none(), st.integers(1, 4)))  # after a few optimizer steps, or never
        for index, number in enumerate(range(m, length + 1, m)):
            if settles is None or index < settles:
                history[number - 1] = StepWork(programs=draw(st.integers(1, 2)))
    if length and draw(st.booleans()):  # a logging step every k steps (a host read): new programs its first times
        k, times = draw(st.integers(3, 10)), draw(st.integers(1, 3))
        for number in list(range(k, length + 1, k))[:times]:
            history[number - 1] = StepWork(programs=1)
    if length and draw(st.booleans()):  # a checkpoint step: once
        history[draw(st.integers(1, length)) - 1] = StepWork(programs=1)
    if length and draw(st.integers(0, 9)) == 0:
        at = draw(st.integers(1, length))
        history[at - 1] = StepWork(recompiles=1, limit=True)
    if length and draw(st.booleans()):  # epochs: training calls, then evaluation calls of the same function
        train, evaluate = draw(st.integers(1, 8)), draw(st.integers(1, 4))
        phases = (["training"] * train + ["evaluation"] * evaluate) * (length // (train + evaluate) + 1)
        history = [dataclasses.replace(work, phase=phase) for work, phase in zip(history, phases)]
    return history


@settings(max_examples=800, deadline=None)
@given(histories())
def test_the_verdict_is_the_written_rule(history):
    found = verdict(history)
    kind, step, period = oracle(history)
    assert found.kind == kind
    assert found.exit_code == EXITS[kind] == EXIT_CODES[kind]
    if kind in ("steady", "late", "nothing"):
        assert found.after == step
    if kind == "recurring":
        assert found.period == period
    if kind in ("keeps compiling", "recurring", "limit"):
        assert found.after == "never" and not found.reached


def test_every_verdict_class_has_an_exit_code_and_is_reached_by_a_history():
    examples = {
        "no step": [],
        "one step": [StepWork(first=1)],
        "nothing": [StepWork(first=1, programs=2), StepWork(programs=1), StepWork()],
        "steady": [StepWork(first=1), StepWork(), StepWork(recompiles=1), StepWork(), StepWork()],
        "late": [StepWork(first=1), StepWork(), StepWork(), StepWork(recompiles=1)],  # a short last batch, the last step
        "recurring": [StepWork(first=1)] + [StepWork(programs=1) if n % 4 == 0 else StepWork() for n in range(2, 15)],
        "keeps compiling": [StepWork(first=1)] + [StepWork(recompiles=1)] * 4,
        "limit": [StepWork(first=1), StepWork(recompiles=1), StepWork(limit=True)],
    }
    assert set(examples) == set(VERDICTS) == set(EXIT_CODES) == set(SEVERITY)
    for kind, history in examples.items():
        assert verdict(history).kind == kind, kind
        assert oracle(history)[0] == kind, kind


def epochs(training: list[StepWork], evaluation: list[StepWork], count: int) -> list[StepWork]:
    """``count`` epochs of these training calls, then these evaluation calls (one compiled function: a trainer's)."""
    train = [dataclasses.replace(work, phase="training") for work in training]
    evaluate = [dataclasses.replace(work, phase="evaluation") for work in evaluation]
    return (train + evaluate) * count


def test_a_loop_whose_training_keeps_compiling_fails_however_many_evaluation_calls_end_it():
    """A Trainer-style loop without a sync: new XLA programs on every training call but the first two, then two quiet
    evaluation calls per epoch. Judged as one sequence the quiet evaluations at the end made it `late` (exit 0)."""
    history = epochs([StepWork(programs=1)] * 5, [StepWork(), StepWork()], 3)
    found = verdict(history)
    assert (found.kind, found.phase, found.exit_code) == ("keeps compiling", "training", 1)
    assert found.counted[-1] == 19 and 20 not in found.counted  # the loop's step numbers: 20 and 21 are evaluations
    as_one = [dataclasses.replace(work, phase=None) for work in history]
    assert verdict(as_one).kind == "keeps compiling"  # no steady stretch before the last compile: never `late`


def test_evaluation_that_keeps_compiling_fails_a_loop_whose_training_settled():
    warm = epochs([StepWork(programs=1)] * 2 + [StepWork()] * 4, [StepWork(programs=1)] * 2, 1)
    history = warm + epochs([StepWork()] * 6, [StepWork(programs=1)] * 2, 2)
    found = verdict(history)
    assert (found.kind, found.phase, found.since) == ("keeps compiling", "evaluation", 15)  # its 3rd call, the loop's step 15
    assert found.counted == (15, 16, 23, 24)


def test_late_is_a_change_after_a_steady_stretch_and_compiling_to_near_the_end_is_not():
    late = [StepWork(first=1)] + [StepWork()] * 6 + [StepWork(recompiles=1)]
    assert (verdict(late).kind, verdict(late).after) == ("late", 8)
    near_the_end = [StepWork(first=1)] + [StepWork(programs=1)] * 10 + [StepWork()] + [StepWork(programs=1), StepWork()]
    assert verdict(near_the_end).kind == "keeps compiling"  # one quiet step is no steady stretch


# --- XLA's side: what the programs of the steps that keep compiling say ---------------------------------------------
def _step(number, *programs, compiles=()):
    from neurondev.loops.steps import Step
    from neurondev.runs.counts import Counts

    return Step(number, "train", tuple(compiles), 0, 0, Counts(compilations=len(programs)), None, tuple(programs), 0.0)


def _program(kind, inputs, graph_hash="h", at=None):
    """An XLA program of ``kind`` triggered at ``at`` ('train.py:7'), or at no line of the program's."""
    from neurondev.loops.steps import XlaProgram
    from neurondev.trace.source import SourceLine

    file, _, line = (at or ":0").rpartition(":")
    source = None if at is None else SourceLine(file, int(line), "step", "x.item()")
    return XlaProgram(kind, f"torch_xla's words for {kind}", graph_hash, inputs, 1, source)


def _advice(*steps):
    from neurondev.loops.verdict import SteadyState, program_advice

    steady = SteadyState("keeps compiling", "never", side="XLA", since=2, period=1)
    return program_advice(list(steps), steady, analysed=True)


def test_a_lazy_graph_whose_inputs_reach_a_new_high_twice_is_growing_state_with_each_high():
    (advice,) = _advice(
        _step(1, _program("bridge sync", 3)),  # before the run that keeps compiling: not its
        _step(2, _program("bridge sync", 22), _program("dynamo graph", 90)),  # dynamo's own graph never counts
        _step(3, _program("bridge sync", 22)),  # the same count again is no new high
        _step(4, _program("host read", 39)),
        _step(5, _program("bridge sync", 56)),
    )
    assert (advice.cause, advice.inputs, advice.recurring.per_step, advice.recurring.since) == (
        "lazy state growing",
        (22, 39, 56),
        (1, 2),
        2,
    )


def test_one_new_high_or_graphs_of_one_input_are_no_growing_state_and_a_user_sync_silences_it():
    from collections import Counter

    once = _advice(_step(2, _program("bridge sync", 22)), _step(3, _program("bridge sync", 22)))
    ones = _advice(_step(2, _program("bridge sync", 1)), _step(3, _program("bridge sync", 1)))
    both = _advice(_step(2, _program("bridge sync", 22)), _step(3, _program("bridge sync", 39)))
    assert (both[0].cause, both[0].inputs) == ("lazy state growing", (22, 39))
    synced = _advice(_step(2, _program("bridge sync", 22)), _step(3, _program("bridge sync", 39), _program("user sync", 2)))
    assert [a.cause for a in once] == [a.cause for a in ones] == [a.cause for a in synced] == ["xla programs"]
    assert once[0].programs == (("bridge sync", 2),) and ones[0].inputs == () and synced[0].inputs == ()
    assert dict(synced[0].programs) == Counter({"bridge sync": 2, "user sync": 1})


def test_the_programs_are_counted_by_their_triggers_kind_in_the_order_first_seen():
    (advice,) = _advice(
        _step(2, _program("input sync", None), _program("bridge sync", None)),
        _step(3, _program("bridge sync", None), _program("input sync", None), _program("bridge sync", None)),
    )
    assert (advice.cause, advice.programs) == ("xla programs", (("input sync", 2), ("bridge sync", 3)))


def test_each_steps_new_work_is_plain_data_by_the_kinds_of_its_compiles():
    from neurondev.loops.verdict import history

    kinds = ["first", "recompile", "failed", "recompile limit reached", "first"]
    steps = [_step(1, _program("dynamo graph", 2), compiles=(0,)), _step(2, compiles=(1, 2)), _step(3, compiles=(3, 4)), _step(4)]
    assert history(steps, kinds) == [
        {"first": 1, "recompiles": 0, "programs": 1, "limit": False, "phase": None},
        {"first": 0, "recompiles": 2, "programs": 0, "limit": False, "phase": None},
        {"first": 1, "recompiles": 0, "programs": 0, "limit": True, "phase": None},
        {"first": 0, "recompiles": 0, "programs": 0, "limit": False, "phase": None},
    ]


def test_graphs_of_one_input_never_count_as_growth_and_two_inputs_do():
    one_then = _advice(_step(2, _program("bridge sync", 1)), _step(3, _program("bridge sync", 22)))
    two_then = _advice(_step(2, _program("bridge sync", 2)), _step(3, _program("bridge sync", 5)))
    assert [a.cause for a in one_then] == ["xla programs"]  # 1 is no state carried: one high (22) is not growth
    assert [(a.cause, a.inputs) for a in two_then] == [("lazy state growing", (2, 5))]


def test_xlas_advice_comes_only_when_xla_alone_never_settles_and_says_its_unit():
    from neurondev.loops.verdict import SteadyState, program_advice

    steps = [_step(2, _program("bridge sync", 22)), _step(3, _program("bridge sync", 39)), _step(4, compiles=(0,))]
    recurring = SteadyState("recurring", "never", side="XLA", since=2, period=2)
    (advice,) = program_advice(steps, recurring, analysed=True)
    assert (advice.cause, advice.recurring.unit, advice.recurring.period) == ("lazy state growing", "step", 2)
    assert advice.recurring.per_step == (0, 1)  # step 4 compiled in dynamo alone: no XLA program
    (called,) = program_advice(steps, recurring, analysed=False, unit="call")
    assert (called.cause, called.analysed, called.recurring.unit) == ("xla programs", False, "call")
    for settled in (SteadyState("steady", 3), SteadyState("keeps compiling", "never", side="dynamo", since=2)):
        assert program_advice(steps, settled, analysed=True) == []


def test_a_loop_that_never_settles_is_nd411_with_its_steps_and_unit_and_one_that_settles_or_stops_is_not():
    from neurondev.loops.verdict import NotSteady, SteadyState, not_steady

    keeps = SteadyState("keeps compiling", "never", side="XLA", since=3)
    found = not_steady(keeps, 12, "call")
    assert found == NotSteady(keeps, 12, "call") and (found.steps, found.unit, found.rule) == (12, "call", "ND411")
    assert found.to_dict() == {"verdict": "keeps compiling", "side": "XLA", "since": 3, "period": None, "steps": 12, "where": None}
    recurring = SteadyState("recurring", "never", side="dynamo", since=4, period=4)
    assert not_steady(recurring, 9).to_dict()["period"] == 4 and not_steady(recurring, 9).unit == "step"
    for settled in ("steady", "late", "nothing", "limit", "one step", "no step"):
        assert not_steady(SteadyState(settled, 1), 9) is None


def test_a_growing_graph_is_told_at_the_first_line_that_triggered_a_program():
    (advice,) = _advice(
        _step(2, _program("bridge sync", 22)), _step(3, _program("input sync", 39, at="train.py:7"), _program("host read", 3))
    )
    assert (advice.cause, advice.where) == ("lazy state growing", "train.py:7")


def test_a_dynamic_graph_compiled_once_is_a_program_per_size_at_its_trigger_and_a_dynamo_recompile_is_not():
    per_size = [
        _step(2, _program("dynamo graph", None), _program("input sync", None, at="train.py:9")),
        _step(3, _program("dynamo graph", None)),
    ]
    (advice,) = _advice(*per_size)
    assert (advice.cause, advice.where, advice.recurring.since) == ("program per size", "train.py:9", 2)
    every_kind = [_step(2, *(_program(kind, None) for kind in ("dynamo graph", "bridge sync", "input sync", "user sync")))]
    assert [a.cause for a in _advice(*every_kind)] == ["program per size"]  # every kind a new size compiles, and no other
    recompiled = [per_size[0], _step(3, _program("dynamo graph", None), compiles=(1,))]
    assert [a.cause for a in _advice(*recompiled)] == ["xla programs"]  # dynamo compiled again: not one graph for every size
    other = [_step(2, _program("dynamo graph", None), _program("parameter update", None))]  # a kind beyond a size's
    assert [a.cause for a in _advice(*other)] == ["xla programs"]
    only_syncs = [_step(2, _program("input sync", None)), _step(3, _program("bridge sync", None))]  # no dynamo graph at all
    assert [a.cause for a in _advice(*only_syncs)] == ["xla programs"]


def test_a_host_read_is_told_at_its_line_and_transformers_stop_check_by_name():
    reads = [
        _step(2, _program("host read", None), _program("host read", None, at="train.py:11"), _program("host read", None, at="eval.py:3"))
    ]
    (advice,) = _advice(*reads)
    assert (advice.cause, advice.where) == ("host read", "train.py:11")  # the first read with a line of the program's
    generate = "/site-packages/transformers/generation/utils.py:2600"
    (stop,) = _advice(_step(2, _program("host read", None, at="train.py:11"), _program("host read", None, at=generate)))
    assert (stop.cause, stop.file) == ("stop check", "/site-packages/transformers/generation/utils.py")
    windows = "C:\\env\\Lib\\site-packages\\transformers\\generation\\utils.py:2600"
    (stop,) = _advice(_step(2, _program("host read", None, at=windows)))
    assert stop.cause == "stop check"
    assert [a.cause for a in _advice(_step(2, _program("input sync", None, at="train.py:4")))] == ["xla programs"]  # no host read


def test_who_keeps_compiling_and_since_when_are_read_off_the_steps():
    dynamo, xla, quiet = StepWork(recompiles=1), StepWork(programs=1), StepWork()
    run_of_three = verdict([StepWork(first=1), quiet, xla, xla, xla])
    assert (run_of_three.kind, run_of_three.side, run_of_three.since) == ("keeps compiling", "XLA", 3)
    broken_run = verdict([StepWork(first=1), quiet, dynamo, quiet, quiet, dynamo, dynamo])
    assert (broken_run.kind, broken_run.side, broken_run.since) == ("keeps compiling", "dynamo", 6)
    xla_after_dynamo = verdict([StepWork(first=1), quiet, quiet, dynamo, xla])  # the last step's side alone
    assert (xla_after_dynamo.kind, xla_after_dynamo.side, xla_after_dynamo.since) == ("keeps compiling", "XLA", 5)
    late = verdict([StepWork(first=1), quiet, xla, quiet, quiet, xla, quiet])
    assert (late.kind, late.side) == ("late", "XLA")


def test_every_advice_of_xlas_says_how_its_programs_recur():
    from neurondev.loops.verdict import SteadyState, program_advice

    steady = SteadyState("recurring", "never", side="XLA", since=2, period=3)
    generate = "/site-packages/transformers/generation/utils.py:2600"
    for programs, cause in (
        ([_program("host read", None, at=generate)], "stop check"),
        ([_program("host read", None, at="train.py:11")], "host read"),
        ([_program("input sync", None)], "xla programs"),
    ):
        (advice,) = program_advice([_step(2, *programs), _step(5, *programs)], steady, analysed=True)
        assert (advice.cause, advice.recurring.since, advice.recurring.period, advice.recurring.per_step) == (cause, 2, 3, (1,))


def test_each_verdict_without_a_run_is_the_whole_steady_state_the_rule_gives():
    from neurondev.loops.verdict import ONE_STEP, SteadyState

    quiet, xla, dynamo = StepWork(), StepWork(programs=1), StepWork(recompiles=1)
    assert verdict([]) == SteadyState("no step", ONE_STEP)
    assert verdict([StepWork(first=1)]) == SteadyState("one step", ONE_STEP)
    limit = verdict([StepWork(first=1), dynamo, StepWork(recompiles=1, limit=True), quiet])
    assert limit == SteadyState("limit", "never", "dynamo", 3, ("the recompile limit",), limit_step=3)
    steady = verdict([StepWork(first=1), quiet, dynamo, quiet, quiet])
    assert steady == SteadyState("steady", 3, tail=2, counted=(3,))
    late = verdict([StepWork(first=1), quiet, xla, quiet, quiet, quiet, dynamo, xla, quiet])  # the side of step 8, not 7
    assert late == SteadyState("late", 8, "XLA", 8, tail=1, counted=(3, 7, 8))


def test_a_loop_that_keeps_compiling_or_recurs_is_the_whole_steady_state_the_rule_gives():
    from neurondev.loops.verdict import SteadyState

    quiet, xla = StepWork(), StepWork(programs=1)
    keeps = verdict([StepWork(first=1), quiet, xla, xla, xla])
    assert keeps == SteadyState("keeps compiling", "never", "XLA", 3, tail=0, counted=(3, 4, 5))
    every_fourth = [StepWork(first=1)] + [StepWork(recompiles=1) if n % 4 == 0 else quiet for n in range(2, 15)]
    recurring = verdict(every_fourth)
    assert recurring == SteadyState("recurring", "never", "dynamo", 4, period=4, tail=2, counted=(4, 8, 12))
