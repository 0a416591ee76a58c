"""What explain found, as data: sections keyed by (graph, part), run totals, and ExplanationData itself.

Everything here is set once by the pipeline (``neurondev.report.pipeline``) and never written to
afterwards. This is data and what derives from it (properties, tables); the displays are added by
the layers above (``render.display``, ``notebook.interactive``) and the public ``neurondev.Explanation``
is composed in ``neurondev.results``. ``rerun`` calls the pipeline the data was handed (``rerunner``).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Self

import torch
import torch.fx

from neurondev.errors import InvalidOptionError, InvalidSubjectError
from neurondev.fx.kernels import CpuKernel
from neurondev.fx.pins import DevicePin, pin_table
from neurondev.passes.device_rewriter import Rewrite
from neurondev.report.fixes.records import Fix
from neurondev.report.skips import Skip
from neurondev.report.transfers import CopySite, copy_sites
from neurondev.report.verdicts import Verdict
from neurondev.runs.first_difference import NodeDifference
from neurondev.runs.program_records import Programs
from neurondev.runs.run_records import Fallback, RunRecord, place_of
from neurondev.runs.traces import LineDifference, TraceComparison
from neurondev.trace.capture import Capture
from neurondev.trace.capture_notes import CaptureNote
from neurondev.trace.inputs import HostValue

__all__ = ["PARTS", "ExplanationData", "NativeTiming", "Section", "SectionKey", "Totals", "all_of"]

PARTS = ("whole", "forward", "backward")
_WHICH = ("before", "after")


@dataclasses.dataclass(frozen=True, order=True)
class SectionKey:
    """Which graph a section is: dynamo's graph ``graph`` whole, or aot_autograd's forward or backward of it."""

    graph: int
    part: str = "whole"

    @property
    def label(self) -> str:
        return f"graph {self.graph}" if self.part == "whole" else f"graph {self.graph} {self.part}"


@dataclasses.dataclass(frozen=True)
class NativeTiming:
    """Per-call seconds of the rewritten graph and of the one traced natively on XLA, measured side by side."""

    rewritten: float
    native: float

    @property
    def ratio(self) -> float:
        return self.rewritten / self.native


@dataclasses.dataclass(frozen=True, eq=False)
class Section:
    """One graph: as traced (``traced``) and after DeviceRewriterPass (``rewritten``), its pins and
    rewrites, its runs on the XLA device before and after the pass, and the values verdict.

    ``host_values`` are inputs read from a global, a closure or a plain attribute: they stay on
    the host in both runs, as they would in the user's model moved to XLA.
    Two verdicts, never merged: ``rewrite_verdict`` (the run after the pass against the run before
    it, same device, same seed: did the rewrite change the values?) and ``cpu_verdict`` (the run
    after the pass against the graph run eagerly on CPU: does XLA agree with CPU?).
    ``cpu_kernels`` are ATen kernels a CPU trace chose for the CPU (no rewrite changes them).
    It holds graphs and tensors: two Sections are equal only when they are the same one.
    """

    key: SectionKey
    traced: torch.fx.GraphModule
    rewritten: torch.fx.GraphModule
    inputs: tuple[Any, ...] = dataclasses.field(repr=False)
    pins: tuple[DevicePin, ...] = ()
    rewrites: tuple[Rewrite, ...] = ()
    before: RunRecord | None = None
    after: RunRecord | None = None
    rewrite_verdict: Verdict | None = None
    cpu_verdict: Verdict | None = None
    native: NativeTiming | None = None
    host_values: tuple[HostValue, ...] = ()
    cpu_kernels: tuple[CpuKernel, ...] = ()

    @property
    def label(self) -> str:
        return self.key.label

    @property
    def nodes(self) -> int:
        return len(self.traced.graph.nodes)


@dataclasses.dataclass(frozen=True)
class Totals:
    """Breaks, executions, transfers, uploads and failures summed over the runs of every section;
    ``output_transfers`` are the transfers to the host of results handed back at the end (part of
    ``transfers_to_host``, but no break)."""

    graphs_run: int = 0
    graph_breaks: int = 0
    executions: int = 0
    transfers_to_host: int = 0
    transfers_to_device: int = 0
    uploads: int = 0
    fallbacks: int = 0
    failures: int = 0
    output_transfers: int = 0
    host_copies: int = 0
    syncs: int = 0

    @classmethod
    def of(cls, records: Iterable[RunRecord]) -> Totals:
        records = tuple(records)
        return cls(
            graphs_run=len(records),
            graph_breaks=sum(len(r.graph_breaks) for r in records),
            executions=sum(r.executions for r in records),
            transfers_to_host=sum(r.transfers_to_host for r in records),
            transfers_to_device=sum(r.transfers_to_device for r in records),
            uploads=sum(len(r.uploads) for r in records),
            fallbacks=sum(sum(r.fallback_ops.values()) for r in records),
            failures=sum(1 for r in records if r.error is not None),
            output_transfers=sum(t.transfers_to_host for r in records for t in r.output_transfers),
            host_copies=sum(len(r.host_copies) for r in records),
            syncs=sum(r.syncs for r in records),
        )

    def __getitem__(self, name: str) -> int:  # totals["graph_breaks"] reads as it did when this was a dict
        return int(getattr(self, name))

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


def all_of(verdicts: Iterable[Verdict | None]) -> bool | None:
    """False when any verdict says the values differ; True only when every one was compared and
    agrees; None when any was not compared (not run, failed, random values)."""
    answers = [None if verdict is None else verdict.matches for verdict in verdicts]
    if False in answers:
        return False
    if not answers or None in answers:
        return None
    return True


@dataclasses.dataclass(frozen=True, eq=False)
class ExplanationData:
    """Everything ``neurondev.explain`` found, as data, set once (the displays are the layers' above:
    ``neurondev.Explanation`` adds them). It holds graphs and tensors: equal only to itself.

    ``pin_table()`` lists the pins as a DataFrame (the display adds ``fallback_table()``, the ops that fell back to
    the CPU with what to write instead), ``transfer_table()`` every copy between host and device by line, ``totals("before")`` sums the runs. Two scenarios, kept apart: ``program`` is your
    whole function under ``torch.compile`` on XLA, as written (openxla) and rewritten (the neurondev
    backend), ``program_skipped`` says why it was not run; ``before``/``after`` hold one RunRecord
    per graph traced on CPU and moved to XLA (a backend's view, the seed's scenario), empty when
    nothing ran (``skipped`` says why). ``rerun(target=...)`` returns a new one.
    """

    name: str
    target: torch.device
    level: str
    capture: Capture = dataclasses.field(repr=False)
    sections: tuple[Section, ...] = ()
    skipped: Skip | None = None
    runtime: Mapping[str, str] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    traces: TraceComparison | None = None
    traces_skipped: Skip | None = None
    rtol: float | None = None
    atol: float | None = None
    notes: tuple[CaptureNote, ...] = ()
    stage_seconds: Mapping[str, float] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    fixes: tuple[Fix, ...] = ()
    program: Programs | None = None
    program_skipped: Skip | None = None
    rerunner: Callable[..., ExplanationData] | None = dataclasses.field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:  # read-only mappings, whatever the caller passed
        for name in ("runtime", "stage_seconds"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    # --- derived views ------------------------------------------------------------------------
    @property
    def stack(self) -> str:
        """'xla' when the target is an XLA device, 'native' for a PrivateUse1 device."""
        return "xla" if self.target.type == "xla" else "native"

    @property
    def place(self) -> str:
        """How sentences name where things ran: 'XLA', or the native device ('hostdev:0', 'neuron:0')."""
        return place_of(self.runtime.get("device") or self.target)

    @property
    def pins(self) -> tuple[DevicePin, ...]:
        """Every device pin, section by section."""
        return tuple(pin for section in self.sections for pin in section.pins)

    def pin_table(self) -> Any:
        """A pandas.DataFrame with one row per pin (built now, from ``pins``)."""
        return pin_table(self.pins)

    @property
    def fallbacks(self) -> tuple[tuple[str, Fallback], ...]:
        """The ops that fell back to the CPU, each with the scenario it was seen in: your program (the
        rewritten run's steady call) when it ran, else the graphs traced on CPU (after the pass)."""
        if self.program is not None and self.program.rewritten.ok:
            return tuple(("your program", fallback) for fallback in self.program.rewritten.fallbacks)
        return tuple(("graph traced on CPU", fallback) for record in self.after for fallback in record.fallbacks)

    def cost_table(self) -> Any:
        """A pandas.DataFrame, one row per timed node of each graph's measured call on the device, before the pass and
        after it, the costliest first (``RUN_COST_COLUMNS``): a graph break with its rule and line, seconds by
        torch_xla's own clocks (compiles, executions, transfers to the host), share of its run."""
        import pandas

        from neurondev.report.run_costs import RUN_COST_COLUMNS, run_cost_rows

        return pandas.DataFrame(run_cost_rows(self), columns=list(RUN_COST_COLUMNS))

    def transfer_table(self) -> Any:
        """A pandas.DataFrame, one row per place that copies between the host and the device on every call:
        scenario (your program as written or with the neurondev backend; the graphs traced on CPU, before or
        after the pass), direction ("to host" / "to device"), copies and bytes per call (None where the device
        does not count bytes: XLA), file, line, code, module, and the node or op that copies (an XLA program's
        transfers have no line: torch_xla counts them per process)."""
        import pandas

        from neurondev.report.transfers import COLUMNS

        return pandas.DataFrame([site.row() for site in self.transfer_sites()], columns=list(COLUMNS))

    def transfer_sites(self) -> tuple[CopySite, ...]:
        """The rows of ``transfer_table()`` as records (each a finding: ND202 to the host, ND203 to the device)."""
        return copy_sites(self.program, ((section.before, section.after) for section in self.sections))

    @property
    def frozen(self) -> Any:
        """Deprecated: the pin table (every pin, frozen or not); use ``pin_table()``."""
        warnings.warn(
            "Explanation.frozen is now Explanation.pin_table(): it lists every pin, not only frozen ones", DeprecationWarning, stacklevel=2
        )
        return self.pin_table()

    @property
    def host_values(self) -> tuple[HostValue, ...]:
        """Tensors read from a global, a closure or a plain attribute: they stay on the host on XLA."""
        return tuple(value for section in self.sections for value in section.host_values)

    @property
    def rewrites(self) -> tuple[Rewrite, ...]:
        return tuple(rewrite for section in self.sections for rewrite in section.rewrites)

    @property
    def before(self) -> tuple[RunRecord, ...]:
        """The runs before the pass, one per section that ran."""
        return tuple(s.before for s in self.sections if s.before is not None)

    @property
    def after(self) -> tuple[RunRecord, ...]:
        """The runs after the pass, one per section that ran."""
        return tuple(s.after for s in self.sections if s.after is not None)

    @property
    def rewrite_preserves_values(self) -> bool | None:
        """Did the rewrite leave every graph's values as they were, on XLA (the graph-level runs):
        True only when every graph was compared; False when any changed; None when any was not
        compared (runs skipped or failed, or random values)."""
        return all_of(s.rewrite_verdict for s in self.sections)

    @property
    def graphs_match_cpu(self) -> bool | None:
        """Does every graph, traced on CPU and run on XLA after the pass, agree with CPU (the
        seed's scenario: a backend that moved a CPU-traced graph to XLA); None when any was not compared."""
        return all_of(s.cpu_verdict for s in self.sections)

    @property
    def xla_matches_cpu(self) -> bool | None:
        """Does your program, compiled for XLA with the neurondev backend, give what it gives on CPU:
        the rewritten program's outputs against the function run eagerly on CPU (None: the program
        was not run, failed, or has random values; ``program`` and ``program_skipped`` say which)."""
        return None if self.program is None else self.program.rewritten.matches_cpu

    @property
    def first_difference(self) -> NodeDifference | None:
        """The first node, in the first graph that differs on XLA, whose value differs from CPU while its inputs agree."""
        return next((s.cpu_verdict.first_difference for s in self.sections if s.cpu_verdict and s.cpu_verdict.first_difference), None)

    @property
    def device_specialised(self) -> tuple[LineDifference, ...]:
        """Lines of the user's code traced into other ops on XLA than on CPU (``if x.device.type == ...``)."""
        return () if self.traces is None else self.traces.differences

    def not_compared(self, question: str) -> tuple[int, int]:
        """(graphs not compared, graphs) for ``question`` 'rewrite' or 'cpu'."""
        verdicts = [getattr(s, f"{question}_verdict") for s in self.sections]
        return sum(v is None or v.matches is None for v in verdicts), len(verdicts)

    @property
    def outputs_match(self) -> bool | None:
        """Deprecated: one verdict merged two questions; use rewrite_preserves_values and xla_matches_cpu."""
        warnings.warn(
            "Explanation.outputs_match merged two verdicts: use rewrite_preserves_values (did the rewrite change the values) "
            "and xla_matches_cpu (does XLA agree with CPU)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.rewrite_preserves_values

    @property
    def cpu_kernels(self) -> tuple[CpuKernel, ...]:
        """ATen kernels a CPU trace chose for the CPU, section by section."""
        return tuple(kernel for section in self.sections for kernel in section.cpu_kernels)

    def fix_of(self, pin: DevicePin) -> Fix | None:
        """The fix of the statement ``pin`` is in (None: the pin is not in the user's code)."""
        if not isinstance(pin, DevicePin):
            raise InvalidSubjectError(f"fix_of takes one of this Explanation's pins (ex.pins[i]), got {type(pin).__name__}")
        if not any(pin is own or pin == own for own in self.pins):
            raise InvalidSubjectError(f"fix_of takes one of this Explanation's pins (ex.pins[i]); {pin.node} is a pin of another one")
        return self.fix_at(pin.file, pin.line)

    def fix_at(self, file: str | None, line: int | None) -> Fix | None:
        """The fix of the statement at ``file:line`` (None: no fix there)."""
        return next((fix for fix in self.fixes if fix.file == file and fix.first <= (line or 0) <= fix.last), None)

    def patch(self, *, root: str | Path | None = None) -> str:
        """A unified diff of every verified fix in the user's files (paths relative to ``root``, default
        the working folder); apply it with ``git apply`` or ``patch -p1``. Fixes in notebook cells are in
        ``fixes`` (and on the card), not in the diff."""
        from neurondev.report.fixes.patch import unified_diff

        if root is not None and (not isinstance(root, (str, Path)) or not Path(root).is_dir()):
            raise InvalidOptionError(
                f"root is the folder the diff's paths are relative to (a str or Path of an existing folder), got {root!r}"
            )
        return unified_diff(self.fixes, root=root)

    def section(self, which: int | SectionKey) -> Section:
        """A section by its position in ``sections`` or by its key; InvalidOptionError otherwise."""
        if isinstance(which, SectionKey):
            found = [s for s in self.sections if s.key == which]
            if found:
                return found[0]
        elif isinstance(which, int) and not isinstance(which, bool) and 0 <= which < len(self.sections):
            return self.sections[which]
        count = len(self.sections)
        raise InvalidOptionError(f"section is a position from 0 to {count - 1} ({count} section(s)) or a SectionKey of one, got {which!r}")

    def totals(self, which: str) -> Totals:
        """Breaks, executions, transfers, uploads and failures summed over the runs ``before`` or ``after``."""
        if which not in _WHICH:
            raise InvalidOptionError(f"which is 'before' or 'after', got {which!r}")
        return Totals.of(self.before if which == "before" else self.after)

    def __repr__(self) -> str:
        pins, graphs = len(self.pins), len(self.sections)
        ran = f"{len(self.before)} graph(s) run" if not self.skipped else f"not run ({self.skipped.kind})"
        return f"<Explanation of {self.name}: {pins} device pin(s) in {graphs} graph(s), {ran}>"

    def rerun(self, *, target: str | torch.device | None = None, on_step: Callable[[], None] | None = None) -> ExplanationData:
        """A new Explanation of the same trace, rewritten for ``target`` (default: the same) and run again.

        This one is left as it is. ``on_step`` is called after each run (the explorer's progress bar).
        """
        if self.rerunner is None:
            raise InvalidOptionError("this Explanation was not made by explain: there is no pipeline to run it again")
        return type(self).of(self.rerunner(self, target=self.target if target is None else target, on_step=on_step))

    @classmethod
    def of(cls, data: ExplanationData) -> Self:
        """This class holding ``data``'s fields (the public Explanation of what the pipeline made)."""
        return data if type(data) is cls else cls(**{field.name: getattr(data, field.name) for field in dataclasses.fields(data)})
