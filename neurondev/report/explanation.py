"""explain(): capture on CPU, find the pins, rewrite a copy of every graph, run both on XLA, in one object."""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from typing import Any, Callable

import torch

from neurondev.render import graphs as render_cache
from neurondev.trace.capture import Capture, capture, required_inputs
from neurondev.xla.values import Comparison, check_tolerances, compare_outputs
from neurondev.errors import InvalidOptionError, NotCallableError, XlaUnavailableError
from neurondev.passes.device_rewriter import Rewrite, rewrite_copy
from neurondev.fx.pins import DevicePin, find_pins, parse_target
from neurondev.notebook.progress import Stages
from neurondev.xla.run import RunRecord, run_on_xla

__all__ = ["Explanation", "GraphSection", "explain"]

_STAGES = ("trace", "find pins", "rewrite", "run before", "run after", "render")


@dataclasses.dataclass
class GraphSection:
    """One dynamo graph: as traced, rewritten, its pins and rewrites, both runs and the values verdict.

    ``values`` compares the rewritten run with the frozen run on the same device when both ran
    (the verdict that matters: the rewrite did not change the values); otherwise the rewritten run
    with the CPU reference. Each run's own ``comparison`` against CPU is reported beside it.
    """

    index: int
    before: torch.fx.GraphModule
    after: torch.fx.GraphModule
    pins: list[DevicePin]
    rewrites: list[Rewrite]
    run_before: RunRecord | None = None
    run_after: RunRecord | None = None
    values: Comparison | None = None
    values_against: str | None = None
    inputs: list = dataclasses.field(default_factory=list, repr=False)
    label: str = ""
    native_seconds: dict[str, float] | None = None

    @property
    def native_ratio(self) -> float | None:
        """Per-call time of the rewritten graph over the natively traced one (measured side by side)."""
        if not self.native_seconds:
            return None
        return self.native_seconds["rewritten"] / self.native_seconds["native"]


@dataclasses.dataclass
class Explanation:
    """Everything ``neurondev.explain`` found, for a notebook, a terminal, a report or CI.

    Display it in Jupyter for the card; ``summary()`` for a terminal; ``save_html(path)`` for a
    report that opens offline; ``to_dict()``/``to_json()`` for machines; ``explore()`` for the
    widget. ``before``/``after`` hold one RunRecord per graph, empty when nothing ran
    (``skipped`` says why).
    """

    name: str
    target: str
    capture: Capture
    frozen: Any
    sections: list[GraphSection]
    skipped: str | None = None
    runtime: dict[str, str] = dataclasses.field(default_factory=dict)
    rtol: float | None = None
    atol: float | None = None
    stage_seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    native: Any = None
    native_skipped: str | None = None
    level: str = "dynamo"
    _svgs: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def graphs_before(self) -> list[torch.fx.GraphModule]:
        return [section.before for section in self.sections]

    @property
    def graphs_after(self) -> list[torch.fx.GraphModule]:
        return [section.after for section in self.sections]

    @property
    def rewrites(self) -> list[Rewrite]:
        return [rewrite for section in self.sections for rewrite in section.rewrites]

    @property
    def before(self) -> list[RunRecord]:
        return [s.run_before for s in self.sections if s.run_before is not None]

    @property
    def after(self) -> list[RunRecord]:
        return [s.run_after for s in self.sections if s.run_after is not None]

    @property
    def outputs_match(self) -> bool | None:
        """One verdict for the whole function: every graph's values agree (None: nothing compared)."""
        verdicts = [s.values.matches for s in self.sections if s.values is not None]
        return all(verdicts) if verdicts else None

    def totals(self, which: str) -> dict[str, int]:
        """Breaks, executions, transfers, uploads and failures summed over the graphs' runs."""
        records = self.before if which == "before" else self.after
        return {
            "graphs_run": len(records),
            "graph_breaks": sum(len(r.graph_breaks) for r in records),
            "executions": sum(r.executions for r in records),
            "transfers_to_host": sum(r.transfers_to_host for r in records),
            "transfers_to_device": sum(r.transfers_to_device for r in records),
            "uploads": sum(len(r.uploads) for r in records),
            "fallbacks": sum(sum(r.fallback_ops.values()) for r in records),
            "failures": sum(1 for r in records if r.error is not None),
        }

    def summary(self) -> str:
        from neurondev.render.text import summary

        return summary(self)

    def __repr__(self) -> str:
        pins, graphs = len(self.frozen), len(self.sections)
        ran = f"{len(self.before)} graph(s) run" if not self.skipped else f"not run: {self.skipped}"
        return f"<Explanation of {self.name}: {pins} device pin(s) in {graphs} graph(s), {ran}>"

    def _repr_html_(self) -> str:
        from neurondev.render.html import card

        return card(self)

    def save_html(self, path: str | Path) -> Path:
        """Write the self-contained report (inline SVG and CSS, no script, nothing from the network)."""
        from neurondev.render.html import report

        path = Path(path)
        path.write_text(report(self), encoding="utf-8")
        return path

    def to_dict(self) -> dict[str, Any]:
        from neurondev.render.json import explanation_dict

        return explanation_dict(self)

    def to_json(self, **options: Any) -> str:
        return json.dumps(self.to_dict(), indent=options.pop("indent", 2), default=str, **options)

    def to_dot(self, which: str = "before", graph: int = 0, *, full: bool = False, radius: int = 2) -> str:
        return render_cache.dot_of(self, which, graph, full=full, radius=radius)

    def svg(self, which: str = "before", graph: int = 0, *, full: bool = False, radius: int = 2) -> str:
        """SVG text of one graph (drawn once, then cached); DotUnavailableError without a dot program."""
        return render_cache.svg_of(self, which, graph, full=full, radius=radius)

    def save_svg(self, path: str | Path, which: str = "before", graph: int = 0, **options: Any) -> Path:
        path = Path(path)
        path.write_text(self.svg(which, graph, **options), encoding="utf-8")
        return path

    def rerun(self, *, target: str | torch.device | None = None, on_step: Callable[[], None] | None = None) -> "Explanation":
        """Rewrite again for ``target`` (default: the same) and run every graph before and after again.

        The Explanation is updated in place (its pins, rewrites, runs and pictures) and returned;
        ``on_step`` is called after each graph's run (the explorer's progress bar).
        """
        target = self.target if target is None else target
        stages = Stages((), quiet=True, on_step=on_step)
        self.target = str(parse_target(target))
        self.frozen, self.sections = _pins_and_sections(self.capture, target, self.level, stages)
        self.skipped, self._svgs = None, {}
        _run_all(self, True, stages)
        return self

    def explore(self):
        from neurondev.notebook.widgets import Explorer

        return Explorer(self)


@dataclasses.dataclass(frozen=True)
class ExplainOptions:
    """The options of one explain call (checked once, passed along as one value)."""

    target: str | torch.device = "xla"
    run: bool = True
    quiet: bool = False
    rtol: float | None = None
    atol: float | None = None
    native: bool = False
    level: str = "dynamo"

    def check(self) -> "ExplainOptions":
        parse_target(self.target)
        for name in ("run", "quiet", "native"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidOptionError(f"{name} is True or False, got {getattr(self, name)!r}")
        check_tolerances(self.rtol, self.atol)
        if self.level not in ("dynamo", "aten"):
            raise InvalidOptionError(f"level is 'dynamo' (the graphs dynamo makes) or 'aten' (aot_autograd's forward and backward), got {self.level!r}")
        return self


def explain(
    fn: Callable,
    *args: Any,
    target: str | torch.device = "xla",
    run: bool = True,
    quiet: bool = False,
    rtol: float | None = None,
    atol: float | None = None,
    native: bool = False,
    level: str = "dynamo",
    **kwargs: Any,
) -> Explanation | Callable[..., Explanation]:
    """Explain the device pins of ``fn(*args, **kwargs)``: trace on CPU, find, rewrite, run before and after.

    ``neurondev.explain(fn)`` with no inputs returns a callable: ``neurondev.explain(fn)(x)``.
    ``fn`` may also be a Capture made earlier (``neurondev.capture(fn, x)``): nothing is traced again.
    ``target``: the device pins are rewritten to. ``run=False`` skips the XLA runs. ``quiet``
    silences the progress bar. ``rtol``/``atol``: tolerances of the value comparisons.
    ``native=True`` also traces natively on XLA (``neurondev.compare_traces``): device-specialised
    code, and the rewritten graph's time per call against the native one's. ``level="aten"``
    explains aot_autograd's forward and backward graphs instead of dynamo's.
    Nothing of the user's is mutated and the user's torch_xla counters are never cleared.
    """
    options = ExplainOptions(target, run, quiet, rtol, atol, native, level).check()
    if isinstance(fn, Capture):
        if native:
            raise InvalidOptionError("native=True traces the function again on XLA: pass the function and its inputs, not a Capture")
        return _from_capture(fn, options)
    if not callable(fn):
        raise NotCallableError(
            f"explain needs a function or an nn.Module, got {type(fn).__name__}; "
            "pass the function itself: neurondev.explain(f, x), not neurondev.explain(f(x))"
        )
    if not args and not kwargs and required_inputs(fn) != []:  # names to fill, or a signature we cannot read
        return functools.wraps(fn)(lambda *a, **k: _explain(fn, a, k, options))
    return _explain(fn, args, kwargs, options)


def _explain(fn: Callable, args: tuple, kwargs: dict, options: ExplainOptions) -> Explanation:
    names = _STAGES + (("trace on XLA",) if options.native else ())
    stages = Stages(names, quiet=options.quiet, name=getattr(fn, "__name__", type(fn).__name__))
    with stages:
        stages.start("trace")
        captured = capture(fn, *args, level=options.level, **kwargs)
        explanation = _explain_captured(captured, stages, options)
        if options.native:
            stages.start("trace on XLA")
            _add_native(explanation, fn, args, kwargs)
    explanation.stage_seconds = dict(stages.seconds)
    return explanation


def _from_capture(captured: Capture, options: ExplainOptions) -> Explanation:
    with Stages(_STAGES[1:], quiet=options.quiet, name=captured.name) as stages:
        explanation = _explain_captured(captured, stages, options)
    explanation.stage_seconds = dict(stages.seconds)
    return explanation


def _explain_captured(captured: Capture, stages: Stages, options: ExplainOptions) -> Explanation:
    table, sections = _pins_and_sections(captured, options.target, options.level, stages)
    explanation = Explanation(
        captured.name, str(parse_target(options.target)), captured, table, sections, rtol=options.rtol, atol=options.atol,
        level=options.level,
    )
    _run_all(explanation, options.run, stages)
    stages.start("render", total=max(2 * len(sections), 1))
    render_cache.prerender(explanation)
    return explanation


def _pins_and_sections(captured: Capture, target: Any, level: str, stages: Stages) -> tuple[Any, list[GraphSection]]:
    """The pin table over the graphs of ``level``, and one rewritten section per graph."""
    from neurondev.fx.diagnose import diagnose

    graphs = _graphs_of(captured, level)
    stages.start("find pins")
    table = diagnose([gm for gm, _, _ in graphs], target=target)
    stages.start("rewrite", total=max(len(graphs), 1))
    sections = []
    for index, (gm, inputs, label) in enumerate(graphs):
        sections.append(_section(index, gm, target, inputs, label))
    return table, sections


def _graphs_of(captured: Capture, level: str) -> list[tuple[torch.fx.GraphModule, list, str]]:
    """(graph, its inputs, its label) per section: dynamo's graphs, or aot_autograd's forward/backward."""
    if level == "aten":
        if captured.graphs and not captured.aten_graphs:
            raise InvalidOptionError(
                "this Capture holds dynamo's graphs only: make it with neurondev.capture(fn, *args, level='aten')"
            )
        return [(g.graph_module, g.inputs, f"graph {g.dynamo_graph} {g.kind}") for g in captured.aten_graphs]
    return [(gm, inputs, f"graph {i}") for i, (gm, inputs) in enumerate(zip(captured.graphs, captured.example_inputs))]


def _add_native(explanation: Explanation, fn: Callable, args: tuple, kwargs: dict) -> None:
    """The native trace beside the CPU one; where they agree, time per call rewritten vs native."""
    from neurondev.xla.native import compare_with_native, side_by_side_seconds

    try:
        comparison = compare_with_native(explanation.capture, fn, args, kwargs)
    except XlaUnavailableError as error:
        explanation.native_skipped = f"no XLA device: {error}"
        return
    explanation.native = comparison
    if not comparison.agree or explanation.skipped:
        return
    native = comparison.native
    for section in explanation.sections:
        runs = {"rewritten": (section.after, section.inputs),
                "native": (native.graphs[section.index], native.example_inputs[section.index])}
        section.native_seconds = side_by_side_seconds(runs)


def _section(index: int, gm: torch.fx.GraphModule, target: Any, inputs: list, label: str) -> GraphSection:
    after, rewrites = rewrite_copy(gm, target=target)
    pins = find_pins(gm, target=target, graph=index)
    return GraphSection(index, gm, after, pins, [dataclasses.replace(r, graph=index) for r in rewrites], inputs=inputs, label=label)


def _run_all(explanation: Explanation, run: bool, stages: "Stages") -> None:
    if not run:
        explanation.skipped = "run=False: the graphs were not run on an XLA device"
        return
    if not explanation.sections:
        explanation.skipped = "no graph was recorded, so there is nothing to run"
        return
    from neurondev import xla

    try:
        explanation.runtime = xla.describe()
    except XlaUnavailableError as error:
        explanation.skipped = f"no XLA device: {error}"
        return
    tolerances = {"rtol": explanation.rtol, "atol": explanation.atol}
    stages.start("run before", total=len(explanation.sections))
    for section in explanation.sections:
        section.run_before = run_on_xla(section.before, *section.inputs, **tolerances)
        stages.advance()
    stages.start("run after", total=len(explanation.sections))
    for section in explanation.sections:
        section.run_after = run_on_xla(section.after, *section.inputs, **tolerances)
        _judge_values(section, tolerances)
        stages.advance()


def _judge_values(section: GraphSection, tolerances: dict) -> None:
    before, after = section.run_before, section.run_after
    if after.error is not None:
        return
    if before.error is None:
        section.values = compare_outputs(after.outputs, before.outputs, **tolerances)
        section.values_against = "the frozen graph's run on the same device"
    elif after.comparison is not None:
        section.values = after.comparison
        section.values_against = "the CPU reference (the frozen graph did not run)"
