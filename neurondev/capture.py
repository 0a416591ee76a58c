"""Trace a function or module on CPU with a recording torch.compile backend: the graphs dynamo made."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import types
from typing import Any, Callable

import torch
import torch.fx
import torch.utils._pytree as pytree

from .errors import MissingInputsError, NotCallableError, TraceError

__all__ = ["Capture", "DynamoBreak", "MovedInput", "capture", "trace_only"]


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
    ``output``: the result of the traced (eager CPU) call, a reference for runs elsewhere.
    """

    name: str
    graphs: list[torch.fx.GraphModule]
    example_inputs: list[list[Any]]
    dynamo_breaks: list[DynamoBreak]
    moved_inputs: list[MovedInput]
    output: Any

    def __repr__(self) -> str:
        return (
            f"Capture({self.name!r}: {len(self.graphs)} graph(s), {len(self.dynamo_breaks)} dynamo break(s), "
            f"{len(self.moved_inputs)} input(s) moved to CPU)"
        )


def capture(fn: Callable, *args: Any, **kwargs: Any) -> Capture:
    """Trace ``fn(*args, **kwargs)`` on CPU and record every graph dynamo produces.

    ``fn`` is a function or an ``nn.Module``. Inputs may be tensors, nested lists/tuples/dicts of
    tensors, and other values; tensors on another device are copied to CPU (see ``moved_inputs``).
    Nothing the user passed is modified: inputs are cloned and a module is traced as a deep copy.
    """
    recorder = _Recorder()
    output, moved = _trace(fn, args, kwargs, recorder)
    return Capture(_name(fn), recorder.graphs, recorder.example_inputs, recorder.breaks, moved, output)


def trace_only(fn: Callable, *args: Any, **kwargs: Any) -> Capture:
    """Like :func:`capture`, but stop once dynamo has made the first graph: ``fn`` is never run.

    For functions whose collectives need peers that are not there while tracing (a rank of a
    multi-device job traced alone); ``output`` is None and at most one graph is recorded.
    """
    recorder = _Recorder(stop=True)
    _, moved = _trace(fn, args, kwargs, recorder)
    return Capture(_name(fn), recorder.graphs, recorder.example_inputs, recorder.breaks, moved, None)


def _trace(fn: Callable, args: tuple, kwargs: dict, recorder: "_Recorder") -> tuple[Any, list[MovedInput]]:
    _check_callable(fn)
    _check_inputs(fn, args, kwargs)
    moved: list[MovedInput] = []
    traced_fn = _cpu_copy_of_module(fn, moved) if isinstance(fn, torch.nn.Module) else _fresh_function(fn)
    cpu_args, cpu_kwargs = _cpu_clone(args, "args", moved), _cpu_clone(kwargs, "kwargs", moved)
    try:
        return _compiled_entry(traced_fn, recorder)(*cpu_args, **cpu_kwargs), moved
    except Exception as error:
        if recorder.stop and recorder.graphs:
            return None, moved
        raise TraceError(f"tracing {_name(fn)} on CPU raised {type(error).__name__}: {error}") from error


class _Recorder:
    """A torch.compile backend that keeps each graph and runs it eagerly (no other backend);
    with ``stop=True`` it stops dynamo after the first graph instead."""

    def __init__(self, *, stop: bool = False) -> None:
        self.stop = stop
        self.graphs: list[torch.fx.GraphModule] = []
        self.example_inputs: list[list[Any]] = []
        self.breaks: list[DynamoBreak] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable:
        self.graphs.append(gm)
        self.example_inputs.append(list(example_inputs))
        reason = getattr(gm, "compile_subgraph_reason", None)
        if reason is not None and reason.graph_break:
            self.breaks.append(_dynamo_break(reason))
        if self.stop:
            raise _Traced()
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


def _check_inputs(fn: Callable, args: tuple, kwargs: dict) -> None:
    if args or kwargs:
        return
    target = fn.forward if isinstance(fn, torch.nn.Module) else fn
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return
    required = [
        p.name
        for p in signature.parameters.values()
        if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    if required:
        raise MissingInputsError(
            f"{_name(fn)} needs example inputs for {', '.join(required)}; pass them after the function, "
            f"e.g. neurondev.capture({_name(fn)}, torch.randn(64))"
        )


def _cpu_clone(tree: Any, prefix: str, moved: list[MovedInput]) -> Any:
    """Clone every tensor of a nested structure onto CPU, recording the ones that were elsewhere."""
    leaves, spec = pytree.tree_flatten_with_path(tree)
    cloned = [_cpu_tensor(value, prefix + pytree.keystr(path), moved) for path, value in leaves]
    return pytree.tree_unflatten(cloned, spec)


def _cpu_tensor(value: Any, path: str, moved: list[MovedInput]) -> Any:
    if not isinstance(value, torch.Tensor):
        return value
    if value.device.type != "cpu":
        moved.append(MovedInput(path, str(value.device)))
        return value.detach().to("cpu").requires_grad_(value.requires_grad)
    return value.detach().clone().requires_grad_(value.requires_grad)


def _cpu_copy_of_module(module: torch.nn.Module, moved: list[MovedInput]) -> torch.nn.Module:
    """A deep copy of the module on CPU: its parameters, buffers and training flag stay the user's."""
    for name, tensor in [*module.named_parameters(), *module.named_buffers()]:
        if tensor.device.type != "cpu":
            moved.append(MovedInput(f"module.{name}", str(tensor.device)))
    return copy.deepcopy(module).to("cpu")


def _name(fn: Any) -> str:
    if isinstance(fn, torch.nn.Module):
        return type(fn).__name__
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
