"""Trace a function or module on CPU with a recording torch.compile backend: the graphs dynamo made (what it is given
is checked first, in ``trace.callables``)."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from neurondev._compat.default_device import without_default_device
from neurondev._compat.dynamo import dynamo_break_of, forgotten_backend
from neurondev._compat.fx_internals import concrete, tree_leaves
from neurondev.errors import (
    CaptureInputError,
    InvalidOptionError,
    NoGraphWarning,
    TraceError,
    warn_user,
)
from neurondev.rulebook import Ruled
from neurondev.trace.aten import AtenGraph, AtenRecorder, run_backward
from neurondev.trace.caches import kept_dynamo_caches
from neurondev.trace.callables import check_callable, check_inputs, unwrap_compiled
from neurondev.trace.capture_notes import CaptureNote
from neurondev.trace.copies import MovedInput, fresh_function, kept_global_state, own_namespaces, traced_copies
from neurondev.trace.generators import reachable_generators
from neurondev.trace.inputs import HostValue, host_values
from neurondev.trace.source import Located, SourceLine, display_name, source_line, user_line_of_error

__all__ = ["LEVELS", "Capture", "DynamoBreak", "MovedInput", "capture", "capture_on_device", "check_level", "quiet_dynamo", "trace_only"]

_CPU = torch.device("cpu")
LEVELS = ("dynamo", "aten")


def check_level(level: Any) -> str:
    """The level, or InvalidOptionError naming both: 'dynamo' (dynamo's graphs) or 'aten' (aot_autograd's)."""
    if level not in LEVELS:
        raise InvalidOptionError(
            f"level is 'dynamo' (the graphs dynamo makes) or 'aten' (aot_autograd's forward and backward), got {level!r}"
        )
    return level


@dataclasses.dataclass(frozen=True)
class DynamoBreak(Located, Ruled):
    """A graph break dynamo itself made (as ``torch._dynamo.explain`` reports it), with the user's line."""

    RECORD = "dynamo break"

    MISSING = "unknown line"

    reason: str
    source: SourceLine | None

    def to_dict(self) -> dict[str, Any]:
        """Dynamo's reason and the user's line."""
        return {"reason": self.reason, **self.source_dict()}


@dataclasses.dataclass(frozen=True)
class Capture:
    """What tracing ``fn`` produced (on CPU unless ``device`` says otherwise); set once, never changed.

    ``graphs``: every FX GraphModule dynamo produced, in order. ``example_inputs``: for each graph,
    the tensors dynamo passed it (module parameters included, as placeholders).
    ``dynamo_breaks``: dynamo's own graph breaks. ``moved_inputs``: what was copied to ``device`` first.
    ``output``: the result of the traced (eager) call, a reference for runs elsewhere.
    ``notes``: what the capture did that a user should know (an already compiled function was
    unwrapped, dimensions marked dynamic were kept, why no graph was recorded).
    ``aten_graphs``: with ``level="aten"``, aot_autograd's forward and backward graphs.
    ``host_values``: graph inputs read from a global, a closure or a plain attribute, which stay
    on the host when the user's model moves to XLA (see ``neurondev.trace.inputs``).
    ``owners``: the traced copies (function state, arguments); dynamo's graphs read some of
    their tensors as attributes held weakly (an optimizer's parameters), so they live as long
    as the capture. ``rng_state``: the CPU generator's state the traced call started from (what
    ``output`` drew from: a run compared with it draws from there too).
    """

    name: str
    graphs: tuple[torch.fx.GraphModule, ...]
    example_inputs: tuple[tuple[Any, ...], ...]
    dynamo_breaks: tuple[DynamoBreak, ...] = ()
    moved_inputs: tuple[MovedInput, ...] = ()
    output: Any = dataclasses.field(default=None, repr=False)
    notes: tuple[CaptureNote, ...] = ()
    aten_graphs: tuple[AtenGraph, ...] = ()
    level: str = "dynamo"
    device: str = "cpu"
    host_values: tuple[HostValue, ...] = ()
    owners: tuple[Any, ...] = dataclasses.field(default=(), repr=False, compare=False)
    rng_state: torch.Tensor | None = dataclasses.field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("graphs", "dynamo_breaks", "moved_inputs", "notes", "aten_graphs", "host_values"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "example_inputs", tuple(tuple(inputs) for inputs in self.example_inputs))

    def __repr__(self) -> str:
        return (
            f"Capture({self.name!r}: {len(self.graphs)} graph(s), {len(self.dynamo_breaks)} dynamo break(s), "
            f"{len(self.moved_inputs)} input(s) moved to {self.device.upper()})"
        )


def capture(fn: Callable, *args: Any, level: str = "dynamo", **kwargs: Any) -> Capture:
    """Trace ``fn(*args, **kwargs)`` on CPU and record every graph dynamo produces.

    ``fn`` is a function or an ``nn.Module``. Inputs may be tensors, nested lists/tuples/dicts of
    tensors, and other values; tensors on another device are copied to CPU (see ``moved_inputs``).
    Nothing the user passed is modified: the function's own state (a module, a callable object)
    and every argument (modules, optimizers, caches, dataclasses, containers) are traced as one
    deep copy; the global random state is given back afterwards.

    ``level="aten"`` also records what aot_autograd makes of each graph (``aten_graphs``): the
    forward and, when inputs or parameters require grad, the backward graph (the traced copies'
    outputs are back-propagated with ones to make it), each with the real inputs it ran with.

    A model whose parameters are on the ``meta`` device (built under ``with torch.device("meta")``),
    or inputs given as meta tensors (shapes only), are traced on meta: not a single weight is
    materialised, whatever the model's size. The graphs then say ``device=meta`` where a CPU
    trace says ``cpu`` (``Capture.device`` is "meta"), and nothing can run (there are no values).
    """
    recorder = _Recorder(aten=check_level(level) == "aten")
    device = trace_device(fn, args, kwargs)
    state = torch.get_rng_state()
    with kept_global_state(reachable_generators(fn, args, kwargs)):
        output, moved, notes = _trace(fn, args, kwargs, recorder, device=device)
    if device.type == "meta":
        notes.insert(0, CaptureNote("meta"))
    if not recorder.graphs:
        notes.append(_why_no_graph(args, kwargs))
        warn_user(f"capture of {display_name(fn)} recorded no graph: {NO_GRAPH_WORDS[notes[-1].kind]}", NoGraphWarning)
    return recorder.capture(display_name(fn), output, moved, notes, level=level, device=str(device), rng_state=state)


def trace_device(fn: Any, args: tuple, kwargs: dict) -> torch.device:
    """``meta`` when the module's parameters or buffers, or any input, are meta tensors; else CPU."""
    inputs = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    tensors = inputs + ([*fn.parameters(), *fn.buffers()] if isinstance(fn, torch.nn.Module) else [])
    on_meta = any(t.device.type == "meta" for t in tensors)
    with_values = [t for t in inputs if t.device.type != "meta" and t.dim() > 0]
    if any(t.device.type == "meta" for t in inputs) and with_values:  # a meta model with inputs on the host is fine
        raise CaptureInputError(
            f"some inputs are meta tensors (shapes only) and others have values ({with_values[0].device}, "
            f"{tuple(with_values[0].shape)}): pass every input on meta (x.to('meta')) to trace the model's shapes, or every "
            "input with values (and a model with weights) to trace and run it"
        )
    return torch.device("meta") if on_meta else _CPU


def trace_only(fn: Callable, *args: Any, **kwargs: Any) -> Capture:
    """Like :func:`capture`, but stop once dynamo has made the first graph: ``fn`` is never run.

    For functions whose collectives need peers that are not there while tracing (a rank of a
    multi-device job traced alone); ``output`` is None and at most one graph is recorded.
    """
    recorder = _Recorder(stop=True)
    _, moved, notes = _trace(fn, args, kwargs, recorder)
    return recorder.capture(display_name(fn), None, moved, notes)


def _trace(
    fn: Callable,
    args: tuple,
    kwargs: dict,
    recorder: _Recorder,
    *,
    device: torch.device = _CPU,
    moved: list[MovedInput] | None = None,
    notes: list[CaptureNote] | None = None,
) -> tuple[Any, list[MovedInput], list[CaptureNote]]:
    """Trace ``fn`` with copies of its inputs (and of a module) on ``device``; record through ``recorder``."""
    check_callable(fn)
    moved = [] if moved is None else moved
    notes = [] if notes is None else notes
    fn = unwrap_compiled(fn, notes)
    check_inputs(fn, args, kwargs)
    with own_namespaces(fn) as namespaces:
        traced_fn, copied_args, copied_kwargs = traced_copies(fn, args, kwargs, device, moved, notes, namespaces)
        recorder.owners = (traced_fn, copied_args, copied_kwargs)
        try:
            with quiet_dynamo(), kept_dynamo_caches(), _made_on(device), forgotten_backend(recorder):
                output = _compiled_entry(traced_fn, recorder)(*copied_args, **copied_kwargs)
                if recorder.aten is not None and not recorder.aten.has_backward:
                    run_backward(output)  # the function did not back-propagate itself
                return output, moved, notes
        except Exception as error:
            if recorder.stop and recorder.graphs:
                return None, moved, notes
            message = str(error).strip().splitlines()[0] if str(error).strip() else ""
            line = user_line_of_error(error)
            where = f" at {line.where} ({line.code})" if line is not None else ""
            raise TraceError(
                f"tracing {display_name(fn)} on {device.type.upper()} raised {type(error).__name__}{where}: {message}"
                + _what_to_do(error, device)
            ) from error


def _made_on(device: torch.device) -> Any:
    """A trace on the host (CPU, meta) makes what the code makes without a device on the CPU, whatever default
    device the user set (``torch.set_default_device``, ``with torch.device(...)``); a trace on a device keeps it."""
    return without_default_device() if device.type in ("cpu", "meta") else contextlib.nullcontext()


def _what_to_do(error: Exception, device: torch.device) -> str:
    """What makes a trace that failed on meta work: state the traced code makes and keeps (transformers'
    cache with ``use_cache=True``, the model's default call) is a real meta tensor, which dynamo cannot
    trace (plain dynamo neither)."""
    if device.type != "meta" or "convert all Tensors to FakeTensors" not in str(error):
        return ""
    return (
        ". On the meta device, state the traced code makes and keeps (transformers' cache: use_cache=True, the model's "
        "default call) is a real meta tensor, which dynamo cannot trace: turn it off for the trace, for a transformers "
        "model pass use_cache=False"
    )


def capture_on_device(fn: Callable, args: tuple, kwargs: dict, device: torch.device) -> tuple[Capture, BaseException | None]:
    """Trace with the inputs (and a module's state) on ``device``, keeping the graphs dynamo recorded
    even when running them there fails; returns (capture, the failure or None). A trace that fails
    before dynamo records any graph gives a capture without graphs and the user's own error."""
    recorder = _Recorder()
    moved: list[MovedInput] = []
    notes: list[CaptureNote] = []
    try:
        output, _, _ = _trace(fn, args, kwargs, recorder, device=device, moved=moved, notes=notes)
        failure = None
    except TraceError as error:
        output, failure = None, error.__cause__ or error
    return recorder.capture(display_name(fn), output, moved, notes, device=str(device)), failure


@contextlib.contextmanager
def quiet_dynamo():
    """Keep dynamo's and inductor's own logging (a large fake-tensor traceback when user code fails)
    out of the user's output while we trace; their levels are given back afterwards."""
    loggers = [logging.getLogger(name) for name in ("torch._dynamo", "torch._subclasses", "torch.fx", "torch.__trace")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


# Why a capture recorded no graph: the NoGraphWarning's message (render says the note with the same words).
NO_GRAPH_WORDS = {
    "not a dense input": "an input is not a dense tensor (sparse or another layout), which dynamo does not trace; pass dense inputs (x.to_dense())",
    "no tensor op": (
        "dynamo found no tensor operation to put in a graph (the function does none on its inputs, "
        "returns plain Python values, or every line made dynamo fall back to Python); nothing is pinned"
    ),
}


def _why_no_graph(args: tuple, kwargs: dict) -> CaptureNote:
    tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    return CaptureNote("not a dense input" if any(t.layout != torch.strided for t in tensors) else "no tensor op")


class _Recorder:
    """A torch.compile backend that keeps each graph and runs it eagerly (no other backend);
    with ``stop=True`` it stops dynamo after the first graph instead."""

    def __init__(self, *, stop: bool = False, aten: bool = False) -> None:
        self.stop = stop
        self.graphs: list[torch.fx.GraphModule] = []
        self.example_inputs: list[list[Any]] = []
        self.breaks: list[DynamoBreak] = []
        self.aten = AtenRecorder() if aten else None
        self.owners: tuple[Any, ...] = ()

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable:
        self.graphs.append(_kept(gm) if self.stop else gm)
        self.example_inputs.append([concrete(value) for value in example_inputs])
        found = dynamo_break_of(gm)
        if found is not None:
            self.breaks.append(_dynamo_break(*found))
        if self.stop:
            raise _Traced()
        if self.aten is not None:
            return self.aten.compile(len(self.graphs) - 1, gm, example_inputs)
        return gm.forward

    def capture(self, name: str, output: Any, moved: list[MovedInput], notes: list[CaptureNote], **extra: Any) -> Capture:
        """The frozen record of what this recorder saw."""
        aten = self.aten.graphs if self.aten is not None else ()
        inputs = tuple(tuple(graph_inputs) for graph_inputs in self.example_inputs)
        graphs, breaks = tuple(self.graphs), tuple(self.breaks)
        host = (
            tuple(value for i, gm in enumerate(graphs) for value in host_values(i, gm, list(inputs[i]), self.owners[0]))
            if self.owners
            else ()
        )
        return Capture(
            name, graphs, inputs, breaks, tuple(moved), output, tuple(notes), aten, host_values=host, owners=self.owners, **extra
        )


def _kept(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of a graph a stopping recorder keeps: dynamo (torch 2.15) empties the GraphModule of a backend that raised."""
    try:
        return copy.deepcopy(gm)
    except Exception:  # a graph that cannot be copied is kept as it is
        return gm


class _Traced(Exception):
    """Raised by a stopping recorder once it holds its graph."""


def _dynamo_break(reason: str, frame: Any) -> DynamoBreak:
    if frame is None:
        return DynamoBreak(reason, None)
    return DynamoBreak(reason, source_line(frame.filename, frame.lineno, frame.name, frame.line))


def _compiled_entry(fn: Callable, recorder: _Recorder) -> Callable:
    """Compile a fresh entry function that calls ``fn``.

    Dynamo keeps compiled code on the code object of each frame it compiles. New code objects per
    capture (for the entry and for a plain-function ``fn``) keep our entries off the user's own
    function, and ``torch._dynamo.reset()`` is never called, so the user's compiled code stays.
    """

    def entry(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return torch.compile(fresh_function(entry), backend=recorder, dynamic=False, fullgraph=False)
