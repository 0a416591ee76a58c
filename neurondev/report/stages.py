"""explain's stages: each reads what earlier stages made and returns its own part (see ``stage_records``)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import torch
import torch.fx

from neurondev.errors import InvalidOptionError, NeurondevError, XlaUnavailableError
from neurondev.fx.graphs import own_graph
from neurondev.fx.kernels import cpu_kernels
from neurondev.fx.pins import DevicePin, find_pins
from neurondev.fx.subgraphs import subgraphs
from neurondev.passes.device_rewriter import rewrite_copy
from neurondev.report.fixes.records import Fix, FixCheck
from neurondev.report.model import NativeTiming, SectionKey
from neurondev.report.options import ExplainOptions
from neurondev.report.progress import Stages
from neurondev.report.skips import Skip
from neurondev.report.stage_records import Made, Native, PinnedGraph, ProgramStage, RewrittenGraph, Runs, Runtime, TracedGraph
from neurondev.report.verdicts import Verdict, cpu_verdict, rewrite_verdict
from neurondev.runs.first_difference import NodeDifference
from neurondev.runs.graph import cpu_reference, run_graph
from neurondev.runs.interface import Driver
from neurondev.runs.program import ProgramSubject
from neurondev.runs.program_records import Programs
from neurondev.runs.reasons import NotCompared, random_draws
from neurondev.runs.run_records import RunRecord
from neurondev.runs.traces import TraceComparison
from neurondev.trace.capture import Capture, capture

__all__ = [
    "SEED",
    "fix_stage",
    "native_stage",
    "native_timings",
    "pin_stage",
    "program_stage",
    "rewrite_stage",
    "run_stage",
    "runtime_stage",
    "trace_stage",
    "verdict_stage",
]

SEED = 0  # both runs of a graph draw from generators seeded alike (random ops compare where they draw on one device)


def trace_stage(captured: Capture, level: str) -> tuple[TracedGraph, ...]:
    """The graphs to explain: dynamo's (one section each), or aot_autograd's forward and backward; each section
    owns its graph (a pass run on the Capture's graphs afterwards changes none of an Explanation's)."""
    on_meta = captured.device == "meta"
    if level == "aten":
        if captured.graphs and not captured.aten_graphs:
            raise InvalidOptionError("this Capture holds dynamo's graphs only: make it with neurondev.capture(fn, *args, level='aten')")
        return tuple(
            TracedGraph(SectionKey(g.dynamo_graph, g.part), own_graph(g.graph_module), g.inputs, on_meta=on_meta)
            for g in captured.aten_graphs
        )
    return tuple(
        TracedGraph(SectionKey(i), own_graph(gm), tuple(inputs), tuple(v for v in captured.host_values if v.graph == i), on_meta)
        for i, (gm, inputs) in enumerate(zip(captured.graphs, captured.example_inputs))
    )


def pin_stage(traced: tuple[TracedGraph, ...], target: torch.device, stages: Stages) -> tuple[PinnedGraph, ...]:
    stages.start("find pins")
    return tuple(
        PinnedGraph(
            graph,
            tuple(find_pins(graph.graph_module, target=target, graph=graph.key.graph, part=graph.key.part, traced_on_meta=graph.on_meta)),
            tuple(cpu_kernels(graph.graph_module, graph=graph.key.graph, part=graph.key.part)),
        )
        for graph in traced
    )


def fix_stage(made: Made, fn: Any, call: tuple[tuple, dict] | None, stages: Stages) -> tuple[Fix, ...]:
    """The fixed statement for each pin in the user's own code, verified by tracing the fixed code again
    and running it as a program on XLA (at dynamo's level, whatever level is explained: the statements
    are the same), against the graphs traced on CPU and the program as written."""
    options, captured, pinned, runtime, program = made.options, made.captured, made.pinned, made.runtime, made.program
    if not options.fixes:
        return ()
    from neurondev.report.fixes.edits import propose
    from neurondev.report.fixes.verify import Original, verify

    pins = [pin for graph in pinned for pin in graph.pins]
    if call is not None:
        stages.start("verify fixes")
    if any(graph.traced.on_meta for graph in pinned):
        return verify(None, None, propose(pins), pins, target=options.target, xla=False, unverifiable=_META_FIXES)
    graphs = dict(enumerate(captured.graphs))
    if options.level != "dynamo" and call is not None:
        pins, graphs = _dynamo_pins(fn, call, options.target)
    written = program.programs.as_written if program.programs is not None else None
    original = Original(graphs, written)
    return verify(fn, call, propose(pins, graphs), pins, target=options.target, xla=runtime.unavailable is None, original=original)


_META_FIXES = FixCheck("traced on meta")


def _dynamo_pins(fn: Any, call: tuple[tuple, dict], target: torch.device) -> tuple[list[DevicePin], dict[int, torch.fx.GraphModule]]:
    captured = capture(fn, *call[0], **call[1])
    pins = [pin for index, gm in enumerate(captured.graphs) for pin in find_pins(gm, target=target, graph=index)]
    return pins, dict(enumerate(captured.graphs))


def rewrite_stage(
    pinned: tuple[PinnedGraph, ...], target: torch.device, stages: Stages, runtime: Runtime | None = None
) -> tuple[RewrittenGraph, ...]:
    stages.start("rewrite", total=max(len(pinned), 1))
    rewritten = []
    for graph in pinned:
        key = graph.traced.key
        where = _indexed(target, graph.traced.graph_module, runtime)
        after, rewrites = rewrite_copy(graph.traced.graph_module, target=where, traced_on_meta=graph.traced.on_meta)
        rewritten.append(RewrittenGraph(graph, after, tuple(dataclasses.replace(r, graph=key.graph, part=key.part) for r in rewrites)))
        stages.advance()
    return tuple(rewritten)


def _indexed(target: torch.device, gm: torch.fx.GraphModule, runtime: Runtime | None) -> torch.device:
    """The runtime's indexed device (``xla:0``) for a graph with bodies that higher-order ops call:
    ``torch.cond`` and its kin check their bodies on fake tensors, where ``xla`` and ``xla:0`` are
    two devices. Other graphs keep the target as given."""
    device = (runtime.info.get("device") if runtime is not None else None) or ""
    if target.index is not None or not device.startswith(f"{target.type}:") or next(subgraphs(gm), None) is None:
        return target
    return torch.device(device)


def runtime_stage(stages: Stages, target: torch.device) -> Runtime:
    """Start the target's runtime before the rewrite makes any value there (a value on XLA before
    torch_xla is loaded can abort the process); a machine without one gets the reason, and no runs."""
    from neurondev.devices.drivers import driver_for

    stages.start("start the device")
    try:
        driver = driver_for(target)
        return Runtime(MappingProxyType(dict(driver.describe())), driver=driver)
    except XlaUnavailableError as error:
        return Runtime(unavailable=Skip("no device", device="XLA", error=str(error)))
    except NeurondevError as error:
        return Runtime(unavailable=Skip("no device", device=target.type, error=str(error)))


def run_stage(rewritten: tuple[RewrittenGraph, ...], runtime: Runtime, options: ExplainOptions, stages: Stages) -> Runs:
    """Every graph on the device, before and after the pass; or why not."""
    if not options.run:
        return Runs(skipped=Skip("run off"))
    if not rewritten:
        return Runs(skipped=Skip("no graph"))
    if rewritten[0].pinned.traced.on_meta:
        return Runs(skipped=Skip("traced on meta"))
    if runtime.unavailable is not None:
        return Runs(skipped=runtime.unavailable)
    assert runtime.driver is not None
    driver = runtime.driver
    stages.start("run before", total=len(rewritten))
    references = [cpu_reference(g.pinned.traced.graph_module, g.pinned.traced.inputs, seed=SEED) for g in rewritten]
    before = [_run(stages, g.pinned.traced.graph_module, g, options, ref, driver) for g, ref in zip(rewritten, references)]
    stages.start("run after", total=len(rewritten))
    after = [_run(stages, g.graph_module, g, options, ref, driver) for g, ref in zip(rewritten, references)]
    records = {g.key: (b, a) for g, b, a in zip(rewritten, before, after)}
    return Runs(MappingProxyType(records), runtime.info, driver=driver)


def _run(
    stages: Stages,
    gm: torch.fx.GraphModule,
    graph: RewrittenGraph,
    options: ExplainOptions,
    reference: tuple[Any, NotCompared | None],
    driver: Driver,
) -> RunRecord:
    """One run on the device against the CPU reference both runs share; host values stay on the host,
    where the user's code would have them."""
    traced = graph.pinned.traced
    host = [value.index for value in traced.host_values]
    expected = reference[0] if reference[1] is None else None  # None: the run finds (and says) why there is none
    record = run_graph(
        gm, *traced.inputs, driver=driver, reference=expected, rtol=options.rtol, atol=options.atol, keep_on_host=host, seed=SEED
    )
    stages.advance()
    return record


def program_stage(
    subject: ProgramSubject | None, captured: Capture, runtime: Runtime, options: ExplainOptions, stages: Stages
) -> ProgramStage:
    """The user's whole function under torch.compile on the device: as written (its own backend), then rewritten
    (the neurondev backend), each called twice and compared with the eager CPU result."""
    if not options.program:
        return ProgramStage(skipped=Skip("run off"))
    if subject is None:
        return ProgramStage(skipped=Skip("from a capture"))
    if captured.device == "meta":
        return ProgramStage(skipped=Skip("traced on meta"))
    if runtime.unavailable is not None:
        return ProgramStage(skipped=runtime.unavailable)
    from neurondev.devices.compiler import backend
    from neurondev.runs.program import run_program
    from neurondev.runs.state import program_state

    stages.start("your program on the device", total=2)
    driver = runtime.driver
    assert driver is not None
    generator = driver.own_generator  # None: the device draws from the CPU's generator, seeded as the reference was
    draws = "device" if generator else "cpu"
    random = next((r for gm in captured.graphs if (r := random_draws(gm, None, draws, generator)) is not None), None)
    compared = {"reference": captured.output, "not_comparable": random if generator else None, "rtol": options.rtol, "atol": options.atol}
    compared["reference_state"] = program_state(*captured.owners) if captured.owners else None
    compared["random"], compared["rng_state"] = random, captured.rng_state
    as_written, _ = run_program(subject, driver.program_backend(), driver=driver, label=driver.program_label, **compared)
    stages.advance()
    rewriting = functools.partial(backend, inner=driver.program_backend())  # the measured driver's backend, after the pass
    rewritten, native = run_program(subject, rewriting, driver=driver, label="neurondev", keep_graphs=True, **compared)
    stages.advance()
    return ProgramStage(Programs(as_written, rewritten), native)


def native_stage(made: Made, fn: Any, call: tuple[tuple, dict] | None, stages: Stages) -> Native:
    """The native trace beside the CPU one: the rewritten program's graphs when it ran (every explain),
    else, with ``native``, a trace of its own; with ``native``, time per call rewritten vs native."""
    from neurondev.runs.traces import compare_captures, compare_with_native

    captured, rewritten, runs, program, options = made.captured, made.rewritten, made.runs, made.program, made.options
    if program.native is not None:
        failure = program.programs.rewritten.failure if program.programs is not None else None
        device = torch.device(program.native.device)
        traces = compare_captures(captured, program.native, device=device, error=failure.error if failure else None, located=failure)
    elif not options.native:
        return Native()
    else:
        stages.start("trace on the device")
        if call is None:
            return Native(skipped=Skip("from a capture"))
        if captured.device == "meta":
            return Native(skipped=Skip("traced on meta"))
        try:
            from neurondev.devices.drivers import driver_for

            traces = compare_with_native(captured, fn, *call, driver=driver_for(options.target))
        except XlaUnavailableError as error:
            return Native(skipped=Skip("no device", device="XLA", error=str(error)))
    timings = native_timings(traces, rewritten, runs) if options.native else MappingProxyType({})
    return Native(traces, None, timings)


def native_timings(traces: TraceComparison | None, rewritten: tuple[RewrittenGraph, ...], runs: Runs) -> Mapping[SectionKey, NativeTiming]:
    """Rewritten vs native seconds per call, for each key whose native graph exists and agrees."""
    from neurondev.runs.traces import side_by_side_seconds

    if traces is None or not traces.agree or runs.skipped or runs.driver is None:
        return MappingProxyType({})
    native = {SectionKey(i): (gm, inputs) for i, (gm, inputs) in enumerate(zip(traces.native.graphs, traces.native.example_inputs))}
    timings = {}
    for graph in rewritten:
        if graph.key in native:
            pair = {"rewritten": (graph.graph_module, graph.pinned.traced.inputs), "native": native[graph.key]}
            seconds = side_by_side_seconds(pair, driver=runs.driver)
            timings[graph.key] = NativeTiming(seconds["rewritten"], seconds["native"])
    return MappingProxyType(timings)


def verdict_stage(
    rewritten: tuple[RewrittenGraph, ...], runs: Runs, options: ExplainOptions, stages: Stages
) -> dict[SectionKey, tuple[Verdict, Verdict]]:
    """Per key, two verdicts: did the rewrite change the values (after vs before, same device),
    and does XLA agree with CPU (after vs the graph run eagerly on CPU); where XLA differs, the
    first node whose value differs while its inputs agree."""
    verdicts = {}
    for graph in rewritten:
        if graph.key not in runs.records:
            continue
        before, after = runs.records[graph.key]
        traced = graph.pinned.traced.graph_module
        cpu = cpu_verdict(traced, before, after, runs.driver.own_generator if runs.driver is not None else None)
        if cpu.status == "differ":
            stages.start("find where XLA differs")
            assert runs.driver is not None
            cpu = dataclasses.replace(cpu, first_difference=_first_difference(graph, options, runs.driver))
        verdicts[graph.key] = (rewrite_verdict(traced, before, after, options.rtol, options.atol), cpu)
    return verdicts


def _first_difference(graph: RewrittenGraph, options: ExplainOptions, driver: Driver) -> NodeDifference | None:
    from neurondev.runs.first_difference import first_difference

    traced = graph.pinned.traced
    on_cpu, _ = rewrite_copy(traced.graph_module, target="cpu")
    host = [value.index for value in traced.host_values]
    return first_difference(
        on_cpu,
        graph.graph_module,
        traced.inputs,
        driver=driver,
        graph=graph.key.graph,
        keep_on_host=host,
        seed=SEED,
        rtol=options.rtol,
        atol=options.atol,
    )
