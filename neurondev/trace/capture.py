"""Trace a function or module on CPU with a recording torch.compile backend: the graphs dynamo made."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import inspect
import logging
import types
import warnings
from pathlib import Path
from typing import Any, Callable

import torch
import torch.fx
import torch.utils._pytree as pytree

from neurondev.errors import (
    CaptureInputError,
    InvalidOptionError,
    MissingInputsError,
    NoGraphWarning,
    NotCallableError,
    TraceError,
)

__all__ = [
    "Capture",
    "DynamoBreak",
    "MovedInput",
    "capture",
    "capture_on_device",
    "check_inputs",
    "required_inputs",
    "trace_only",
]

_CPU = torch.device("cpu")


@dataclasses.dataclass(frozen=True)
class DynamoBreak:
    """A graph break dynamo itself made (as ``torch._dynamo.explain`` reports it), with its user source."""

    reason: str
    file: str | None
    line: int | None
    code: str | None


@dataclasses.dataclass(frozen=True)
class MovedInput:
    """An input (or module state) that was not on CPU and was copied there for the trace."""

    path: str
    device: str


@dataclasses.dataclass
class Capture:
    """What tracing ``fn`` on CPU produced.

    ``graphs``: every FX GraphModule dynamo produced, in order. ``example_inputs``: for each graph,
    the CPU tensors dynamo passed it (module parameters included, as placeholders).
    ``dynamo_breaks``: dynamo's own graph breaks. ``moved_inputs``: what was copied to CPU first.
    ``output``: the result of the traced (eager) call, a reference for runs elsewhere.
    ``notes``: what the capture did that a user should know (an already compiled function was
    unwrapped, dimensions marked dynamic were kept, why no graph was recorded).
    """

    name: str
    graphs: list[torch.fx.GraphModule]
    example_inputs: list[list[Any]]
    dynamo_breaks: list[DynamoBreak]
    moved_inputs: list[MovedInput]
    output: Any
    notes: list[str] = dataclasses.field(default_factory=list)
    aten_graphs: list[Any] = dataclasses.field(default_factory=list)

    def __repr__(self) -> str:
        return (
            f"Capture({self.name!r}: {len(self.graphs)} graph(s), {len(self.dynamo_breaks)} dynamo break(s), "
            f"{len(self.moved_inputs)} input(s) moved to CPU)"
        )


def capture(fn: Callable, *args: Any, level: str = "dynamo", **kwargs: Any) -> Capture:
    """Trace ``fn(*args, **kwargs)`` on CPU and record every graph dynamo produces.

    ``fn`` is a function or an ``nn.Module``. Inputs may be tensors, nested lists/tuples/dicts of
    tensors, and other values; tensors on another device are copied to CPU (see ``moved_inputs``).
    Nothing the user passed is modified: inputs are cloned and a module is traced as a deep copy.

    ``level="aten"`` also records what aot_autograd makes of each graph (``aten_graphs``): the
    forward and, when inputs or parameters require grad, the backward graph (the traced copies'
    outputs are back-propagated with ones to make it), each with the real inputs it ran with.
    """
    if level not in ("dynamo", "aten"):
        raise InvalidOptionError(f"level is 'dynamo' or 'aten' (aot_autograd's forward and backward), got {level!r}")
    recorder = _Recorder(aten=level == "aten")
    output, moved, notes = _trace(fn, args, kwargs, recorder)
    result = Capture(_name(fn), recorder.graphs, recorder.example_inputs, recorder.breaks, moved, output, notes)
    if recorder.aten is not None:
        result.aten_graphs = recorder.aten.graphs
    _warn_if_empty(result, args, kwargs)
    return result


def trace_only(fn: Callable, *args: Any, **kwargs: Any) -> Capture:
    """Like :func:`capture`, but stop once dynamo has made the first graph: ``fn`` is never run.

    For functions whose collectives need peers that are not there while tracing (a rank of a
    multi-device job traced alone); ``output`` is None and at most one graph is recorded.
    """
    recorder = _Recorder(stop=True)
    _, moved, notes = _trace(fn, args, kwargs, recorder)
    return Capture(_name(fn), recorder.graphs, recorder.example_inputs, recorder.breaks, moved, None, notes)


def _trace(
    fn: Callable, args: tuple, kwargs: dict, recorder: "_Recorder", *, device: torch.device = _CPU,
    moved: list[MovedInput] | None = None, notes: list[str] | None = None,
) -> tuple[Any, list[MovedInput], list[str]]:
    """Trace ``fn`` with copies of its inputs (and of a module) on ``device``; record through ``recorder``."""
    _check_callable(fn)
    moved = [] if moved is None else moved
    notes = [] if notes is None else notes
    fn = _unwrap_compiled(fn, notes)
    check_inputs(fn, args, kwargs)
    traced_fn = _module_copy(fn, moved, device) if isinstance(fn, torch.nn.Module) else _fresh_function(fn)
    copied_args, copied_kwargs = (_clone(tree, prefix, moved, notes, device) for tree, prefix in ((args, "args"), (kwargs, "kwargs")))
    try:
        with _quiet_dynamo():
            output = _compiled_entry(traced_fn, recorder)(*copied_args, **copied_kwargs)
            if recorder.aten is not None:
                from neurondev.trace.aten import run_backward

                run_backward(output)
            return output, moved, notes
    except Exception as error:
        if recorder.stop and recorder.graphs:
            return None, moved, notes
        message = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise TraceError(f"tracing {_name(fn)} on {device.type.upper()} raised {type(error).__name__}: {message}") from error


def capture_on_device(fn: Callable, args: tuple, kwargs: dict, device: torch.device) -> tuple[Capture, BaseException | None]:
    """Trace with the inputs (and a module's state) on ``device``, keeping the graphs dynamo recorded
    even when running them there fails; returns (capture, the failure or None)."""
    recorder, moved, notes = _Recorder(), [], []
    try:
        output, _, _ = _trace(fn, args, kwargs, recorder, device=device, moved=moved, notes=notes)
        failure = None
    except TraceError as error:
        if not recorder.graphs:
            raise
        output, failure = None, error.__cause__ or error
    captured = Capture(_name(fn), recorder.graphs, recorder.example_inputs, recorder.breaks, moved, output, notes)
    return captured, failure


@contextlib.contextmanager
def _quiet_dynamo():
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


def _unwrap_compiled(fn: Callable, notes: list[str]) -> Callable:
    """The original of an already ``torch.compile``d function or module, as dynamo's own explain does."""
    original = getattr(fn, "_orig_mod", None) or getattr(fn, "_torchdynamo_orig_callable", None)
    if original is None:
        return fn
    notes.append(f"{_name(fn)} was already compiled with torch.compile: its original {_name(original)} was traced")
    return original


def _warn_if_empty(result: Capture, args: tuple, kwargs: dict) -> None:
    if result.graphs:
        return
    reason = _why_no_graph(args, kwargs)
    result.notes.append(reason)
    warnings.warn(f"capture of {result.name} recorded no graph: {reason}", NoGraphWarning, stacklevel=3)


def _why_no_graph(args: tuple, kwargs: dict) -> str:
    tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    if any(t.layout != torch.strided for t in tensors):
        return (
            "an input is not a dense tensor (sparse or another layout), which dynamo does not trace; "
            "pass dense inputs (x.to_dense())"
        )
    return (
        "dynamo found no tensor operation to put in a graph (the function does none on its inputs, "
        "returns plain Python values, or every line made dynamo fall back to Python); nothing is pinned"
    )


class _Recorder:
    """A torch.compile backend that keeps each graph and runs it eagerly (no other backend);
    with ``stop=True`` it stops dynamo after the first graph instead."""

    def __init__(self, *, stop: bool = False, aten: bool = False) -> None:
        from neurondev.trace.aten import AtenRecorder

        self.stop = stop
        self.graphs: list[torch.fx.GraphModule] = []
        self.example_inputs: list[list[Any]] = []
        self.breaks: list[DynamoBreak] = []
        self.aten = AtenRecorder() if aten else None

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable:
        self.graphs.append(gm)
        self.example_inputs.append(list(example_inputs))
        reason = getattr(gm, "compile_subgraph_reason", None)
        if reason is not None and reason.graph_break:
            self.breaks.append(_dynamo_break(reason))
        if self.stop:
            raise _Traced()
        if self.aten is not None:
            return self.aten.compile(len(self.graphs) - 1, gm, example_inputs)
        return gm.forward


class _Traced(Exception):
    """Raised by a stopping recorder once it holds its graph."""


def _dynamo_break(reason: Any) -> DynamoBreak:
    frame = reason.user_stack[-1] if reason.user_stack else None
    if frame is None:
        return DynamoBreak(str(reason.reason), None, None, None)
    return DynamoBreak(str(reason.reason), frame.filename, frame.lineno, (frame.line or "").strip())


def _compiled_entry(fn: Callable, recorder: _Recorder) -> Callable:
    """Compile a fresh entry function that calls ``fn``.

    Dynamo keeps compiled code on the code object of each frame it compiles. New code objects per
    capture (for the entry and for a plain-function ``fn``) keep our entries off the user's own
    function, and ``torch._dynamo.reset()`` is never called, so the user's compiled code stays.
    """

    def entry(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return torch.compile(_fresh_function(entry), backend=recorder, dynamic=False, fullgraph=False)


def _fresh_function(fn: Callable) -> Callable:
    """The same Python function with its own code object (same file and lines); others unchanged."""
    if not isinstance(fn, types.FunctionType):
        return fn
    fresh = types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    fresh.__kwdefaults__ = copy.copy(fn.__kwdefaults__)
    fresh.__qualname__ = fn.__qualname__
    return fresh


def _check_callable(fn: Any) -> None:
    if not callable(fn):
        raise NotCallableError(
            f"capture needs a function or an nn.Module to trace, got {type(fn).__name__}; "
            "pass the function itself, e.g. neurondev.capture(f, x) rather than neurondev.capture(f(x))"
        )


def required_inputs(fn: Callable) -> list[str] | None:
    """The names of the parameters ``fn`` (or a module's ``forward``) cannot do without; None when
    its signature cannot be read."""
    target = fn.forward if isinstance(fn, torch.nn.Module) else fn
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    return [
        p.name
        for p in signature.parameters.values()
        if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def check_inputs(fn: Callable, args: tuple, kwargs: dict) -> None:
    """MissingInputsError, naming the parameters, when ``fn`` needs inputs and none were given."""
    required = [] if args or kwargs else required_inputs(fn)
    if required:
        raise MissingInputsError(
            f"{_name(fn)} needs example inputs for {', '.join(required)}; pass them after the function, "
            f"e.g. neurondev.capture({_name(fn)}, torch.randn(64))"
        )


def _clone(tree: Any, prefix: str, moved: list[MovedInput], notes: list[str], device: torch.device) -> Any:
    """Copy every tensor of a nested structure onto ``device``, recording the ones that were elsewhere."""
    leaves, spec = pytree.tree_flatten_with_path(tree)
    cloned = [_tensor_copy(value, prefix + pytree.keystr(path), moved, notes, device) for path, value in leaves]
    return pytree.tree_unflatten(cloned, spec)


_DYNAMIC_MARKS = (
    "_dynamo_dynamic_indices",
    "_dynamo_unbacked_indices",
    "_dynamo_weak_dynamic_indices",
    "_dynamo_static_indices",
    "_dynamo_dynamic_range",
)


def _tensor_copy(value: Any, path: str, moved: list[MovedInput], notes: list[str], device: torch.device) -> Any:
    if not isinstance(value, torch.Tensor):
        return value
    if value.device.type == "meta":
        raise CaptureInputError(
            f"input {path} is a meta tensor: it has a shape but no values, and tracing runs the function; "
            f"pass a tensor with values of the same shape, e.g. torch.randn{tuple(value.shape)}"
        )
    if value.device.type != device.type:
        moved.append(MovedInput(path, str(value.device)))
    copied = value.detach().to(device, copy=True)
    _keep_dynamic_marks(value, copied, path, notes)
    return copied.requires_grad_(value.requires_grad)


def _keep_dynamic_marks(value: torch.Tensor, copied: torch.Tensor, path: str, notes: list[str]) -> None:
    """Carry ``torch._dynamo.mark_dynamic`` (and its relatives) over to the traced copy."""
    kept = [name for name in _DYNAMIC_MARKS if hasattr(value, name)]
    for name in kept:
        setattr(copied, name, copy.copy(getattr(value, name)))
    if "_dynamo_dynamic_indices" in kept:
        dims = sorted(value._dynamo_dynamic_indices)
        notes.append(f"input {path}: dimension(s) {dims} marked dynamic by you stay dynamic in the graph")


def _module_copy(module: torch.nn.Module, moved: list[MovedInput], device: torch.device) -> torch.nn.Module:
    """A deep copy of the module on ``device``: its parameters, buffers and training flag stay the user's."""
    for name, tensor in [*module.named_parameters(), *module.named_buffers()]:
        if tensor.device.type != device.type:
            moved.append(MovedInput(f"module.{name}", str(tensor.device)))
    return copy.deepcopy(module).to(device)


def _name(fn: Any) -> str:
    """A name a user recognises: the module's class, the function's qualified name, where a lambda is."""
    if isinstance(fn, torch.nn.Module):
        return type(fn).__name__
    name = getattr(fn, "__name__", None)
    code = getattr(fn, "__code__", None)
    if name == "<lambda>" and code is not None:
        return f"<lambda at {Path(code.co_filename).name}:{code.co_firstlineno}>"
    return getattr(fn, "__qualname__", None) or name or type(fn).__name__
