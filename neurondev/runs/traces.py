"""Trace twice: on CPU and natively on XLA, to find device-specialised code and the native yardstick.

Dynamo evaluates Python on the real inputs, so ``if x.device.type == "cpu": ...`` is decided while
tracing: a CPU trace bakes in the CPU branch and no rewrite of device arguments can change it.
``compare_traces`` traces the function a second time with its inputs (and a module's state) on
the XLA device, aligns the two traces by user source line, and says where they differ beyond
device arguments, which graphs only one trace has, and whether the rewritten CPU graph is then
the native one.
"""

from __future__ import annotations

import collections
import dataclasses
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from neurondev.fx.devices import as_device, function_name
from neurondev.fx.graphs import copy_graph
from neurondev.passes.device_rewriter import rewrite_copy
from neurondev.rulebook import Ruled
from neurondev.runs.graph import quiet_call, run_graph
from neurondev.runs.interface import Driver
from neurondev.runs.placement import to_device
from neurondev.runs.program_failures import locate_failure, message_of
from neurondev.runs.program_records import ProgramFailure
from neurondev.runs.run_records import RunError
from neurondev.trace.capture import Capture, capture, capture_on_device
from neurondev.trace.copies import kept_global_state
from neurondev.trace.generators import reachable_generators
from neurondev.trace.source import Located, SourceLine, source_of

__all__ = [
    "LineDifference",
    "TraceComparison",
    "compare_captures",
    "compare_traces",
    "compare_with_native",
    "side_by_side_seconds",
    "structure",
]


@dataclasses.dataclass(frozen=True)
class LineDifference(Located, Ruled):
    """One user line whose ops differ between the CPU and the XLA trace (device arguments aside)."""

    RECORD = "line difference"

    graph: int
    source: SourceLine | None
    cpu_ops: tuple[str, ...]
    xla_ops: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "graph": self.graph, **self.source_dict(), "cpu_ops": list(self.cpu_ops), "xla_ops": list(self.xla_ops)}


@dataclasses.dataclass(frozen=True)
class TraceComparison:
    """The CPU trace, the native XLA trace, and how they differ.

    ``differences``: one entry per user line whose ops differ once device arguments are set aside
    (device-specialised code, both versions). ``only_in_cpu`` / ``only_in_xla``: graph indices one
    trace has and the other has not. ``rewritten_is_native``: per graph both have, whether the CPU
    graph after DeviceRewriterPass is structurally the native one. ``native_error``: running the
    native trace failed (its graphs are still recorded); ``native_failure`` is the run's record
    of it, with the node and line, when a graph could be run to find it.
    """

    name: str
    cpu: Capture
    native: Capture
    differences: tuple[LineDifference, ...]
    only_in_cpu: tuple[int, ...]
    only_in_xla: tuple[int, ...]
    rewritten_is_native: tuple[bool, ...]
    native_error: str | None = None
    native_failure: RunError | ProgramFailure | None = None

    @property
    def agree(self) -> bool:
        """Both traces made the same graphs, and the rewritten CPU graphs are the native ones."""
        return not self.differences and not self.only_in_cpu and not self.only_in_xla and all(self.rewritten_is_native)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "agree": self.agree,
            "differences": [d.to_dict() for d in self.differences],
            "graphs": {"cpu": len(self.cpu.graphs), "xla": len(self.native.graphs)},
            "only_in_cpu": list(self.only_in_cpu),
            "only_in_xla": list(self.only_in_xla),
            "rewritten_is_native": list(self.rewritten_is_native),
            "native_error": self.native_error,
            "native_failure": self.native_failure.to_dict() if self.native_failure is not None else None,
        }


def compare_traces(fn: Callable, args: tuple, kwargs: dict, *, driver: Driver) -> TraceComparison:
    """Trace ``fn`` on CPU and natively on ``driver``'s device, and compare the two traces line by line.

    A module is traced as a copy, its state moved to the device for the native trace; the
    native trace's graphs are kept even when running them on the device fails (``native_error``).
    A native trace that fails before recording any graph (a host tensor meeting a device one while
    dynamo traces) is reported, with the user's line, not raised.
    """
    with kept_global_state(reachable_generators(fn, args, kwargs)):
        return compare_with_native(capture(fn, *args, **kwargs), fn, args, kwargs, driver=driver)


def compare_with_native(cpu: Capture, fn: Callable, args: tuple, kwargs: dict, *, driver: Driver) -> TraceComparison:
    """Compare a CPU capture made earlier with a native trace of the same call on ``driver``'s device."""
    native, failure = capture_on_device(fn, args, kwargs, driver.device())
    if failure is None:
        return compare_captures(cpu, native, device=driver.device())
    located = _locate_failure(native, driver) or locate_failure(failure)
    text = f"{type(failure).__name__}: {message_of(failure)[:200]}"
    return compare_captures(cpu, native, device=driver.device(), error=text, located=located)


def compare_captures(
    cpu: Capture, native: Capture, *, device: torch.device, error: str | None = None, located: Any = None
) -> TraceComparison:
    """Align a CPU capture with a native one (traced on ``device``) by user line; ``error`` is how the native
    run failed, ``located`` the record that says where (a RunError or a ProgramFailure)."""
    count = min(len(cpu.graphs), len(native.graphs))
    differences = [d for index in range(count) for d in _line_differences(index, cpu.graphs[index], native.graphs[index])]
    same = [structure(rewrite_copy(cpu.graphs[i], target=device)[0]) == structure(native.graphs[i]) for i in range(count)]
    return TraceComparison(
        name=cpu.name,
        cpu=cpu,
        native=native,
        differences=tuple(differences),
        only_in_cpu=tuple(range(count, len(cpu.graphs))),
        only_in_xla=tuple(range(count, len(native.graphs))),
        rewritten_is_native=tuple(same),
        native_error=error,
        native_failure=located,
    )


def _ops_by_line(gm: torch.fx.GraphModule) -> dict[tuple[str | None, int | None], tuple[list[str], SourceLine | None]]:
    lines: dict[tuple[str | None, int | None], tuple[list[str], SourceLine | None]] = collections.OrderedDict()
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method", "call_module"):
            continue
        source = source_of(node)
        key = (source.file, source.line) if source else (None, None)
        ops, _ = lines.setdefault(key, ([], source))
        ops.append(_spelled_alike(function_name(node)))
    return lines


# One op, two spellings: dynamo writes `x + y` as operator.add, or as Tensor.add where a torch function mode
# (a `torch.device` context, torch.set_default_device) handles the call
_OPERATORS = {"add": "add", "sub": "sub", "mul": "mul", "div": "truediv", "floor_divide": "floordiv", "remainder": "mod", "pow": "pow"}
_OPERATORS |= {"matmul": "matmul", "neg": "neg"}
_ALIKE = {f"Tensor.{method}": f"operator.{operator}" for method, operator in _OPERATORS.items()}
_ALIKE |= {f"Tensor.__{operator}__": f"operator.{operator}" for operator in _OPERATORS.values()}


def _spelled_alike(name: str) -> str:
    return _ALIKE.get(name, name)


def _line_differences(index: int, cpu: torch.fx.GraphModule, native: torch.fx.GraphModule) -> list[LineDifference]:
    left, right = _ops_by_line(cpu), _ops_by_line(native)
    differences = []
    for key in list(left) + [k for k in right if k not in left]:
        cpu_ops, source = left.get(key, ([], None))
        xla_ops, native_source = right.get(key, ([], None))
        if cpu_ops != xla_ops:
            differences.append(LineDifference(index, source or native_source, tuple(cpu_ops), tuple(xla_ops)))
    return differences


def structure(gm: torch.fx.GraphModule) -> list[tuple]:
    """A graph's shape for comparison: each node's op, target and arguments, with every input alike
    (their order and number may differ between traces: a tied weight moved to XLA by ``.to()`` is
    two parameters there), other graph values by position, and every device reduced to its type
    (``xla:0`` and ``xla`` are alike)."""
    computed = [node for node in gm.graph.nodes if node.op != "placeholder"]
    position = {node: i for i, node in enumerate(computed)}

    def normal(value: Any) -> Any:
        if isinstance(value, torch.fx.Node):
            return ("input",) if value.op == "placeholder" else ("node", position[value])
        if isinstance(value, (list, tuple)):
            return tuple(normal(v) for v in value)
        if isinstance(value, dict):
            return tuple(sorted((k, normal(v)) for k, v in value.items()))
        device = as_device(value) if isinstance(value, (str, torch.device)) else None
        return ("device", device.type) if device is not None else repr(value)

    return [(node.op, function_name(node), normal(node.args), normal(node.kwargs)) for node in computed]


def _locate_failure(native: Capture, driver: Driver) -> RunError | None:
    """Run the native graphs one by one on the device to find the node (and line) where the native run fails."""
    for gm, inputs in zip(native.graphs, native.example_inputs):
        record = run_graph(gm, *inputs, driver=driver, repeat=0)
        if record.error is not None:
            return record.error
    return None


def side_by_side_seconds(runs: dict[str, tuple[torch.fx.GraphModule, Any]], *, driver: Driver, rounds: int = 15) -> dict[str, float]:
    """Per-call seconds of each (graph, inputs) on XLA, calls interleaved round by round, medians
    (fair on a noisy machine). Each graph gets its own inputs: a native trace may take more."""
    device = driver.device()
    placed = {name: (copy_graph(gm).to(device), to_device(inputs, device)) for name, (gm, inputs) in runs.items()}
    times: dict[str, list[float]] = {name: [] for name in placed}
    with torch.no_grad():
        for round_ in range(rounds + 2):
            for name, (gm, inputs) in placed.items():
                start = time.perf_counter()
                quiet_call(gm, *inputs)
                driver.sync()
                if round_ >= 2:  # two warm-up rounds compile and upload
                    times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}
