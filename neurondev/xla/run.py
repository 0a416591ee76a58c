"""run_on_xla: run one FX graph on the XLA device and record, per node, what executed and what crossed."""

from __future__ import annotations

import copy
import dataclasses
import statistics
import time
from typing import Any, Callable

import torch
import torch.fx
import torch.utils._pytree as pytree

from neurondev import xla
from neurondev.xla.values import Comparison, check_tolerances, compare_outputs
from neurondev.errors import InputCountError, InvalidOptionError, InvalidSubjectError
from neurondev.passes.device_rewriter import rewrite_copy
from neurondev.fx.pins import describe_object, readable_target
from neurondev.trace.source import location_fields, short_location, source_of

__all__ = ["Crossing", "GraphBreak", "RunError", "RunRecord", "Upload", "run_on_xla"]


@dataclasses.dataclass(frozen=True)
class GraphBreak:
    """A node during which the lazy XLA graph was cut: a forced execution and/or a device-to-host sync."""

    node: str
    target: str
    executions: int
    transfers_to_host: int
    file: str | None
    line: int | None
    code: str | None


@dataclasses.dataclass(frozen=True)
class Upload:
    """A node that copies host data to the device on every call (``torch.tensor([...], device=...)``,
    ``torch.rand``, an empty KV cache): no break, but a transfer that no device rewrite removes."""

    node: str
    target: str
    transfers_to_device: int
    file: str | None
    line: int | None
    code: str | None


@dataclasses.dataclass(frozen=True)
class Crossing:
    """An edge of the graph along which a value moves between devices (XLA->CPU or CPU->XLA)."""

    source: str
    node: str
    from_device: str
    to_device: str


@dataclasses.dataclass(frozen=True)
class RunError:
    """Why a run failed: the node it failed at, its source line and the exception."""

    node: str
    target: str
    exception: BaseException
    file: str | None
    line: int | None
    code: str | None

    input_index: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data: the exception as its type name and message."""
        fields = {k: getattr(self, k) for k in ("node", "target", "file", "line", "code", "input_index")}
        return {**fields, "exception": type(self.exception).__name__, "message": str(self.exception), "text": str(self)}

    def __str__(self) -> str:
        if self.input_index is not None:
            return f"{type(self.exception).__name__} at input {self.input_index} ({self.node}): {self.exception}"
        where = f" ({self.file}:{self.line}: {self.code})" if self.file else ""
        return f"{type(self.exception).__name__} at node {self.node} [{self.target}]{where}: {self.exception}"


@dataclasses.dataclass
class RunRecord:
    """What happened when one graph ran on the XLA device.

    A run is a warm-up call (compilations and first-time uploads happen there; see ``first_call``)
    and a measured call, whose figures these are: what happens on every call. Counts are deltas
    of torch_xla.debug.metrics, never reset. ``executions``/``compilations`` are the ones forced
    mid-graph (before the graph's own end); ``graph_breaks`` attributes them (and transfers to the
    host) to nodes, ``uploads`` attributes transfers to the device that come with no break.
    ``comparison`` holds the figures against the CPU reference (``matches_reference`` its verdict,
    ``mismatch`` its message); ``not_compared`` says why there is none.
    """

    device: str
    executions: int = 0
    compilations: int = 0
    transfers_to_host: int = 0
    transfers_to_device: int = 0
    fallback_ops: dict[str, int] = dataclasses.field(default_factory=dict)
    graph_breaks: list[GraphBreak] = dataclasses.field(default_factory=list)
    uploads: list[Upload] = dataclasses.field(default_factory=list)
    node_devices: dict[str, Any] = dataclasses.field(default_factory=dict)
    crossings: list[Crossing] = dataclasses.field(default_factory=list)
    output_devices: list[str] = dataclasses.field(default_factory=list)
    error: RunError | None = None
    comparison: Comparison | None = None
    not_compared: str | None = None
    seconds: float | None = None
    first_call: xla.Counts | None = None
    outputs: Any = dataclasses.field(default=None, repr=False)

    @property
    def matches_reference(self) -> bool | None:
        """Whether the outputs equal the CPU reference within tolerance; None when not compared."""
        return None if self.comparison is None else self.comparison.matches

    @property
    def mismatch(self) -> str | None:
        """How the outputs differ from the reference (assert_close's message), or why they were not compared."""
        return self.comparison.detail if self.comparison is not None else self.not_compared

    @property
    def ok(self) -> bool:
        """The graph stays on the device: it ran, with no graph break, no transfer to the host and
        no CPU fallback. Uploads of host-built constants (``uploads``) are allowed and noted; how the
        values compare is ``matches_reference`` (XLA fuses what eager rounds step by step)."""
        return self.error is None and not self.graph_breaks and self.transfers_to_host == 0 and not self.fallback_ops

    def summary(self) -> str:
        """One paragraph a user can read: failure, or breaks with their nodes, transfers, uploads, values."""
        if self.error is not None:
            return f"failed on {self.device}: {self.error}"
        breaks = "; ".join(f"{b.node} ({short_location(b.file, b.line)})" if b.file else b.node for b in self.graph_breaks)
        text = (
            f"ran on {self.device}: {len(self.graph_breaks)} graph break(s){': ' + breaks if breaks else ''}, "
            f"{self.executions} forced execution(s), {self.transfers_to_host} transfer(s) to host and "
            f"{self.transfers_to_device} to device per call; outputs on {', '.join(self.output_devices) or 'nothing'}"
        )
        if self.uploads:
            nodes = ", ".join(f"{u.node} ({short_location(u.file, u.line)})" if u.file else u.node for u in self.uploads)
            text += f"; uploads of host-built values on every call (no break, no rewrite removes them): {nodes}"
        if self.comparison is not None:
            text += f"; values {self.comparison.describe()} against the CPU reference"
        elif self.not_compared:
            text += f"; values {self.not_compared}"
        return text

    def __repr__(self) -> str:
        return f"RunRecord({self.summary()})"

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready): every figure, break, upload, crossing and the failure as text."""
        plain = {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if field.name not in ("outputs", "error", "comparison", "first_call", "graph_breaks", "uploads", "crossings")
        }
        plain["graph_breaks"] = [dataclasses.asdict(b) for b in self.graph_breaks]
        plain["uploads"] = [dataclasses.asdict(u) for u in self.uploads]
        plain["crossings"] = [dataclasses.asdict(c) for c in self.crossings]
        plain["node_devices"] = {k: list(v) if isinstance(v, tuple) else v for k, v in self.node_devices.items()}
        plain["error"] = None if self.error is None else self.error.to_dict()
        plain["comparison"] = None if self.comparison is None else dataclasses.asdict(self.comparison)
        plain["first_call"] = None if self.first_call is None else dataclasses.asdict(self.first_call)
        plain["ok"] = self.ok
        plain["matches_reference"] = self.matches_reference
        plain["mismatch"] = self.mismatch
        return plain


def run_on_xla(
    gm: torch.fx.GraphModule,
    *inputs: Any,
    reference: Any = None,
    repeat: int = 3,
    rtol: float | None = None,
    atol: float | None = None,
    barrier: Callable[[], None] | None = None,
) -> RunRecord:
    """Run ``gm`` on the XLA device and record what crossed and what executed, node by node.

    Inputs (and the graph's own parameters and buffers) are copied to the device; ``gm`` and the
    inputs are left untouched, whatever the graph writes to. ``reference`` is the expected output
    (by default the graph's result on CPU, computed from copies of the inputs); ``rtol``/``atol``
    are the tolerances of that comparison, given together (None: assert_close's for the dtype).
    ``repeat`` calls are timed for ``seconds`` (0 skips timing). A failing run is recorded in
    ``error``, not raised; inputs that cannot move to the device raise XlaInputError.

    ``barrier`` is for ranks that run in one process (a thread per device): called around each
    measured call, it keeps every rank's node-by-node phase apart from any rank's sync, since
    torch_xla's counters are per process.
    """
    _check_graph(gm, inputs)
    _check_repeat(repeat)
    check_tolerances(rtol, atol)
    target = xla.device()
    graph = copy.deepcopy(gm).to(target)
    record = RunRecord(device=str(target))
    with torch.no_grad():
        first = _call(graph, inputs, target, barrier or _no_barrier)
        record.first_call = first.counts
        if first.error is not None:
            record.error = first.error
            return record
        _fill(record, graph, _call(graph, inputs, target, barrier or _no_barrier))
        expected = reference if reference is not None else _cpu_reference(gm, inputs, record)
        if expected is not None:
            record.comparison = compare_outputs(record.outputs, expected, rtol=rtol, atol=atol)
        record.seconds = _steady_seconds(graph, inputs, target, repeat)
    return record


def _check_graph(gm: Any, inputs: tuple) -> None:
    """A named error, before anything runs, for a subject that is not a graph or the wrong input count."""
    from neurondev.trace.capture import Capture

    if isinstance(gm, Capture):
        raise InvalidSubjectError(
            f"run_on_xla runs one graph, got the Capture of {gm.name} ({len(gm.graphs)} graph(s)); "
            "pass one of its graphs with that graph's inputs: "
            "neurondev.run_on_xla(capture.graphs[i], *capture.example_inputs[i])"
        )
    if not isinstance(gm, torch.fx.GraphModule):
        raise InvalidSubjectError(
            f"run_on_xla runs a traced graph, got {describe_object(gm)}; capture it first: "
            "c = neurondev.capture(fn, x); neurondev.run_on_xla(c.graphs[0], *c.example_inputs[0])"
        )
    placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    if any(str(node.target).startswith("*") for node in placeholders) or getattr(gm, "_in_spec", None) is not None:
        return  # *args or pytree-flattened inputs: the graph's own call decides
    required = sum(1 for node in placeholders if not node.args)
    if not required <= len(inputs) <= len(placeholders):
        names = ", ".join(node.name for node in placeholders)
        wanted = f"{len(placeholders)}" if required == len(placeholders) else f"{required} to {len(placeholders)}"
        raise InputCountError(
            f"the graph takes {wanted} input(s) ({names}), got {len(inputs)}; for a captured graph pass "
            "*capture.example_inputs[i] (a module's parameters are inputs of its graph too)"
        )


def _check_repeat(repeat: Any) -> None:
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 0:
        raise InvalidOptionError(f"repeat is the number of timed calls, an int >= 0 (0 skips timing); got {repeat!r}")


@dataclasses.dataclass
class _Call:
    counts: xla.Counts
    per_node: dict[str, xla.Counts]
    devices: dict[str, Any]
    outputs: Any = None
    error: RunError | None = None


class _NodeFailed(Exception):
    def __init__(self, node: torch.fx.Node, error: BaseException) -> None:
        super().__init__(str(error))
        self.node, self.error = node, error


class _MeasuringInterpreter(torch.fx.Interpreter):
    """Runs node by node, taking torch_xla metric deltas and the output device of each node."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        super().__init__(gm)
        self.per_node: dict[str, xla.Counts] = {}
        self.devices: dict[str, Any] = {}

    def run_node(self, node: torch.fx.Node) -> Any:
        before = xla.counts()
        try:
            value = super().run_node(node)
        except Exception as error:
            raise _NodeFailed(node, error) from error
        xla.settle()
        self.per_node[node.name] = xla.counts() - before
        self.devices[node.name] = _devices(value)
        return value


def _no_barrier() -> None:
    pass


def _call(graph: torch.fx.GraphModule, inputs: tuple, target: torch.device, barrier: Callable[[], None]) -> _Call:
    device_inputs = xla.to_device(inputs, target)
    xla.settle()
    barrier()
    before = xla.counts()
    interpreter = _MeasuringInterpreter(graph)
    outputs, error = None, None
    try:
        outputs = interpreter.run(*device_inputs)
    except _NodeFailed as failed:
        error = _run_error(failed)
    during = xla.counts() - before
    barrier()
    xla.sync()  # the graph's own end: not a break
    barrier()
    return _Call(during, interpreter.per_node, interpreter.devices, outputs, error)


def _run_error(failed: _NodeFailed) -> RunError:
    node = failed.node
    index = None
    if node.op == "placeholder":
        index = [n for n in node.graph.nodes if n.op == "placeholder"].index(node)
    return RunError(node.name, readable_target(node), failed.error, input_index=index, **location_fields(source_of(node)))


def _fill(record: RunRecord, graph: torch.fx.GraphModule, call: _Call) -> None:
    counts = call.counts
    record.executions, record.compilations = counts.executions, counts.compilations
    record.transfers_to_host, record.transfers_to_device = counts.transfers_to_host, counts.transfers_to_device
    record.fallback_ops = dict(counts.fallbacks)
    measured = [(node, call.per_node[node.name]) for node in graph.graph.nodes if node.name in call.per_node]
    record.graph_breaks = [_graph_break(node, delta) for node, delta in measured if delta.forced]
    record.uploads = [_upload(node, delta) for node, delta in measured if not delta.forced and delta.transfers_to_device]
    record.node_devices = {name: device for name, device in call.devices.items() if device is not None}
    record.crossings = _crossings(graph, record.node_devices)
    record.output_devices = [str(t.device) for t in pytree.tree_leaves(call.outputs) if isinstance(t, torch.Tensor)]
    record.outputs = call.outputs


def _graph_break(node: torch.fx.Node, delta: xla.Counts) -> GraphBreak:
    fields = location_fields(source_of(node))
    return GraphBreak(node.name, readable_target(node), delta.executions, delta.transfers_to_host, **fields)


def _upload(node: torch.fx.Node, delta: xla.Counts) -> Upload:
    fields = location_fields(source_of(node))
    return Upload(node.name, readable_target(node), delta.transfers_to_device, **fields)


def _devices(value: Any) -> Any:
    """The device of a node's value: a str for a tensor, a tuple for several, None for no tensor."""
    if isinstance(value, torch.Tensor):
        return str(value.device)
    tensors = [str(t.device) for t in pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]
    return tuple(tensors) if tensors else None


def _crossings(graph: torch.fx.GraphModule, devices: dict[str, Any]) -> list[Crossing]:
    crossings = []
    for node in graph.graph.nodes:
        here = devices.get(node.name)
        if not isinstance(here, str):
            continue
        for source in node.all_input_nodes:
            there = devices.get(source.name)
            if isinstance(there, str) and torch.device(there).type != torch.device(here).type:
                crossings.append(Crossing(source.name, node.name, there, here))
    return crossings


def _cpu_reference(gm: torch.fx.GraphModule, inputs: tuple, record: RunRecord) -> Any:
    """The graph's result on CPU (every device pin pointed at CPU); None, noted, when it cannot run there."""
    cpu_graph, _ = rewrite_copy(gm, target="cpu")
    try:
        return cpu_graph(*xla.to_device(inputs, torch.device("cpu")))
    except Exception as error:
        record.not_compared = f"not compared: the graph does not run on CPU ({type(error).__name__}: {error})"
        return None


def _steady_seconds(graph: torch.fx.GraphModule, inputs: tuple, target: torch.device, repeat: int) -> float | None:
    """Median wall time of a plain call plus its sync, after the two measured calls warmed it up."""
    if repeat <= 0:
        return None
    device_inputs = xla.to_device(inputs, target)
    xla.settle()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        graph(*device_inputs)
        xla.sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
