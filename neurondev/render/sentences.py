"""The sentence a user reads for each record: one ``describe(record)``, the records themselves plain data."""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Sequence
from typing import Any

from neurondev.devices.runtimes import RuntimeChoice
from neurondev.errors import InvalidOptionError
from neurondev.fx.kernels import CpuKernel
from neurondev.fx.pins import DevicePin
from neurondev.loops.causes import Advice, AdviceCheck, Cause
from neurondev.loops.record import Gap
from neurondev.loops.steps import XlaProgram
from neurondev.loops.verdict import NotSteady
from neurondev.render.fix_words import CPU_KERNEL_FIX, fallback_advice, fix_for, host_value_fix
from neurondev.render.watch_words import advice_check_text, advice_text, gap_text, never_steady_text
from neurondev.report.findings import Finding
from neurondev.report.fixes.records import Fix, FixCheck, SpellingNote
from neurondev.report.skips import Skip
from neurondev.report.transfers import CopySite
from neurondev.report.verdicts import Verdict
from neurondev.rulebook import rule_named
from neurondev.runs.first_difference import NodeDifference
from neurondev.runs.program_records import ProgramFailure, ProgramRun
from neurondev.runs.reasons import NotCompared
from neurondev.runs.run_records import Fallback, GraphBreak, HostCopy, RunError, RunRecord, place_of
from neurondev.runs.traces import LineDifference, TraceComparison
from neurondev.runs.values import Comparison, LeftOut, Mismatch
from neurondev.trace.capture import NO_GRAPH_WORDS, DynamoBreak
from neurondev.trace.capture_notes import CaptureNote
from neurondev.trace.inputs import HostValue

__all__ = [
    "capture_note_text",
    "cause_words",
    "check_text",
    "describe",
    "left_out_text",
    "mismatch_text",
    "finding_detail",
    "finding_fix",
    "not_compared_text",
    "note_text",
    "reason_text",
    "runtime_info_text",
    "runtime_text",
    "skip_text",
    "unseen_text",
    "values_text",
    "verdict_text",
    "why_text",
]


@functools.singledispatch
def describe(record: Any) -> str:
    """The sentence neurondev prints for ``record``: a run, a program run or its failure, a comparison
    of values, a verdict, a fix, a host value, a check's finding, a trace comparison or a difference."""
    kinds = ", ".join(sorted(cls.__name__ for cls in describe.registry if cls is not object))
    raise InvalidOptionError(
        f"neurondev.describe takes one of neurondev's records ({kinds}), not {type(record).__name__}; "
        "an Explanation or a Watch says its own: ex.summary()"
    )


_MISMATCH = {
    "count": "outputs DIFFER in structure: {left} vs {right} values",
    "value": "values DIFFER at {where}: {left} vs {right}",
    "type": "outputs DIFFER at {where}: {left} vs {right}",
    "shape": "shapes DIFFER at {where}: {left} vs {right}",
    "dtype": "dtypes DIFFER at {where}: {left} vs {right}",
}


@describe.register
def mismatch_text(mismatch: Mismatch) -> str:
    """'shapes DIFFER at output[0]: (2, 3) vs (3, 2)': what differs before any value does."""
    said = _MISMATCH[mismatch.kind].format(where=mismatch.where, left=mismatch.left, right=mismatch.right)
    return said + (f" ({', '.join(mismatch.only)} on one side only)" if mismatch.only else "")


def left_out_text(left_out: Sequence[LeftOut]) -> str:
    """ "output['cache'] (a Lock: no tensor in it, and nothing to compare it by)", each output left out, joined."""
    return ", ".join(
        f"{item.where} (a {item.held}: no tensor in it, and nothing to compare it by)"
        if item.where is not None
        else "nothing to compare: no tensor, no value"
        for item in left_out
    )


@describe.register
def comparison_text(comparison: Comparison) -> str:
    """'equal', 'equal within tolerance (max abs 5e-05, ...)', 'DIFFER (3 of 64 elements off, ...)',
    'shapes DIFFER: ...' when the outputs are not even alike, or 'not compared (why)'."""
    c = comparison
    figures = f"max abs {c.max_abs_error:.3g}, max rel {c.max_rel_error:.3g}"
    left = f"; not compared: {left_out_text(c.left_out[:3])}" if c.left_out else ""
    if c.status == "not compared":
        return f"not compared ({left_out_text(c.left_out) or 'nothing to compare'})"
    if c.structure is not None:
        return mismatch_text(c.structure) + left
    if c.status == "equal":
        return "equal" + left
    if c.status == "within tolerance":
        return f"equal within tolerance ({figures}){left}"
    return f"DIFFER ({c.elements_off} of {c.elements} elements off; {figures}){left}"


@describe.register
def run_error_text(error: RunError) -> str:
    return str(error)


@describe.register
def host_value_text(value: HostValue) -> str:
    article = "an" if value.kind == "attribute" else "a"
    return f"{value.origin} ({article} {value.kind}, on {value.device}, used at {value.where})"


@describe.register
def node_difference_text(difference: NodeDifference) -> str:
    inside = f", in {difference.module}" if difference.module else ""
    compared = difference.comparison
    figures = f"max abs {compared.max_abs_error:.2g}" if compared.structure is None else mismatch_text(compared.structure)
    return f"{difference.node} ({difference.function}, {difference.where}{inside}): {figures}"


@describe.register
def line_difference_text(difference: LineDifference, place: str = "XLA") -> str:
    return f"{difference.where} `{difference.code}`: CPU trace {list(difference.cpu_ops)}, {place} trace {list(difference.xla_ops)}"


@describe.register
def traces_text(traces: TraceComparison) -> str:
    """Whether the CPU trace, rewritten, is the native one; else what differs, and where."""
    place = place_of(traces.native.device)
    if traces.agree:
        return (
            f"{traces.name}: the CPU trace, rewritten, is the graph traced natively on {place} ({len(traces.rewritten_is_native)} graph(s))"
        )
    if not traces.differences and not traces.only_in_cpu and not traces.only_in_xla and not traces.native_error:
        return (
            f"{traces.name}: no line is traced differently on {place}, but the rewritten CPU graph is not the native one: "
            "the native trace keeps device arguments of its own (a literal device such as 'cpu' or .cpu())"
        )
    parts = [f"{len(traces.differences)} line(s) traced differently on {place} (device-specialised code)"]
    if traces.only_in_cpu or traces.only_in_xla:
        parts.append(f"graphs {len(traces.cpu.graphs)} on CPU vs {len(traces.native.graphs)} on {place}")
    if traces.native_error:
        failure = traces.native_failure
        where = f" at {failure.where}" if failure is not None and failure.source is not None else ""
        kind = f"{failure.kind}: " if isinstance(failure, ProgramFailure) else ""  # its line is said once, here
        parts.append(f"the native trace fails to run{where}: {kind}{traces.native_error}")
    lines = "; ".join(line_difference_text(d, place) for d in traces.differences[:3])
    return f"{traces.name}: " + ", ".join(parts) + (f". {lines}" if lines else "")


_WHEN = {
    "compile": "at compile time",
    "graph": "while a compiled graph ran",
    "python": "in the code between graphs",
    "inputs": "before it ran: its inputs cannot move to the device",
}


@describe.register
def program_failure_text(failure: ProgramFailure) -> str:
    where = f" at {failure.where} (`{failure.code}`)" if failure.source is not None else ""
    again = f" on call {failure.call}" if failure.call > 1 else ""
    return f"fails {_WHEN[failure.stage]}{again}{where}: {failure.kind}: {failure.error}"


@describe.register
def program_text(run: ProgramRun) -> str:
    """One line: fails (where, why), or runs with its per-call figures and how it compares with CPU."""
    if run.failure is not None:
        return program_failure_text(run.failure)
    steady = f"{run.transfers_to_host} transfer(s) to the host per call"
    if run.stack == "native":
        steady = native_costs_text(run) + " per call"
    again = ", compiles again on the second call" if run.recompiled else ""
    joint = "but" if run.matches_cpu is False else "and" if run.matches_cpu else "with"
    return f"runs ({run.graphs} graph(s), {steady}{again}) {joint} {values_text(run)}"


def lines_text(located: Sequence[Any]) -> str:
    """' (model.py:9, model.py:12)': the lines records were seen at, each once, or '' when none has a line."""
    wheres = list(dict.fromkeys(item.where for item in located if item.source is not None))
    return f" ({', '.join(wheres[:3])}{', ...' if len(wheres) > 3 else ''})" if wheres else ""


def native_costs_text(run: ProgramRun) -> str:
    """'1 copy(ies) to the host (f.py:9), 1 to the device (f.py:10), 0 sync(s), 1 CPU fallback(s) (aten::index_select at f.py:9)'."""
    call = run.calls[-1] if run.calls else None
    if call is None:
        return "nothing measured"
    at = lines_text
    copies = [c for c in call.host_copies if c.transfers_to_host]
    syncs = [c for c in call.host_copies if c.syncs]
    fallbacks = ", ".join(f"{f.op} at {f.where}" for f in call.fallbacks[:3]) + (", ..." if len(call.fallbacks) > 3 else "")
    return (
        f"{call.transfers_to_host} copy(ies) to the host{at(copies)}, {call.transfers_to_device} to the device{at(call.uploads)}, "
        f"{call.syncs} sync(s){at(syncs)}, {call.fallback_calls} CPU fallback(s)" + (f" ({fallbacks})" if fallbacks else "")
    )


_DRAWS = {
    "moved": "draws on the host before the pass and on {device} after",
    "device": "draws from {device}'s generator, which is not CPU's",
    "cpu": "draws from the CPU's generator, seeded as CPU's run was; compiled code may draw in another order",
}


def reason_text(reason: NotCompared) -> str:
    """Why values were not compared, in words (a clause: 'the program failed')."""
    kind = reason.kind
    if kind == "graph failed":
        on = f" on {reason.device}" if reason.device else ""
        return f"the {reason.graph} graph failed{on} at {reason.node}"
    if kind == "random":
        more = f" and {reason.more} more" if reason.more else ""
        draws = _DRAWS[reason.draws or "device"].format(device=reason.device or "the device")
        return f"random node {reason.node} ({reason.where or 'no source line'}){more} {draws}"
    if kind == "left out":
        return left_out_text(reason.left_out)
    said = {
        "no cpu run": f"the graph does not run on CPU ({reason.error})",
        "no cpu result": "there is no CPU result to compare with",
        "program failed": "the program failed",
        "program did not run": f"the program did not run ({reason.error})" if reason.error else "the program did not run",
    }
    return said.get(kind, kind)


def not_compared_text(reason: NotCompared | None) -> str:
    """'values not compared: ...' (or 'not comparable', for random values), with the reason in words."""
    if reason is None:
        return "values not compared"
    return f"values {'not compared' if reason.comparable else 'not comparable'}: {reason_text(reason)}"


def values_text(run: ProgramRun) -> str:
    """How a program run's outputs, and what it writes, compare with CPU."""
    if run.state is not None and run.state.matches is False:
        return f"DIFFERS from CPU in what it writes ({comparison_text(run.state)})"
    compared = run.comparison
    if compared is None:
        return not_compared_text(run.not_compared)
    if compared.matches is None:
        return f"values {comparison_text(compared)}"
    if compared.matches:
        left = f" (not compared: {left_out_text(compared.left_out[:2])})" if compared.left_out else ""
        return f"agrees with CPU{left}"
    if compared.structure is not None:
        return f"DIFFERS from CPU ({mismatch_text(compared.structure)})"
    return f"DIFFERS from CPU ({compared.elements_off} of {compared.elements} elements off, max abs {compared.max_abs_error:.3g})"


@describe.register
def run_text(record: RunRecord) -> str:
    """One paragraph: failure, or breaks (copies) with their nodes, transfers, uploads, values."""
    if record.error is not None:
        return f"failed on {record.device}: {record.error}"
    outputs = ", ".join(record.output_devices) or "nothing"
    if record.stack == "native":
        copies = "; ".join(c.labelled(c.node) for c in record.host_copies)
        fallbacks = ", ".join(f"{op} x{n}" for op, n in record.fallback_ops.items())
        text = (
            f"ran on {record.device}: {record.transfers_to_host} copy(ies) to the host{': ' + copies if copies else ''}, "
            f"{record.syncs} sync(s), {record.transfers_to_device} copy(ies) to the device per call, "
            f"{sum(record.fallback_ops.values())} CPU fallback(s){': ' + fallbacks if fallbacks else ''}; outputs on {outputs}"
        )
    else:
        breaks = "; ".join(b.labelled(b.node) for b in record.graph_breaks)
        text = (
            f"ran on {record.device}: {len(record.graph_breaks)} graph break(s){': ' + breaks if breaks else ''}, "
            f"{record.executions} forced execution(s), {record.transfers_to_host} transfer(s) to host and "
            f"{record.transfers_to_device} to device per call; outputs on {outputs}"
        )
    if record.uploads:
        text += f"; uploads of host data on every call (no break): {', '.join(u.labelled(u.node) for u in record.uploads)}"
    if record.comparison is not None:
        text += f"; values {comparison_text(record.comparison)} against the CPU reference"
    elif record.not_compared:
        text += f"; {not_compared_text(record.not_compared)}"
    return text


def _one_line(statement: str) -> str:
    return " ".join(part.strip() for part in textwrap.dedent(statement).splitlines())


@describe.register
def fix_text(fix: Fix) -> str:
    """A few lines for a terminal: where, the statement before and after, and the verdict."""
    head = f"  {fix.where}: {fix.status}"
    if fix.after is None:
        return f"{head}: {fix.advice}\n      {_one_line(fix.before)}"
    return f"{head}\n    - {_one_line(fix.before)}\n    + {_one_line(fix.after)}\n      {why_text(fix)}"


def why_text(fix: Fix) -> str:
    """What verifying a fix checked or found, then why it is spelled so (or why there is none)."""
    if fix.check.kind == "no spelling":
        return note_text(fix.note)
    said = check_text(fix.check)
    if fix.check.verified:
        note = note_text(fix.note)
        return f"{said}. {note[:1].upper()}{note[1:]}"
    return said


_CHECKED = "traced again: no pin left on the line, no new pin, values of the same dtypes and shapes, the same outputs on CPU"
_MAKE_ONCE = "a value built from Python data is uploaded whatever its spelling; make it once, outside the step (a buffer of the module), or compute it on the device"
_FLOAT64 = "with torch.set_default_dtype(torch.float64)"


def check_text(check: FixCheck) -> str:
    """A fix's verification in words: what was checked, or 'not verified: ' and the check that failed."""
    on = check.place or "the device"
    if check.kind == "verified":
        device = f"; on {check.place} under torch.compile the fixed code runs, its statements make the same ops, on the device"
        return _CHECKED + (device if check.place else "")
    if check.kind == "fails on device":
        written = "as written it ran" if check.was is None else f"as written it failed otherwise ({check.was})"
        failed = f"the fixed code fails on {on} under torch.compile: {check.error}; {written}"
    else:
        failed = {
            "given a capture": "explain was given a Capture; pass the function and its inputs to verify fixes",
            "traced on meta": "traced on the meta device, where there are no values to compare; explain a small configuration to verify",
            "no xla": "there is no XLA device here, so the checks on XLA could not run (the checks on CPU held)",
            "fixed code raised": f"the fixed code raised {check.error}",
            "outputs differ": f"the outputs on CPU differ: {comparison_text(check.comparison) if check.comparison else 'differ'}",
            "other default raised": f"{_FLOAT64} the original runs and the fixed code raises {check.error}",
            "other default differs": f"{_FLOAT64} the fixed statement makes {check.after} where the original makes {check.before}",
            "values differ": f"the fixed statement makes {check.after} where the original made {check.before}",
            "pins left": f"traced again, the fixed statement still has {check.count} pin(s) ({check.where})",
            "new pin": f"traced again, a new pin appears at {check.where}",
            "no program": f"your program does not compile on {on}, fixed or not ({check.error}), so nothing can be checked there",
            "ops differ": f"traced on {on} the fixed statement makes {check.after}, on CPU {check.before}",
            "host value": f"traced on {on} the fixed statement still makes {check.where} on the host",
            "uploads": (
                f"on {on} the fixed statement still copies host data to the device on every call ({check.count} copy(ies), "
                f"{check.bytes} bytes): {_MAKE_ONCE}"
            ),
        }.get(check.kind, check.kind)
    return f"not verified: {failed}"


_FROZEN = "device= is frozen while tracing"


def note_text(note: SpellingNote) -> str:
    """Why a statement is spelled as it is, or has no spelling, in words."""
    said = {
        "method follows tensor": f"a Tensor method follows {note.tensor}'s device when the graph runs; {_FROZEN}",
        "like follows tensor": f"without device=, {note.call} makes the value on {note.tensor}'s device when the graph runs; {_FROZEN}",
        "dtype kept": "keeps the dtype change and drops the device: right when the value is already on that tensor's device",
        "stays on device": f"the value stays on the device: call .{note.method}() on the compiled function's result if the host needs it",
        "no symbolic spelling": "no spelling keeps the device symbolic under dynamo: compile through the neurondev backend",
        "like names another tensor": f"device= names another tensor than the one {note.call} copies: drop it where that is the same tensor",
        "as_tensor of a tensor": "torch.as_tensor of a tensor is a move, not a constructor: no spelling keeps the device symbolic",
        "eye not square": "torch.eye(n, m) is not square: no Tensor method makes it",
        "keyword refused": f"{note.call}(..., {note.keyword}=...) has no Tensor.{note.method} form",
        "device names no tensor": f"the device does not name a tensor: write t.{note.method}(...) with the tensor whose device you mean",
        "self is the module": (
            f"self is the module, not a tensor: take the device of one of its parameters or buffers "
            f"(self.weight.{note.method}(...), or register the value as a buffer)"
        ),
        "does not parse": f"the statement does not parse alone ({note.error})",
        "file does not parse": f"the file does not parse ({note.error})",
        "no statement": "no statement found at the pin's line",
        "no libcst": "no fixed line: libcst is not installed (pip install libcst)",
    }
    return said.get(note.kind, note.kind)


@describe.register
def finding_text(finding: Finding) -> str:
    rule = f" [{finding.rule}]" if finding.rule else ""
    where = f"{finding.where}: {finding.code}" if finding.source is not None else "the whole function (no one line):"
    return f"  {where}\n      {finding_detail(finding)}{rule}\n      write instead: {finding_fix(finding)}"


_REWRITE = {
    "equal": "the rewrite changed no values",
    "within tolerance": "the rewrite changed no values",
    "differ": "the rewrite CHANGED the values",
    "fixed": "the rewrite fixed the values",
    "not comparable": "values before and after the rewrite are not comparable",
    "not compared": "values before and after the rewrite not compared",
}
_CPU = {
    "equal": "the graph on {place} agrees with CPU",
    "within tolerance": "the graph on {place} agrees with CPU",
    "differ": "the graph on {place} DIFFERS from CPU",
    "not comparable": "the graph's {place} and CPU values are not comparable",
    "not compared": "the graph on {place} not compared with CPU",
}


def verdict_text(verdict: Verdict, *, figures: bool = False, place: str = "XLA") -> str:
    """One line; equal and within tolerance read alike (which one depends on the processor's
    rounding), unless ``figures`` asks for the measured errors."""
    shown = figures or verdict.status == "differ"
    compared = verdict.comparison
    measured = f" ({comparison_text(compared)})" if shown and compared is not None and verdict.status != "equal" else ""
    reason = f": {reason_text(verdict.reason)}" if verdict.reason else ""
    if verdict.frozen_differs:
        reason += ": the run before the pass differs from CPU too: not the rewrite (an XLA kernel or lowering)"
    if verdict.frozen is not None:
        wrong = comparison_text(verdict.frozen)
        reason += f": the frozen graph's own run on {place} was wrong ({wrong} against CPU); the rewritten one agrees with CPU"
    text = _REWRITE[verdict.status] if verdict.question == "rewrite" else _CPU[verdict.status].format(place=place)
    return text + measured + reason


@describe.register
def _verdict(verdict: Verdict) -> str:
    return verdict_text(verdict)


def _at(record: Any) -> str:
    return f" at {record.where}" if getattr(record, "source", None) is not None else ""


@describe.register
def pin_text(pin: DevicePin) -> str:
    return f"{pin.node}: {pin.function} pinned to device={pin.device} ({pin.kind}, {pin.location}){_at(pin)}"


@describe.register
def cpu_kernel_text(kernel: CpuKernel) -> str:
    return f"{kernel.node} calls {kernel.function}, a kernel for the CPU{_at(kernel)}"


@describe.register
def dynamo_break_text(split: DynamoBreak) -> str:
    return f"dynamo split the graph{_at(split)}: {split.reason.strip().splitlines()[0] if split.reason.strip() else 'no reason given'}"


@describe.register
def graph_break_text(cut: GraphBreak) -> str:
    return f"{cut.node} ({cut.function}) forced {cut.executions} execution(s) and {cut.transfers_to_host} transfer(s) to the host{_at(cut)}"


@describe.register
def host_copy_text(copy: HostCopy) -> str:
    if copy.transfers_to_host:
        by = f" for {copy.collective} (this device's collectives go through the host; a real device's do not)" if copy.collective else ""
        return f"{copy.function} copied {copy.bytes} bytes to the host ({copy.transfers_to_host} copies){by}{_at(copy)}"
    return f"{copy.function} made the host wait for the device ({copy.syncs} sync(s)){_at(copy)}"


@describe.register
def copy_site_text(site: CopySite) -> str:
    size = f", {site.bytes} bytes" if site.bytes is not None else ""
    return f"{site.scenario}: {site.calls} cop{'y' if site.calls == 1 else 'ies'} {site.direction} per call ({site.what}{size}){_at(site)}"


@describe.register
def fallback_text(fallback: Fallback) -> str:
    inside = f" inside {fallback.inside}" if fallback.inside else ""
    return f"{fallback.op} fell back to the CPU {fallback.calls} time(s) per call{inside} ({fallback.bytes} bytes copied){_at(fallback)}"


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
    if cause.kind == "flag":
        return f"{name} was {before} when traced{now}: a flag (train/eval, a switch) gives one graph per value"
    if cause.kind == "library value":
        return f"{name}, a value {cause.library} keeps, was {before} when traced{now}: {cause.library} guards on it"
    if cause.kind == "python number":
        return f"{name} was {before} when traced{now}: a Python number burned into the graph"
    return cause.guard or "recompiled (no reason given)"


@describe.register
def cause_text(cause: Cause) -> str:
    return f"{cause.kind}: {cause_words(cause)}{_at(cause)}"


describe.register(Advice)(advice_text)
describe.register(AdviceCheck)(advice_check_text)
describe.register(Gap)(gap_text)
describe.register(NotSteady)(never_steady_text)


@describe.register
def xla_program_text(program: XlaProgram) -> str:
    return f"a new XLA program ({program.kind}): {program.cause}{_at(program)}"


def runtime_text(choice: RuntimeChoice) -> str:
    """Why this machine's runtime was chosen, from the facts it was chosen from."""
    found = choice.found
    neuron = f"torch-neuronx {found.neuronx_version}"
    said = {
        "native neuron": f"{neuron} registers the native 'neuron' device (PrivateUse1, TorchNeuron)",
        "xla sdk": f"{neuron} is the XLA-based Neuron SDK: runs go to its XLA device",
        "not installed": "torch-neuronx is not installed",
        "does not import": f"{neuron} does not import ({found.neuronx_error})",
        "no neuron device": f"{neuron} imports but registers no native 'neuron' device",
        "no torch_xla": f"{neuron} imports but torch_xla is missing",
    }[choice.neuron]
    if choice.runtime == "pjrt":
        chosen = f"PJRT_DEVICE={found.pjrt_device} (yours)" if found.pjrt_device else "PJRT's CPU device (PJRT_DEVICE=CPU)"
        return f"{said}; torch_xla is installed: {chosen}"
    if choice.runtime == "native":
        return f"{said}; no torch_xla; the {found.privateuse1!r} backend is loaded in this process"
    if choice.runtime == "none":
        return f"{said}; no torch_xla and no native backend loaded: nothing runs (neurondev.host_device() loads a test device)"
    return said


_CHOSEN_BY = {
    "user": "PJRT_DEVICE={device} was set before neurondev ran",
    "torch_xla": "torch_xla was already imported, its own device choice stands",
    "neurondev": "no PJRT_DEVICE was set, so neurondev set PJRT_DEVICE=CPU",
}


def runtime_info_text(info: Any) -> str:
    """Why a run's device is the one it ran on, from its driver's facts (``describe()``)."""
    if info.get("runtime") == "native":
        backend = info.get("backend")
        if backend == "cuda":
            return "cuda is torch's own native device here (copies, syncs and fallbacks counted at dispatch)"
        return f"{backend} is the PrivateUse1 backend loaded in this process"
    if info.get("runtime") == "neuron":
        return "torch_neuronx imports: its Neuron device is used"
    chosen = _CHOSEN_BY.get(info.get("chosen_by") or "", "").format(device=info.get("PJRT_DEVICE"))
    missing = f"torch_neuronx does not import ({info['neuron_error']})" if info.get("neuron_error") else ""
    return "; ".join(part for part in (missing, chosen) if part)


_META = (
    "traced on the meta device: the weights are shapes without values, so nothing can run. To measure it on the device, build "
    "the same config with fewer layers (e.g. num_hidden_layers=2) and real or random weights, and explain that"
)


def skip_text(skip: Skip | None, stage: str = "graphs") -> str:
    """Why a stage of explain did not run, in words; ``stage`` is 'graphs', 'program' or 'native' (the native trace)."""
    if skip is None:
        return ""
    if skip.kind == "no device":
        return f"no {skip.device} device: {skip.error}"
    if skip.kind == "ran elsewhere":
        head = "the native trace " if stage == "native" else ""
        return f"{head}ran on {skip.device} for the original; explain the function again with target={skip.target!r}"
    said = {
        ("run off", "graphs"): "run=False: the graphs were not run on the device",
        ("run off", "program"): "run=False: your program was not run on the device",
        ("traced on meta", "native"): "traced on the meta device: there are no values to trace with on the device",
        ("from a capture", "program"): "explained from a Capture: pass the function and its inputs to run your program on the device",
        ("from a capture", "native"): "explained from a Capture: there is no function to trace on the device",
    }
    kinds = {
        "no graph": "no graph was recorded, so there is nothing to run",
        "traced on meta": _META,
        "not needed": "nothing here needs the device",
        "exported": "an exported program's graph is ATen-level, the program's dynamo graphs are not: they are not compared line by line",
    }
    return said.get((skip.kind, stage)) or kinds.get(skip.kind, skip.kind)


# --- a check's findings: what was found and what to write instead --------------------------------------
_SPECIALISED_FIX = "no device rewrite changes Python that branches on the device: trace on XLA, or make both branches the same"
_UNSEEN_FIX = "check on a device whose compiled graphs pass the dispatcher (the host test device), or read the backend's own record"
_PROGRAM_FIXES = {
    "mixed devices at compile time": "keep every tensor the code reads on the device: pass it in, or register it as a buffer of the module",
    "default device ignored under torch.compile": (
        "torch.compile on this torch makes this factory call's tensor on the CPU, not on the default device you set "
        "(PyTorch issue 175953): pass the device (device=x.device), or use a torch that applies it (2.13 does)"
    ),
    "host-only call between graphs": "keep .numpy(), .tolist() and Python numbers of tensors out of the compiled function (use torch ops, or do it after)",
    "wrong device at run time": "move every input and the module to the device (model.to(device), x.to(device)) before the call",
    "other": "see the message; run it yourself with torch.compile(fn, backend='{backend}') on inputs on {place}",
}


def unseen_text(compiler: str) -> str:
    """Why a program run on a device with its own graph compiler cannot see its fallbacks on lines."""
    return (
        f"inside the graphs {compiler}'s compiler runs, ops do not pass the dispatcher: what falls back "
        "there is in the backend's own record (torch_neuronx.get_fallback_ops()), not on a line"
    )


def finding_detail(finding: Finding) -> str:
    """What was found, in words."""
    found: Any = finding.found
    if finding.why == "not run":
        reason = skip_text(finding.skip, "program") or "it was not run"
        return f"your program did not run on the device ({reason}): no fallback was checked"
    if finding.why == "unseen":
        return f"cannot verify fallbacks here: {unseen_text(finding.compiler or 'the backend')}"
    if finding.kind == "pin":
        return f"{found.node}: {found.function}, device={found.device} ({found.kind}, {found.location})"
    if finding.kind == "host value":
        return f"{describe(found)} stays on the CPU when the model moves to {finding.place}"
    if finding.kind == "cpu kernel":
        return f"{found.function} is a kernel for the CPU"
    if finding.kind == "device-specialised":
        return f"traced as {list(found.cpu_ops)} on CPU but {list(found.xla_ops)} on {finding.place}"
    if finding.kind == "program":
        label = f"as written ({finding.backend})" if finding.as_written else "with the neurondev backend"
        return f"your program on {finding.place} {label} {describe(found)}"
    if finding.kind == "fallback":
        inside = f" inside {found.inside}" if found.inside else ""
        module = f" in {found.module}" if found.module else ""
        return f"{found.op} fell back to the CPU {found.calls} time(s) per call ({found.bytes} bytes copied){inside}{module}"
    return describe(found)


def finding_fix(finding: Finding) -> str:
    """What to write instead ('' where nothing is to be written: a program that did not run)."""
    found: Any = finding.found
    if finding.why == "not run":
        return ""
    if finding.why == "unseen":
        return _UNSEEN_FIX
    if finding.kind == "pin":
        return fix_for(found)
    if finding.kind == "host value":
        return host_value_fix(found)
    if finding.kind == "cpu kernel":
        return CPU_KERNEL_FIX
    if finding.kind == "device-specialised":
        return _SPECIALISED_FIX
    if finding.kind == "program":
        host = finding.host
        fix = host_value_fix(host) if host is not None and found.kind == "mixed devices at compile time" else _PROGRAM_FIXES[found.kind]
        return fix.format(backend=finding.backend, place=finding.place)
    if finding.kind == "fallback":
        return fallback_advice(found.op)
    return rule_named(finding.rule).fix if finding.rule else ""


@describe.register
def capture_note_text(note: CaptureNote) -> str:
    """What the capture did that a user should know, in words."""
    if note.kind == "meta":
        return (
            "traced on the meta device (the model's weights or the inputs are meta: shapes without values), so no weight was "
            "materialised; device=meta in the graphs is what a CPU trace shows as cpu"
        )
    if note.kind == "already compiled":
        return f"{note.name} was already compiled with torch.compile: its original {note.original} was traced"
    if note.no_graph:
        return NO_GRAPH_WORDS[note.kind]
    if note.kind == "dynamic marks kept":
        return (
            f"input {note.path}: dimension(s) {list(note.dims)} marked dynamic by you stay dynamic in the graph "
            "(traced with a dynamic dimension; runs use the size it had)"
        )
    if note.kind == "arguments copied apart":
        return f"could not copy the arguments together ({note.error}); their tensors were copied, other objects are the user's own"
    return "an ExportedProgram: its graph as exported (ATen level), its parameters and buffers as inputs"
