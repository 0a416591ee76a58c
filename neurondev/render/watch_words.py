"""A watch's findings in words: the cause of each compile, a new XLA program, the advice, its check and the gaps, from
their kinds and facts (the records hold no sentence)."""

from __future__ import annotations

from collections.abc import Sequence

from neurondev.loops.causes import GRAD_MODE, Advice, AdviceCheck, Cause, Recurring
from neurondev.loops.record import Gap
from neurondev.loops.steps import XlaProgram
from neurondev.loops.verdict import NotSteady
from neurondev.loops.workers import Workers
from neurondev.render.describe import at_line, describe

__all__ = [
    "advice_check_text",
    "advice_text",
    "cause_text",
    "cause_words",
    "gap_text",
    "never_steady_text",
    "recurring_text",
    "workers_text",
    "xla_program_text",
]

_DYNAMO = {
    "python number": "pass {value} as a tensor (torch.tensor({value}) on the device, updated in place) so the graph reads it "
    "instead of baking it in, or keep it constant",
    "cache growth": "{value} grows by one position per call (a cache or a sequence): a new shape every step: use a static cache "
    "(cache_implementation='static' in transformers generate, or a preallocated buffer written at an index)",
    "changing size": "{value} takes {count} sizes ({sizes}): pad to a few bucket sizes ({buckets}), or drop the short last batch "
    "(DataLoader(drop_last=True)){mark_dynamic}",
    "recompile limit": "from here the function runs uncompiled: every op is traced lazily on XLA on every call; raising "
    "torch._dynamo.config.recompile_limit only delays the cost: remove the cause of the recompiles above",
    "flag": "{value} takes two values: that is two graphs, compiled once each (expected); to keep them apart "
    "compile the train and the eval step as two functions (a flag passed as a tensor would not be a bool any more)",
    "library value": "{value} is the library's own state, not yours to make a tensor: the line of yours that takes this branch is "
    "where it is called{read}; if each call changes it, report it to the library (a guard on its internal value recompiles every call)",
}
_MARK_DYNAMIC_XLA = "; torch._dynamo.mark_dynamic saves dynamo's retrace only, XLA still compiles one program per size"
_MARK_DYNAMIC_NATIVE = "; or torch._dynamo.mark_dynamic on it (one graph for every size)"
_UNANALYSED = (
    "the lazy graph differs {when}, most often state no torch_xla.sync() cuts (call it at the end of each step) or a host read "
    "of a growing tensor; torch_xla's own analysis of each compile names the trigger: run the loop with `neurondev watch script.py`, "
    "or set PT_XLA_DEBUG_LEVEL=2 and PT_XLA_DEBUG_FILE before the first XLA compile"
)
_STOP_CHECK = (
    "transformers' own stop check ({where}: bool(unfinished_sequences.max() == 0)) reads, every token, a value made from input_ids, "
    "which grows by one token a step: a new program each step (and the bridge syncs the forward's inputs). A decode loop of your own "
    "over a preallocated token buffer (written at an index: fixed shapes), reading its stop condition every N steps, avoids it; "
    "generate cannot"
)


def advice_text(advice: Advice) -> str:
    """What to write instead, in words: dynamo's side prefixed with the function, XLA's with how its programs recur."""
    if advice.recurring is not None:
        return f"XLA compiles {recurring_text(advice.recurring)}{_program_words(advice)}"
    template = _DYNAMO.get(advice.cause)
    if template is None:
        return f"{advice.function}: {advice.cause}"
    read = f" (dynamo read it at {advice.where})" if advice.source is not None else ""
    words = template.format(
        value=advice.value,
        count=len(advice.sizes),
        sizes=", ".join(map(str, advice.sizes)),
        buckets=", ".join(map(str, advice.buckets)),
        read=read,
        mark_dynamic=_MARK_DYNAMIC_XLA if advice.on_xla else _MARK_DYNAMIC_NATIVE,
    )
    return f"{advice.function}: {words}"


def _program_words(advice: Advice) -> str:
    source = advice.source
    if not advice.analysed:
        period = advice.recurring.period if advice.recurring is not None else None
        return ": " + _UNANALYSED.format(when=f"every {period} {advice.recurring.unit}s" if period and advice.recurring else "every step")
    if advice.cause == "lazy state growing":
        shown = ", ".join(map(str, advice.inputs[:6])) + (", ..." if len(advice.inputs) > 6 else "")
        at = f" (triggered at {source.where}: `{source.code}`)" if source is not None else ""
        return (
            f"{at} and the lazy graph keeps growing (its inputs reach {shown}): it carries state across steps that no sync cuts: "
            "call torch_xla.sync() (or xm.mark_step()) at the end of each step"
        )
    if advice.cause == "stop check":
        return ": " + _STOP_CHECK.format(where=source.where if source is not None else "generate")
    if advice.cause == "program per size":
        at = f" (run at {source.where})" if source is not None else ""
        return (
            f"{at}: dynamo's graph is dynamic and compiled once, and XLA compiles a program for each size it runs at: "
            "pad the sizes to a few buckets (16, 32, 64 ...), or batch them to fixed shapes; a sync per step would not help"
        )
    if advice.cause == "number in program" and source is not None:
        return (
            f": a Python number at {source.where} (`{source.code}`) is a constant of each program ({advice.value}): a new program "
            "for each value: keep it on the device (a tensor made once and updated there: position = position + 1)"
        )
    if advice.cause == "size in program" and source is not None:
        return (
            f": a tensor made at {source.where} (`{source.code}`) changes size step after step ({advice.value}): a new program "
            "for each size: write into a preallocated buffer at an index (tokens.index_copy_(1, position, token))"
        )
    if advice.cause == "host read" and source is not None:
        return (
            f": a host read of a lazy value at {source.where} (`{source.code}`) compiles and runs the pending graph there: "
            "keep the value on the device, or read it after torch_xla.sync()"
        )
    named = ", ".join(f"{n} x {kind}" for kind, n in advice.programs) or "no analysis of them was written"
    return f": {named}"


def recurring_text(recurring: Recurring) -> str:
    """'1/2 program(s) on every step from step 3', or 'a new program every 4 steps from step 2'."""
    unit, since = recurring.unit, recurring.since
    if recurring.period is not None:
        return f"a new program every {recurring.period} {unit}s from {unit} {since}"
    return f"{'/'.join(map(str, recurring.per_step))} program(s) on every {unit} from {unit} {since}"


def advice_check_text(check: AdviceCheck | None) -> str:
    """How the second run with the fix applied went, in words ('not verified' when none ran)."""
    if check is None:
        return "not verified"
    if check.kind == "verified":
        return (
            f"verified: run again with torch_xla.sync() at the end of each step, it was steady after step {check.steady} of {check.steps}"
        )
    if check.kind == "not enough":
        return f"checked, not enough: with a sync per step it still compiles from step {check.since} of {check.steps}"
    return "not verified: the run with a sync per step did not finish"


def gap_text(gap: Gap) -> str:
    """What a watch's figures leave out, and why, in words."""
    if gap.kind == "torch_xla not loaded":
        return "torch_xla was not loaded by the watched code: XLA figures are empty"
    if gap.kind == "analysis to stderr":
        return "torch_xla's analysis is on but printed to stderr (set PT_XLA_DEBUG_FILE too, before the first XLA compile)"
    return (
        "torch_xla's compilation analysis is off in this process: each step's XLA compiles are counted, not their causes "
        "(run the loop with `neurondev watch script.py`, or set PT_XLA_DEBUG_LEVEL=2 and PT_XLA_DEBUG_FILE before the first XLA compile)"
    )


def never_steady_text(found: NotSteady) -> str:
    """'No steady state: dynamo keeps compiling from step 3 to the end (step 12).', or a program every k steps."""
    steady, unit = found.steady, found.unit
    if steady.kind == "recurring":
        return (
            f"No steady state: {steady.side} compiles a new program every {steady.period} {unit}s from {unit} {steady.since}; the "
            f"{steady.tail} {unit}(s) after the last are fewer than {steady.period}, so the next comes after the end."
        )
    if steady.tail:  # new work until near the end, no steady stretch before it
        return (
            f"No steady state: {steady.side} compiles new work from {unit} {steady.since} to {unit} {steady.counted[-1]}, with no "
            f"steady stretch before it, and the {steady.tail} {unit}(s) after it (to {unit} {found.steps}) are fewer than the "
            "longest gap between its new work: too few to tell it stopped."
        )
    return f"No steady state: {steady.side} keeps compiling from {unit} {steady.since} to the end ({unit} {found.steps})."


_DECODE_WORDS = "the prompt, then one token a step: the second call is the decode step's own graph (expected, once)"


def cause_words(cause: Cause) -> str:
    """Why one compile happened, in words, from its kind and facts (without its line)."""
    name, before, after = cause.value, cause.before, cause.after
    now = f" and is {after}" if after else ""
    if cause.kind == "recompile limit":
        return f"dynamo's recompile limit ({cause.limit}) is reached: the function runs uncompiled from here on"
    if cause.kind == "first compile":
        return "first compile"
    if cause.dim is not None:
        words = f"{name} changed {cause.measure} at dimension {cause.dim}: {before} -> {after}"
        return f"{words}: {_DECODE_WORDS}" if cause.kind == "prompt to decode" else words
    if cause.measure == "len":
        return (
            _DECODE_WORDS if cause.kind == "prompt to decode" else f"len({name}) was {before} when traced: the call passes other values now"
        )
    if cause.kind == "flag" and cause.value == GRAD_MODE:
        return "gradients turned on or off (training and evaluation calls): one graph each, compiled once each (expected)"
    if cause.kind == "flag":
        return f"{name} was {before} when traced{now}: a flag (train/eval, a switch) gives one graph per value"
    if cause.kind == "library value":
        return f"{name}, a value {cause.library} keeps, was {before} when traced{now}: {cause.library} guards on it"
    if cause.kind == "python number":
        return f"{name} was {before} when traced{now}: a Python number burned into the graph"
    return cause.guard or "recompiled (no reason given)"


@describe.register
def cause_text(cause: Cause) -> str:
    return f"{cause.kind}: {cause_words(cause)}{at_line(cause)}"


describe.register(Advice)(advice_text)
describe.register(AdviceCheck)(advice_check_text)
describe.register(Gap)(gap_text)
describe.register(NotSteady)(never_steady_text)


@describe.register
def xla_program_text(program: XlaProgram) -> str:
    return f"a new XLA program ({program.kind}): {program.cause}{at_line(program)}"


def workers_text(workers: Sequence[Workers]) -> str:
    """The worker processes the script started, said as not watched, with what to do instead (empty: none)."""
    if not workers:
        return ""
    count = sum(started.count for started in workers)
    first = workers[0]
    at = f" at {first.source.where}" if first.source is not None else ""
    return (
        f"The script started {count} worker process(es) with torch.multiprocessing ({first.method}: {first.function}{at}): what they "
        "compile is not watched here (their own processes): run neurondev.watch() inside the worker function, or start the "
        "workers with torchrun, whose ranks neurondev watch follows. "
    )
