"""run_graph: run one FX graph on a device through its driver and record, per node, what executed and what crossed (records: records)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import statistics
import time
from collections.abc import Callable, Iterable
from types import MappingProxyType
from typing import Any

import torch
import torch.fx

from neurondev._compat.fx_internals import has_pytree_spec, tree_leaves
from neurondev.errors import InputCountError, InvalidOptionError, InvalidSubjectError, XlaInputError
from neurondev.fx.devices import describe_object, function_name, is_output_transfer
from neurondev.fx.graphs import copy_graph
from neurondev.fx.modules import module_path
from neurondev.passes.device_rewriter import rewrite_copy
from neurondev.runs.counts import Counts
from neurondev.runs.interface import Driver
from neurondev.runs.placement import to_device
from neurondev.runs.reasons import NotCompared
from neurondev.runs.run_records import Crossing, Fallback, GraphBreak, HostCopy, RunError, RunRecord, Upload, first_device, type_of
from neurondev.runs.values import Comparison, check_tolerances, compare_outputs
from neurondev.trace.capture import Capture
from neurondev.trace.source import source_of

__all__ = ["check_graph", "cpu_reference", "quiet_call", "run_graph"]


def run_graph(
    gm: torch.fx.GraphModule,
    *inputs: Any,
    driver: Driver,
    reference: Any = None,
    repeat: int = 3,
    rtol: float | None = None,
    atol: float | None = None,
    barrier: Callable[[], None] | None = None,
    keep_on_host: Iterable[int] = (),
    seed: int | None = None,
) -> RunRecord:
    """Run ``gm`` on ``driver``'s device and record what crossed and what executed, node by node.

    Inputs (and the graph's own parameters and buffers) are copied to the device; ``gm`` and the
    inputs are left untouched, whatever the graph writes to. ``reference`` is the expected output
    (by default the graph's result on CPU, computed from copies of the inputs); ``rtol``/``atol``
    are the tolerances of that comparison, given together (None: assert_close's for the dtype).
    ``repeat`` calls are timed for ``seconds`` (0 skips timing). A failing run is recorded in
    ``error``, not raised; inputs that cannot move to the device raise XlaInputError.

    ``seed``: set on the CPU and the XLA generator before each call (and before the CPU
    reference), so that two runs of graphs with random ops draw alike where they draw on the same device.

    ``keep_on_host``: positions of inputs that stay where they are instead of going to the device,
    as the user's code would leave them (a global or a plain attribute does not move with the model).

    ``barrier`` is for ranks that run in one process (a thread per device): called around each
    measured call, it keeps every rank's node-by-node phase apart from any rank's sync, since
    torch_xla's counters are per process.
    """
    check_graph(gm, inputs)
    _check_repeat(repeat)
    check_tolerances(rtol, atol)
    target = driver.device()
    graph = copy_graph(gm).to(target)
    wait = barrier or _no_barrier
    placed = _Placement(inputs, target, frozenset(keep_on_host), seed, driver)
    with torch.no_grad():
        first = _call(graph, placed, wait)
        if first.error is not None:
            return RunRecord(device=str(target), error=first.error, first_call=first.counts)
        measured = _call(graph, placed, wait)
        comparison, not_compared = _compare(gm, placed, measured.outputs, reference, rtol, atol)
        seconds = _steady_seconds(graph, placed, repeat)
    return _record(str(target), driver.stack, graph, measured, first.counts, comparison, not_compared, seconds)


def _compare(
    gm: torch.fx.GraphModule, placed: _Placement, outputs: Any, reference: Any, rtol: float | None, atol: float | None
) -> tuple[Comparison | None, NotCompared | None]:
    """The outputs against ``reference`` (by default the graph on CPU), or why there is no comparison."""
    if reference is None:
        reference, not_compared = cpu_reference(gm, placed.inputs, seed=placed.seed)
        if not_compared is not None:
            return None, not_compared
    return compare_outputs(outputs, reference, rtol=rtol, atol=atol), None


def check_graph(gm: Any, inputs: tuple) -> None:
    """A named error, before anything runs, for a subject that is not a graph or the wrong input count."""
    if isinstance(gm, Capture):
        raise InvalidSubjectError(
            f"run_on_xla runs one graph, got the Capture of {gm.name} ({len(gm.graphs)} graph(s)); "
            "pass one of its graphs with that graph's inputs: "
            "neurondev.run_on_xla(capture.graphs[i], *capture.example_inputs[i])"
        )
    if not isinstance(gm, torch.fx.GraphModule):
        raise InvalidSubjectError(
            f"a run runs a traced graph, got {describe_object(gm)}; capture it first: "
            "c = neurondev.capture(fn, x); neurondev.run_on_xla(c.graphs[0], *c.example_inputs[0])"
        )
    placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    if any(str(node.target).startswith("*") for node in placeholders) or has_pytree_spec(gm):
        return  # *args or pytree-flattened inputs: the graph's own call decides
    required = sum(1 for node in placeholders if not node.args)
    for index, (node, value) in enumerate(zip(placeholders, inputs)):
        traced = node.meta.get("example_value", node.meta.get("val"))
        if isinstance(traced, torch.Tensor) and not isinstance(value, torch.Tensor):
            raise XlaInputError(
                f"input {index} ({node.name}) is a tensor in the graph ({str(traced.dtype).replace('torch.', '')}, "
                f"{tuple(traced.shape)}), got {describe_object(value)}; pass a tensor of that shape (for a captured graph: "
                "*capture.example_inputs[i])"
            )
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


@dataclasses.dataclass(frozen=True)
class _Call:
    counts: Counts
    per_node: dict[str, Counts]
    devices: dict[str, Any]
    outputs: Any = None
    error: RunError | None = None


class _NodeFailed(Exception):
    def __init__(self, node: torch.fx.Node, error: BaseException) -> None:
        super().__init__(str(error))
        self.node, self.error = node, error


class _MeasuringInterpreter(torch.fx.Interpreter):
    """Runs node by node, taking the driver's count deltas and the output device of each node."""

    def __init__(self, gm: torch.fx.GraphModule, driver: Driver) -> None:
        super().__init__(gm)
        self.driver = driver
        self.per_node: dict[str, Counts] = {}
        self.devices: dict[str, Any] = {}

    def run_node(self, node: torch.fx.Node) -> Any:
        driver = self.driver
        before = driver.counts()
        try:
            with driver.at_node(node):
                value = super().run_node(node)
        except Exception as error:
            raise _NodeFailed(node, error) from error
        driver.settle()
        self.per_node[node.name] = driver.counts() - before
        self.devices[node.name] = _devices(value)
        return value


def _no_barrier() -> None:
    pass


@dataclasses.dataclass(frozen=True)
class _Placement:
    """The inputs of a run and where they go: the device, except the positions kept on the host."""

    inputs: tuple
    target: torch.device
    keep_on_host: frozenset[int]
    seed: int | None
    driver: Driver

    def seed_generators(self) -> None:
        """The same random stream for every call of a run (the CPU's and the device's), when a seed was given."""
        if self.seed is not None:
            self.driver.seed(self.seed)

    def copies(self) -> list[Any]:
        """Fresh copies of the inputs (a graph may write to them), each where it belongs."""
        host = torch.device("cpu")
        return [to_device([value], host if i in self.keep_on_host else self.target)[0] for i, value in enumerate(self.inputs)]


def _call(graph: torch.fx.GraphModule, placed: _Placement, barrier: Callable[[], None]) -> _Call:
    driver = placed.driver
    device_inputs = placed.copies()
    placed.seed_generators()
    driver.settle()
    barrier()
    with driver.measuring():
        before = driver.counts()
        interpreter = _MeasuringInterpreter(graph, driver)
        outputs, error = None, None
        try:
            with contextlib.redirect_stderr(io.StringIO()):  # torch.fx prints a failing body's traceback itself
                outputs = interpreter.run(*device_inputs)
        except _NodeFailed as failed:
            error = _run_error(failed)
        during = driver.counts() - before
        barrier()
        driver.sync()  # the graph's own end: not a break
    barrier()
    return _Call(during, interpreter.per_node, interpreter.devices, outputs, error)


def quiet_call(graph: torch.fx.GraphModule, *inputs: Any) -> Any:
    """``graph(*inputs)`` without torch.fx printing a failing graph's traceback to stderr itself (the
    failure is raised, and neurondev says it where the user asked)."""
    with contextlib.redirect_stderr(io.StringIO()):
        return graph(*inputs)


def _run_error(failed: _NodeFailed) -> RunError:
    node = failed.node
    index = None
    if node.op == "placeholder":
        index = [n for n in node.graph.nodes if n.op == "placeholder"].index(node)
    return RunError(node.name, function_name(node), failed.error, source_of(node), input_index=index)


def _record(
    device: str,
    stack: str,
    graph: torch.fx.GraphModule,
    call: _Call,
    first: Counts,
    comparison: Comparison | None,
    not_compared: NotCompared | None,
    seconds: float | None,
) -> RunRecord:
    counts = call.counts
    measured = [(node, call.per_node[node.name]) for node in graph.graph.nodes if node.name in call.per_node]
    node_devices = {name: device for name, device in call.devices.items() if device is not None}
    forced = [(node, delta) for node, delta in measured if delta.forced]
    handed_back = [(node, delta) for node, delta in forced if _hands_back(node, node_devices)]
    stopped = [(node, delta) for node, delta in forced if (node, delta) not in handed_back]
    native = stack == "native"
    return RunRecord(
        device=device,
        stack=stack,
        syncs=counts.syncs,
        bytes_to_host=counts.bytes_to_host,
        bytes_to_device=counts.bytes_to_device,
        host_copies=tuple(_host_copy(node, delta) for node, delta in stopped) if native else (),
        fallbacks=tuple(fallback for node, delta in measured for fallback in _fallbacks(node, delta)),
        executions=counts.executions,
        compilations=counts.compilations,
        transfers_to_host=counts.transfers_to_host,
        transfers_to_device=counts.transfers_to_device,
        fallback_ops=dict(counts.fallbacks),
        node_fallbacks={node.name: sum(n for _, n in delta.fallbacks) for node, delta in measured if delta.fallbacks},
        graph_breaks=() if native else tuple(_graph_break(node, delta) for node, delta in stopped),
        output_transfers=tuple(_graph_break(node, delta) for node, delta in handed_back),
        uploads=tuple(_upload(node, delta) for node, delta in measured if not delta.forced and delta.transfers_to_device),
        node_devices=node_devices,
        crossings=tuple(_crossings(graph, node_devices)),
        output_devices=tuple(str(t.device) for t in tree_leaves(call.outputs) if isinstance(t, torch.Tensor)),
        comparison=comparison,
        not_compared=not_compared,
        seconds=seconds,
        first_call=first,
        outputs=call.outputs,
        node_seconds=MappingProxyType({node.name: seconds for node, delta in measured if (seconds := _timed(delta)) > 0}),
    )


def _timed(delta: Counts) -> float:
    """A node's seconds by torch_xla's own clocks: the programs it compiled and executed, its transfers to the host."""
    return delta.compile_seconds + delta.execute_seconds + delta.transfer_seconds


def _hands_back(node: torch.fx.Node, devices: dict[str, Any]) -> bool:
    """A node whose value went to the host only to leave the graph (``return x.cpu()``)."""
    device = devices.get(node.name)
    return isinstance(device, str) and is_output_transfer(node, torch.device(device))


def _graph_break(node: torch.fx.Node, delta: Counts) -> GraphBreak:
    return GraphBreak(node.name, function_name(node), delta.executions, delta.transfers_to_host, source_of(node))


def _host_copy(node: torch.fx.Node, delta: Counts) -> HostCopy:
    by = function_name(node) if delta.collective_copies else None  # the node is a collective moving its tensors through the host
    return HostCopy(
        node.name, function_name(node), delta.transfers_to_host, delta.syncs, delta.bytes_to_host, source_of(node), module_path(node), by
    )


def _fallbacks(node: torch.fx.Node, delta: Counts) -> list[Fallback]:
    """The ops that ran on the CPU during ``node``; the bytes they copied go to the first (one op per node, as a rule)."""
    found = []
    for index, (op, calls) in enumerate(delta.fallbacks):
        copied = delta.fallback_bytes if index == 0 else 0
        found.append(Fallback(op, calls, copied, node.name, module_path(node), source_of(node)))
    return found


def _upload(node: torch.fx.Node, delta: Counts) -> Upload:
    by = function_name(node) if delta.collective_copies else None
    return Upload(node.name, function_name(node), delta.transfers_to_device, source_of(node), delta.bytes_to_device, module_path(node), by)


def _devices(value: Any) -> Any:
    """The device of a node's value: a str for a tensor, a tuple for several, None for no tensor."""
    if isinstance(value, torch.Tensor):
        return str(value.device)
    tensors = [str(t.device) for t in tree_leaves(value) if isinstance(t, torch.Tensor)]
    return tuple(tensors) if tensors else None


def _crossings(graph: torch.fx.GraphModule, devices: dict[str, Any]) -> list[Crossing]:
    """Edges whose two ends ran on devices of different types, each end read by ``first_device``."""
    crossings = []
    for node in graph.graph.nodes:
        here = first_device(devices.get(node.name))
        if here is None:
            continue
        for source in node.all_input_nodes:
            there = first_device(devices.get(source.name))
            if there is not None and type_of(there) != type_of(here):
                crossings.append(Crossing(source.name, node.name, there, here))
    return crossings


def cpu_reference(gm: torch.fx.GraphModule, inputs: tuple, *, seed: int | None = None) -> tuple[Any, NotCompared | None]:
    """The graph's result on CPU (every device pin pointed at CPU, the generator seeded with ``seed``),
    or (None, why it cannot run there). A graph and its rewritten copy share one: pass it as ``reference``."""
    if seed is not None:
        torch.manual_seed(seed)
    cpu_graph, _ = rewrite_copy(gm, target="cpu")
    try:
        return quiet_call(cpu_graph, *to_device(inputs, torch.device("cpu"))), None
    except Exception as error:
        return None, NotCompared("no cpu run", error=f"{type(error).__name__}: {error}")


def _steady_seconds(graph: torch.fx.GraphModule, placed: _Placement, repeat: int) -> float | None:
    """Median wall time of a plain call plus its sync, after the two measured calls warmed it up."""
    if repeat <= 0:
        return None
    device_inputs = placed.copies()
    placed.driver.settle()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        quiet_call(graph, *device_inputs)
        placed.driver.sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
