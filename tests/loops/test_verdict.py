"""The loop verdict against an oracle: hypothesis makes loop histories (which steps make which new work), and the one
verdict function must agree with a second, plain reading of the rule the loops page writes down."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from neurondev.loops.verdict import EXIT_CODES, VERDICTS, StepWork, verdict

EXITS = {"no step": 0, "one step": 0, "nothing": 0, "steady": 0, "late": 0, "recurring": 1, "keeps compiling": 1, "limit": 1}


def oracle(history: list[StepWork]) -> tuple[str, int | str | None, int | None]:
    """The rule of docs/how-to/loops.md, read plainly: (verdict, the step it names, the period)."""
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
        if c - b == b - a and c - b > 1 and tail < c - b:
            return "recurring", None, c - b
    longest = 1
    for i in range(1, len(counted)):
        if counted[i] - counted[i - 1] > longest:
            longest = counted[i] - counted[i - 1]
    return ("steady" if tail >= longest else "late"), last, None


steps = st.builds(StepWork, first=st.integers(0, 2), recompiles=st.integers(0, 2), programs=st.integers(0, 3))  # the limit: below
quiet = st.just(StepWork())


@st.composite
def histories(draw) -> list[StepWork]:
    """A loop: warm-up work at the start, quiet steps, and new work at some steps (every step, every k steps, once late)."""
    length = draw(st.integers(0, 40))
    history = [draw(st.one_of(quiet, quiet, steps)) for _ in range(length)]
    if length and draw(st.booleans()):  # new work every k steps from some step: recurring, or stopped
        k, start = draw(st.integers(2, 6)), draw(st.integers(1, length))
        stop = draw(st.integers(start, length))
        for number in range(start, stop + 1, k):
            history[number - 1] = StepWork(recompiles=draw(st.integers(0, 1)), programs=1)
    if length and draw(st.integers(0, 9)) == 0:
        at = draw(st.integers(1, length))
        history[at - 1] = StepWork(recompiles=1, limit=True)
    return history


@settings(max_examples=600, deadline=None)
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
    assert set(examples) == set(VERDICTS) == set(EXIT_CODES)
    for kind, history in examples.items():
        assert verdict(history).kind == kind, kind
        assert oracle(history)[0] == kind, kind
