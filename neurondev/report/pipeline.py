"""explain(): the entry points and the order of its stages (``stages``), grown into one record (``Made``), ending in a frozen Explanation.

trace -> pins -> start the device -> fixes -> rewrite -> graph runs -> program runs -> native trace ->
verdicts (and, where a graph differs, its first differing node) -> ExplanationData. The graph runs
are the seed's scenario (a backend traced on CPU and moved the graph to the device); the program runs
are the user's own function under torch.compile on the device (XLA, or a native PrivateUse1 device, each
through its driver). A stage reads only what earlier stages
produced; nothing draws here (pictures are made when the result is displayed).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

import torch
import torch.fx

from neurondev.errors import InvalidOptionError, NotCallableError
from neurondev.report.input_memory import say_input_memory
from neurondev.report.model import ExplanationData, Section, SectionKey
from neurondev.report.options import ExplainOptions, default, refuse_shadowing
from neurondev.report.progress import Stages
from neurondev.report.skips import Skip
from neurondev.report.stage_records import Made, Native, ProgramStage, RewrittenGraph, Runs, Runtime, TracedGraph
from neurondev.report.stages import (
    fix_stage,
    native_stage,
    native_timings,
    pin_stage,
    program_stage,
    rewrite_stage,
    run_stage,
    runtime_stage,
    trace_stage,
    verdict_stage,
)
from neurondev.report.verdicts import Verdict
from neurondev.runs.program import ProgramSubject
from neurondev.trace.callables import original_of, refuse_generator, required_inputs
from neurondev.trace.capture import Capture, capture
from neurondev.trace.copies import kept_global_state
from neurondev.trace.generators import reachable_generators
from neurondev.trace.source import lines_of

__all__ = ["ExplainOptions", "explain", "explain_with", "rerun"]


# --- the entry points -----------------------------------------------------------------------------
def explain(
    fn: Callable[..., Any] | Capture,
    *args: Any,
    target: str | torch.device | None = default(None),
    run: bool = default(True),
    quiet: bool = default(False),
    rtol: float | None = default(None),
    atol: float | None = default(None),
    native: bool = default(False),
    level: str = default("dynamo"),
    **kwargs: Any,
) -> Any:
    """Explain the device pins of ``fn(*args, **kwargs)``: trace on CPU, find, rewrite, run before and after.

    ``neurondev.explain(fn)`` with no inputs returns a callable: ``neurondev.explain(fn)(x)``.
    ``fn`` may also be a Capture made earlier (``neurondev.capture(fn, x)``): nothing is traced again.
    ``target``: the device pins are rewritten to and runs go to (None: the device this machine's
    runtime provides: TorchNeuron's ``neuron``, else XLA; ``"hostdev"`` loads the host test device).
    ``run=False`` skips the runs on the device. ``quiet``
    silences the progress bars. ``rtol``/``atol``: tolerances of the value comparisons.
    ``native=True`` also traces natively on XLA (``neurondev.compare_traces``): device-specialised
    code, and the rewritten graph's time per call against the native one's. ``level="aten"``
    explains aot_autograd's forward and backward graphs instead of dynamo's.
    Nothing of the user's is mutated and the user's torch_xla counters are never cleared.

    When ``fn`` takes an argument named like one of these options, passing the option is refused
    (OptionShadowsArgumentError): write ``explain(fn, run=False)(x, run=True)`` instead, where the
    first call takes explain's options and the second only ``fn``'s inputs.
    """
    given_options = {"target": target, "run": run, "quiet": quiet, "rtol": rtol, "atol": atol, "native": native, "level": level}
    options = ExplainOptions.checked(target, run=run, quiet=quiet, rtol=rtol, atol=atol, native=native, level=level)
    if callable(fn) and not isinstance(fn, Capture) and (args or kwargs):
        refuse_shadowing(fn, given_options, verb="explain")
    if isinstance(fn, Capture):
        if options.native:
            raise InvalidOptionError("native=True traces the function again on XLA: pass the function and its inputs, not a Capture")
        return _explain(fn, options, None)
    if not callable(fn):
        raise NotCallableError(
            f"explain needs a function or an nn.Module, got {type(fn).__name__}; "
            "pass the function itself: neurondev.explain(f, x), not neurondev.explain(f(x))"
        )
    refuse_generator(fn, "explain")
    if not args and not kwargs and required_inputs(fn) != []:  # names to fill, or a signature we cannot read
        return functools.wraps(fn)(lambda *a, **k: _explain(fn, options, (a, k)))
    return _explain(fn, options, (args, kwargs))


def rerun(explanation: ExplanationData, *, target: str | torch.device, on_step: Callable[[], None] | None = None) -> ExplanationData:
    """The graph stages after the trace again, for ``target``: a new Explanation from the same graphs.
    ``target`` is checked as explain checks it. The program runs and the native trace are the original's
    (they compile the user's function, which an Explanation does not hold): for another kind of device
    they are not carried over, and say so (they ran on the original's device)."""
    options = ExplainOptions.checked(
        target, run=True, quiet=True, rtol=explanation.rtol, atol=explanation.atol, native=False, level=explanation.level
    )
    stages = Stages((), quiet=True, on_step=on_step)
    on_meta = explanation.capture.device == "meta"
    traced = tuple(TracedGraph(s.key, s.traced, s.inputs, s.host_values, on_meta) for s in explanation.sections)
    same = options.target.type == explanation.target.type
    elsewhere = Skip("ran elsewhere", device=explanation.place, target=str(options.target))
    program = ProgramStage(explanation.program, None, explanation.program_skipped) if same else ProgramStage(skipped=elsewhere)
    with kept_global_state(), stages:
        pinned = pin_stage(traced, options.target, stages)
        runtime = runtime_stage(stages, options.target)
        rewritten = rewrite_stage(pinned, options.target, stages, runtime)
        runs = run_stage(rewritten, runtime, options, stages)
        if same:
            native = Native(explanation.traces, explanation.traces_skipped, native_timings(explanation.traces, rewritten, runs))
        else:  # the native trace's graphs hold the original device's values: never run them on another
            native = Native(skipped=elsewhere)
        verdicts = verdict_stage(rewritten, runs, options, stages)
    made = Made(options, explanation.capture, runtime, pinned, rewritten, runs, program, explanation.fixes, native, verdicts)
    return _assemble(made, stages)


def explain_with(fn: Callable[..., Any], args: tuple, kwargs: dict, options: ExplainOptions) -> ExplanationData:
    """explain with options made elsewhere (check's: no graph runs, the program only when asked)."""
    return _explain(fn, options, (args, kwargs))


def _explain(subject: Any, options: ExplainOptions, call: tuple[tuple, dict] | None) -> ExplanationData:
    """The whole pipeline; ``call`` is (args, kwargs) of ``subject`` (a function), None for a Capture."""
    xla = options.run or options.program or options.native or options.fixes  # check(native=False) is a CPU trace alone
    names = (
        (("start the device",) if xla else ()) + ("trace", "find pins", "rewrite") + (("run before", "run after") if options.run else ())
    )
    names += (("your program on the device",) if options.program else ()) + (("verify fixes",) if options.fixes else ())
    names += ("trace on the device",) if options.native and not options.program else ()
    name = subject.name if isinstance(subject, Capture) else getattr(subject, "__name__", type(subject).__name__)
    shown = names if call is not None else tuple(n for n in names if n not in ("trace", "verify fixes", "your program on the device"))
    if call is not None:
        say_input_memory(subject, *call)
    generators = () if call is None else reachable_generators(subject, *call)
    with kept_global_state(generators), Stages(shown, quiet=options.quiet, name=name) as stages:
        # XLA starts first: autograd sizes its device queues when it first runs, and a CPU trace that
        # back-propagates before torch_xla is loaded leaves XLA values no queue (an internal assert later)
        runtime = runtime_stage(stages, options.target) if xla else Runtime(unavailable=Skip("not needed"))
        captured = subject if call is None else _trace(subject, call, options, stages)
        made = Made(options, captured, runtime)
        made = replace(made, pinned=pin_stage(trace_stage(captured, options.level), options.target, stages))
        made = replace(made, rewritten=rewrite_stage(made.pinned, options.target, stages, runtime))
        made = replace(made, runs=run_stage(made.rewritten, runtime, options, stages))
        exported = isinstance(subject, torch.export.ExportedProgram)
        # an exported program runs as the module it unlifts to; a function the user compiled already, as its original
        # (inside the user's compile its backend would compile it, out of the measured backend's sight)
        runnable = subject.module() if exported else original_of(subject)
        program_subject = None if call is None else ProgramSubject(runnable, *call, name=name)
        with lines_of(runnable) if exported else contextlib.nullcontext():  # the module's code is torch.fx's: its nodes' lines
            made = replace(made, program=program_stage(program_subject, captured, runtime, options, stages))
        source_call = None if exported else call  # an exported graph's lines are the exporter's: nothing to verify a fix against
        made = replace(made, fixes=fix_stage(made, None if source_call is None else runnable, source_call, stages))
        made = replace(made, native=_exported_native() if exported else native_stage(made, runnable, call, stages))
        made = replace(made, verdicts=verdict_stage(made.rewritten, made.runs, options, stages))
    return _assemble(made, stages)


# --- around the stages: the trace itself and the assembly ---------------------------------------
def _trace(fn: Callable[..., Any], call: tuple[tuple, dict], options: ExplainOptions, stages: Stages) -> Capture:
    stages.start("trace")
    args, kwargs = call
    if isinstance(fn, torch.export.ExportedProgram):  # traced already: its graph, with its state as inputs
        from neurondev.trace.exported import capture_exported

        return capture_exported(fn, args, kwargs)
    return capture(fn, *args, level=options.level, **kwargs)


def _exported_native() -> Native:
    return Native(skipped=Skip("exported"))


def _assemble(made: Made, stages: Stages) -> ExplanationData:
    """The frozen result of everything the stages made."""
    captured, runs, native, program, options = made.captured, made.runs, made.native, made.program, made.options
    sections = tuple(_section(graph, runs, native, made.verdicts) for graph in made.rewritten)
    return ExplanationData(
        name=captured.name,
        target=options.target,
        level=options.level,
        capture=captured,
        sections=sections,
        skipped=runs.skipped,
        runtime=MappingProxyType(dict(runs.runtime)),
        traces=native.traces,
        traces_skipped=native.skipped,
        rtol=options.rtol,
        atol=options.atol,
        notes=captured.notes,
        stage_seconds=MappingProxyType(dict(stages.seconds)),
        fixes=made.fixes,
        program=program.programs,
        program_skipped=program.skipped,
        rerunner=rerun,
    )


def _section(graph: RewrittenGraph, runs: Runs, native: Native, verdicts: Mapping[SectionKey, tuple[Verdict, Verdict]]) -> Section:
    traced, key = graph.pinned.traced, graph.key
    before, after = runs.records.get(key, (None, None))
    rewrite, cpu = verdicts.get(key, (None, None))
    return Section(
        key,
        traced.graph_module,
        graph.graph_module,
        traced.inputs,
        graph.pinned.pins,
        graph.rewrites,
        before,
        after,
        rewrite,
        cpu,
        native.timings.get(key),
        traced.host_values,
        graph.pinned.cpu_kernels,
    )
