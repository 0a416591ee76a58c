"""Run the user's whole program on a device: the function under torch.compile, its inputs and module on the device.

This is the program a user runs, not an emulation of it: dynamo traces with the values on XLA,
the Python between its graphs runs on XLA values, and torch_xla's dynamo bridge joins the graphs.
The function, its module and its arguments are deep copies moved to the device (as ``model.to(xla)``
and ``x.to(xla)`` would); tensors the code reads from a global, a closure or a plain attribute stay
where the user's code keeps them. It is called twice (the second call is the steady state), each
call measured as deltas of torch_xla's counters (never cleared, given back if the bridge clears them).
Where and why it failed, when it does, is read in ``runs.program_failures``.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import torch
import torch.fx

from neurondev._compat.dynamo import dynamo_break_of, forgotten_backend
from neurondev._compat.fx_internals import concrete
from neurondev.fx.graphs import copy_graph
from neurondev.runs.counts import Counts
from neurondev.runs.interface import Driver
from neurondev.runs.program_failures import HOST_ONLY_CODE, failure_kind, from_dynamo, line_in_message, message_of
from neurondev.runs.program_records import ProgramCall, ProgramFailure, ProgramRun
from neurondev.runs.reasons import NotCompared
from neurondev.runs.run_records import Fallback, HostCopy, Upload
from neurondev.runs.state import program_state
from neurondev.runs.values import Comparison, compare_outputs
from neurondev.trace.caches import kept_dynamo_caches
from neurondev.trace.capture import Capture, quiet_dynamo
from neurondev.trace.capture_notes import CaptureNote
from neurondev.trace.copies import MovedInput, fresh_function, kept_global_state, own_namespaces, traced_copies
from neurondev.trace.generators import reachable_generators
from neurondev.trace.source import SourceLine, source_line, source_of, user_line_of_error

__all__ = ["ProgramSubject", "run_program"]

_CALLS = 2


@dataclasses.dataclass(frozen=True)
class ProgramSubject:
    """What to run: the user's callable and the arguments of one call (the user's own objects, copied per run)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    name: str = "the program"


def run_program(
    subject: ProgramSubject,
    backend: Callable[..., Any],
    *,
    driver: Driver,
    label: str,
    reference: Any = None,
    not_comparable: NotCompared | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    keep_graphs: bool = False,
    calls: int = _CALLS,
    reference_state: dict[str, Any] | None = None,
    rng_state: torch.Tensor | None = None,
    random: NotCompared | None = None,
) -> tuple[ProgramRun, Capture | None]:
    """Call ``subject`` compiled with ``backend`` on the XLA device twice; compare the first call with
    ``reference`` (the eager CPU result) unless ``not_comparable`` says why not.

    ``label`` names the backend in the record ('openxla', 'neurondev'). With ``keep_graphs`` the
    graphs dynamo traced on XLA are kept as they were before the backend saw them, with their
    inputs, as a Capture on the XLA device (the native trace). ``calls``: how many times it is
    called (two: the second is the steady state). ``reference_state``: what the program left after one
    call on CPU (``neurondev.runs.state.program_state``): the state after its first call here is compared
    with it (``ProgramRun.state``). Both are compared the moment the first call returns: the second may
    change what the first returned (a cache passed in, grown in place). Nothing of the user's is touched.
    ``rng_state``: the CPU generator's state the reference drew from; the first call starts from it too (a
    device that draws from the CPU's generator then draws the same). ``random``: the program's random ops,
    named: values that still differ are not a difference (compiled code may draw in another order).
    """
    device = driver.device()
    moved: list[MovedInput] = []
    notes: list[CaptureNote] = []
    recorder = _Recorder(backend, keep_graphs)
    generators = reachable_generators(subject.fn, subject.args, subject.kwargs)  # each run draws as the CPU reference did
    with own_namespaces(subject.fn) as namespaces, kept_global_state(generators):
        try:
            fn, args, kwargs = traced_copies(subject.fn, subject.args, subject.kwargs, device, moved, notes, namespaces)
        except Exception as error:  # an input the device cannot hold (a sparse tensor on XLA): the program cannot run there
            refused = ProgramFailure("other", "inputs", type(error).__name__, message_of(error), None, None, 1)
            did_not_run = NotCompared("program did not run", error=f"{type(error).__name__}: {message_of(error)}")
            return ProgramRun(label, refused, None, did_not_run, stack=driver.stack, device=str(device)), None
        compiled = torch.compile(_entry(fn), backend=recorder)
        if rng_state is not None:
            torch.set_rng_state(rng_state)
        with quiet_dynamo(), kept_dynamo_caches(), warnings.catch_warnings(record=True) as caught, forgotten_backend(recorder):
            warnings.simplefilter("always")
            judge = lambda outputs, state: _random(  # noqa: E731
                _judge(outputs, state, reference, reference_state, not_comparable, rtol, atol), random
            )
            made, outputs, judged, failure = _calls(compiled, (fn, args, kwargs), recorder, calls, driver, judge)
    comparison, not_compared, state = judged or _FAILED
    record = ProgramRun(
        label, failure, comparison, not_compared, tuple(made), _unique(caught), outputs, driver.stack, str(device), driver.unseen(), state
    )
    native = recorder.capture(subject.name, moved, notes, str(device), (fn, args, kwargs)) if keep_graphs else None
    return record, native


def _entry(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A fresh entry function (its own code object: dynamo's cache stays off the user's function)."""

    def program(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return fresh_function(program)


class _Recorder:
    """A torch.compile backend around ``inner``: counts the graphs dynamo makes, keeps copies of them
    (before ``inner`` rewrites them) when asked, and notes which compiled graph was running when a
    call failed."""

    def __init__(self, inner: Callable[..., Any], keep: bool) -> None:
        self.inner, self.keep = inner, keep
        self.count = 0
        self.graphs: list[torch.fx.GraphModule] = []
        self.inputs: list[list[Any]] = []
        self.ends: list[SourceLine | None] = []
        self.host_calls: list[SourceLine | None] = []
        self.compiling: int | None = None
        self.running: int | None = None

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        index = self.count
        self.count += 1
        self.ends.append(_end_of(gm))
        self.host_calls.append(_host_call_in(gm))
        if self.keep:
            self.graphs.append(copy_graph(gm))
            self.inputs.append([concrete(value) for value in example_inputs])
        self.compiling = index
        compiled = self.inner(gm, example_inputs)
        self.compiling = None

        def run(*args: Any) -> Any:
            self.running = index
            result = compiled(*args)
            self.running = None
            return result

        return run

    def forget_since(self, count: int) -> None:
        """Forget the graphs made after the first ``count`` (a call made only to be counted compiled them again)."""
        self.count = count
        del self.ends[count:], self.host_calls[count:]
        if self.keep:
            del self.graphs[count:], self.inputs[count:]

    def capture(self, name: str, moved: list[MovedInput], notes: list[CaptureNote], device: str, owners: tuple[Any, ...]) -> Capture:
        return Capture(
            name,
            tuple(self.graphs),
            tuple(tuple(i) for i in self.inputs),
            (),
            tuple(moved),
            None,
            tuple(notes),
            device=device,
            owners=owners,
        )


def _end_of(gm: torch.fx.GraphModule) -> SourceLine | None:
    """The user's line where a graph ends: dynamo's own break, else its last node with a line."""
    found = dynamo_break_of(gm)
    if found is not None and found[1] is not None:
        frame = found[1]
        return source_line(frame.filename, frame.lineno, frame.name, frame.line)
    lines = [source_of(node) for node in gm.graph.nodes]
    return next((line for line in reversed(lines) if line is not None), None)


def _host_call_in(gm: torch.fx.GraphModule) -> SourceLine | None:
    """The first line of a graph that calls a host-only method on a tensor (``.numpy()``, ``.tolist()``),
    which dynamo traces as torch ops: the graph then hands a NumPy value across to the next one."""
    lines = (source_of(node) for node in gm.graph.nodes)
    return next((line for line in lines if line is not None and HOST_ONLY_CODE.search(line.code)), None)


def _calls(
    compiled: Callable[..., Any],
    program: tuple[Any, tuple, dict],
    recorder: _Recorder,
    count: int,
    driver: Driver,
    judge: Callable[[Any, dict[str, Any]], _Judged],
) -> tuple[list[ProgramCall], Any, _Judged | None, ProgramFailure | None]:
    """Call the compiled program ``count`` times, each measured; ``judge`` compares the first call's outputs and the
    state it left with CPU as it returns (None when it failed). Where the driver counts a compiled call whole only
    by a call of its own (torch 2.9 on a native device: a dispatch mode around compiled code makes dynamo compile
    again), one more call is made to be counted, and its copies, syncs and fallbacks are the last call's."""
    fn, args, kwargs = program
    calls: list[ProgramCall] = []
    outputs = judged = None
    for number in range(1, count + 1):
        graphs = recorder.count
        try:
            delta, seconds, seen = _measured(lambda: compiled(*args, **kwargs), driver, whole=False)
        except _CallFailed as failed:
            return calls, outputs, judged, _failure(failed.error, recorder, number)
        calls.append(_call_record(recorder.count - graphs, delta, seconds, seen))
        if number == 1:
            outputs = seen.result
            judged = judge(seen.result, program_state(fn, args, kwargs))
    if driver.needs_counting_call and calls:
        kept = recorder.count
        try:
            delta, _, seen = _measured(lambda: compiled(*args, **kwargs), driver, whole=True)
        except _CallFailed as failed:
            return calls, outputs, judged, _failure(failed.error, recorder, count + 1)
        finally:
            recorder.forget_since(kept)  # what dynamo compiled again for the counting call is not the program's
        calls[-1] = _counted(calls[-1], delta, seen)
    return calls, outputs, judged, None


class _CallFailed(Exception):
    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class _Measured(NamedTuple):
    """What a call showed with its lines (the driver's ``Seen``) and what it returned."""

    host_copies: tuple[HostCopy, ...]
    uploads: tuple[Upload, ...]
    fallbacks: tuple[Fallback, ...]
    result: Any


def _measured(call: Callable[[], Any], driver: Driver, *, whole: bool) -> tuple[Counts, float, _Measured]:
    """One call, measured: the device's deltas, seconds, and what was seen with its lines, with its result."""
    with driver.measuring(compiled=True, whole=whole):
        driver.settle()
        before, mark, start = driver.counts(), driver.mark(), time.perf_counter()
        try:
            result = call()
            driver.sync()
        except Exception as error:
            raise _CallFailed(error) from error
        seconds, delta = time.perf_counter() - start, driver.counts() - before
    return delta, seconds, _Measured(*driver.located_since(mark), result)


def _call_record(graphs: int, delta: Counts, seconds: float, seen: _Measured) -> ProgramCall:
    fallbacks = seen.fallbacks
    if delta.fallbacks and not fallbacks:  # a stack that counts fallbacks without lines (XLA's metrics): the ops, at least
        fallbacks = tuple(Fallback(op, calls, 0) for op, calls in delta.fallbacks)
    return ProgramCall(
        graphs,
        delta.compilations,
        delta.executions,
        delta.transfers_to_host,
        delta.transfers_to_device,
        seconds,
        syncs=delta.syncs,
        fallback_calls=delta.fallback_calls,
        host_copies=seen.host_copies,
        fallbacks=fallbacks,
        uploads=seen.uploads,
        bytes_to_host=delta.bytes_to_host,
        bytes_to_device=delta.bytes_to_device,
    )


def _counted(call: ProgramCall, delta: Counts, seen: _Measured) -> ProgramCall:
    """``call`` with the copies, syncs and fallbacks of a call counted whole (the counting call's)."""
    return dataclasses.replace(
        call,
        transfers_to_host=delta.transfers_to_host,
        transfers_to_device=delta.transfers_to_device,
        syncs=delta.syncs,
        fallback_calls=delta.fallback_calls,
        host_copies=seen.host_copies,
        fallbacks=seen.fallbacks,
        uploads=seen.uploads,
        bytes_to_host=delta.bytes_to_host,
        bytes_to_device=delta.bytes_to_device,
    )


def _failure(error: BaseException, recorder: _Recorder, call: int) -> ProgramFailure:
    """Where and why the program failed, as the user's line and one of FAILURE_KINDS."""
    graph: int | None = None
    if recorder.running is not None:  # the node's own line when the error names it ("Original traceback")
        stage, graph = "graph", recorder.running
        source = recorder.host_calls[graph] or line_in_message(error) or recorder.ends[graph]
    elif recorder.compiling is not None or from_dynamo(error):
        stage, graph = "compile", recorder.compiling
        source = user_line_of_error(error) or (recorder.ends[graph] if graph is not None else None)
    else:
        stage, source = "python", user_line_of_error(error)
    recorder.running = recorder.compiling = None
    return ProgramFailure(failure_kind(error, stage, source), stage, type(error).__name__, message_of(error), source, graph, call)


class _Judged(NamedTuple):
    """The first call against CPU: its outputs (``comparison``, or why not compared) and the state it left (inputs,
    buffers, globals; None when either side has none)."""

    comparison: Comparison | None
    not_compared: NotCompared | None
    state: Comparison | None


_FAILED = _Judged(None, NotCompared("program failed"), None)


def _random(judged: _Judged, random: NotCompared | None) -> _Judged:
    """Values of a program with random ops that differ from CPU's are not compared: the ops are named instead."""
    differs = judged.comparison is not None and judged.comparison.matches is False
    if random is None or not differs:
        return judged
    return _Judged(None, random, judged.state)


def _judge(
    outputs: Any,
    state: dict[str, Any],
    reference: Any,
    reference_state: dict[str, Any] | None,
    not_comparable: NotCompared | None,
    rtol: float | None,
    atol: float | None,
) -> _Judged:
    if not_comparable is not None:
        return _Judged(None, not_comparable, None)
    written = compare_outputs(state, reference_state, rtol=rtol, atol=atol) if state and reference_state is not None else None
    if reference is None:
        return _Judged(None, NotCompared("no cpu result"), written)
    return _Judged(compare_outputs(outputs, reference, rtol=rtol, atol=atol), None, written)


def _unique(caught: list[warnings.WarningMessage]) -> tuple[str, ...]:
    return tuple(
        dict.fromkeys(f"{w.category.__name__}: {str(w.message).strip().splitlines()[0][:200]}" for w in caught if str(w.message).strip())
    )
