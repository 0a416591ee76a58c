"""What a capture is given to trace, checked before anything runs: a callable (refused by name otherwise), the inputs
it cannot do without, and the original of a function or module the user compiled already (traced in its place)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from neurondev.errors import (
    MissingInputsError,
    NotCallableError,
)
from neurondev.trace.capture_notes import CaptureNote
from neurondev.trace.source import display_name

__all__ = ["check_callable", "check_inputs", "original_of", "refuse_generator", "required_inputs", "unwrap_compiled"]


def original_of(fn: Any) -> Any:
    """The function or module a ``torch.compile`` call wrapped (``fn`` itself when it is not compiled): what is traced
    and run, under the backend neurondev measures, rather than inside the user's own compile with its backend."""
    for wrapped in ("_orig_mod", "_torchdynamo_orig_callable"):  # a module's, a function's
        original = getattr(fn, wrapped, None)
        if original is not None:  # not `or`: an empty nn.Sequential is falsy
            return original
    return fn


def unwrap_compiled(fn: Callable, notes: list[CaptureNote]) -> Callable:
    """The original of an already ``torch.compile``d function or module, as dynamo's own explain does; a note says so."""
    original = original_of(fn)
    if original is fn:
        return fn
    notes.append(CaptureNote("already compiled", name=display_name(fn), original=display_name(original)))
    return original


def check_callable(fn: Any) -> None:
    """NotCallableError, saying what to pass, when ``fn`` is not a function or an nn.Module."""
    if not callable(fn):
        raise NotCallableError(
            f"capture needs a function or an nn.Module to trace, got {type(fn).__name__}; "
            "pass the function itself, e.g. neurondev.capture(f, x) rather than neurondev.capture(f(x))"
        )
    refuse_generator(fn, "capture")


def refuse_generator(fn: Any, verb: str) -> None:
    """NotCallableError when ``fn`` is a generator function: calling it runs none of its code (it makes a generator),
    so there is no tensor to trace or run."""
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        name = getattr(fn, "__qualname__", type(fn).__name__)
        raise NotCallableError(
            f"{name} is a generator function: calling it runs none of its code, it returns a generator; {verb} needs a "
            f"function that returns its tensors: pass one that runs it, e.g. neurondev.{verb}(lambda x: list({name}(x)), x)"
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
            f"{display_name(fn)} needs example inputs for {', '.join(required)}; pass them after the function, "
            f"e.g. neurondev.capture({display_name(fn)}, torch.randn(64))"
        )
