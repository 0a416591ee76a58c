"""What each stage of explain hands on, and ``Made``: the one frozen record of what the stages have made so far."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import torch.fx

from neurondev.fx.kernels import CpuKernel
from neurondev.fx.pins import DevicePin
from neurondev.passes.device_rewriter import Rewrite
from neurondev.report.fixes.records import Fix
from neurondev.report.model import NativeTiming, SectionKey
from neurondev.report.options import ExplainOptions
from neurondev.report.skips import Skip
from neurondev.report.verdicts import Verdict
from neurondev.runs.interface import Driver
from neurondev.runs.program_records import Programs
from neurondev.runs.run_records import RunRecord
from neurondev.runs.traces import TraceComparison
from neurondev.trace.capture import Capture
from neurondev.trace.inputs import HostValue

__all__ = ["Made", "Native", "PinnedGraph", "ProgramStage", "RewrittenGraph", "Runs", "Runtime", "TracedGraph"]


@dataclasses.dataclass(frozen=True)
class TracedGraph:
    """A graph to explain, with the inputs it ran with while tracing."""

    key: SectionKey
    graph_module: torch.fx.GraphModule
    inputs: tuple[Any, ...]
    host_values: tuple[HostValue, ...] = ()
    on_meta: bool = False  # traced on the meta device: device=meta is the frozen device, and nothing can run


@dataclasses.dataclass(frozen=True)
class PinnedGraph:
    traced: TracedGraph
    pins: tuple[DevicePin, ...]
    cpu_kernels: tuple[CpuKernel, ...] = ()


@dataclasses.dataclass(frozen=True)
class RewrittenGraph:
    pinned: PinnedGraph
    graph_module: torch.fx.GraphModule
    rewrites: tuple[Rewrite, ...]

    @property
    def key(self) -> SectionKey:
        return self.pinned.traced.key


@dataclasses.dataclass(frozen=True)
class Runtime:
    """The device's runtime, started before anything makes a value there (XLA's, or a native device's); or why there is none."""

    info: Mapping[str, str] = dataclasses.field(default_factory=dict)
    unavailable: Skip | None = None
    driver: Driver | None = None


@dataclasses.dataclass(frozen=True)
class Runs:
    """Both runs of every graph on the XLA device, or why nothing ran."""

    records: Mapping[SectionKey, tuple[RunRecord, RunRecord]] = dataclasses.field(default_factory=dict)
    runtime: Mapping[str, str] = dataclasses.field(default_factory=dict)
    skipped: Skip | None = None
    driver: Driver | None = None


@dataclasses.dataclass(frozen=True)
class ProgramStage:
    """The user's program on XLA as written and rewritten, the rewritten one's graphs as traced on
    XLA (the native trace, before the pass), or why the program was not run."""

    programs: Programs | None = None
    native: Capture | None = None
    skipped: Skip | None = None


@dataclasses.dataclass(frozen=True)
class Native:
    """The native trace on XLA and, per key both traces have, the rewritten/native time per call."""

    traces: TraceComparison | None = None
    skipped: Skip | None = None
    timings: Mapping[SectionKey, NativeTiming] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Made:
    """What explain's stages have made so far, one frozen record grown stage by stage
    (``dataclasses.replace``): a stage reads what it needs from it, and the last one assembles it."""

    options: ExplainOptions
    captured: Capture
    runtime: Runtime = dataclasses.field(default_factory=lambda: Runtime(unavailable=Skip("not needed")))
    pinned: tuple[PinnedGraph, ...] = ()
    rewritten: tuple[RewrittenGraph, ...] = ()
    runs: Runs = dataclasses.field(default_factory=Runs)
    program: ProgramStage = dataclasses.field(default_factory=ProgramStage)
    fixes: tuple[Fix, ...] = ()
    native: Native = dataclasses.field(default_factory=Native)
    verdicts: Mapping[SectionKey, tuple[Verdict, Verdict]] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
