"""What the recorder hears from dynamo, read off its frames: the function a compiled frame is as its user knows it
(through decorators, torch's own wrappers and resumed frames), the user's line that called it, the value a guarded
name holds now, each compile's record after the last one seen, and a graph's identity."""

from __future__ import annotations

import ast
import os
import re
import sys
import types
from collections.abc import Mapping
from typing import Any

from neurondev._compat import dynamo as dynamo_internals
from neurondev.trace.source import is_program_file

__all__ = ["graph_hash", "in_torch", "known_as", "metrics_after", "user_call", "value_now", "wrapped_name"]

_GUARDED = re.compile(r"^\s*(?:\d+/\d+:\s*)?(?P<expression>.+?)\s*==\s*(?P<value>[^#\n]+?)\s*(?:#|$)", re.M)
_TORCH_PARTS = (f"{os.sep}torch{os.sep}", f"{os.sep}torch_xla{os.sep}")  # a folder of torch's, not a name holding "torch"


def graph_hash(gm: Any) -> str:
    """A graph's identity across processes: the hash of its Python code (the same code, the same graph)."""
    import hashlib

    return hashlib.sha1(gm.code.encode()).hexdigest()[:12]


def user_call(frame: Any) -> tuple[str | None, int | None]:
    """The user's line that called the frame being compiled: the first frame, from its caller outwards, of the program
    (not torch's, torch_xla's, neurondev's or the standard library's: a compiled nn.Module's forward is torch's, the
    loop's call is the user's)."""
    while frame is not None:
        if is_program_file(frame.f_code.co_filename):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None, None


def metrics_after(metrics: list[Any], last: Any) -> list[Any]:
    """The records dynamo kept after ``last`` (it keeps the latest 64: count by identity, not by length)."""
    positions = [i for i, metric in enumerate(metrics) if metric is last]
    return metrics[positions[-1] + 1 :] if positions else (metrics if last is None else metrics[-1:])


def wrapped_name(caller: Any) -> tuple[str, str | None]:
    """The function torch.compile's wrapper (the frame ``caller``) calls, as its user knows it, and its identity (its
    code's file and first line: two lambdas share a name, never a code object)."""
    fn = caller.f_locals.get("fn")
    owner = getattr(fn, "__self__", None)
    if _is_module(owner) or _is_module(fn):  # a compiled module: torch.compile wraps its call
        fn = getattr(type(owner if _is_module(owner) else fn), "forward", fn)
    function = getattr(fn, "__func__", fn)
    if isinstance(function, types.FunctionType):
        inner = _unwrapped(function)
        return _qualified(inner), f"{inner.__code__.co_filename}:{inner.__code__.co_firstlineno}"
    name = type(fn).__name__ if fn is not None else "compiled code"
    return name, name


def known_as(frame: Any) -> tuple[str, str, int]:
    """(qualified name, file, line) of the function a compiled frame is, as its user knows it: the
    function a decorator's (or torch's own) wrapper calls, or the function a resumed frame (after a break) belongs to."""
    code = frame.f_code
    if "<locals>" in code.co_qualname:
        wrapped = _wrapped(frame)
        if wrapped is not None:
            inner = wrapped.__code__
            return _qualified(wrapped), inner.co_filename, inner.co_firstlineno
    resumed = dynamo_internals.resumed_function(code.co_name)
    if resumed is not None:
        name, line = resumed
        return f"{name} (after the break at line {line})", code.co_filename, line
    return code.co_qualname, code.co_filename, code.co_firstlineno


def _qualified(function: types.FunctionType) -> str:
    return function.__qualname__


def _wrapped(frame: Any) -> types.FunctionType | None:
    """The function a wrapper's closure holds (a bound method's function: an nn.Module's forward), followed
    through further wrappers to one defined at a module's or a class's top level (``LlamaForCausalLM.forward``)."""
    locals_ = frame.f_locals
    found = [locals_.get(name) for name in frame.f_code.co_freevars]
    torch_wrapper = in_torch(frame.f_code.co_filename)  # torch's own wrapper of a module call: the module's forward
    candidates = [_forward_of(value) if torch_wrapper else getattr(value, "__func__", value) for value in found if callable(value)]
    functions = [value for value in candidates if isinstance(value, types.FunctionType)]
    for function in functions:
        inner = _unwrapped(function)
        if "<locals>" not in inner.__code__.co_qualname and not in_torch(inner.__code__.co_filename):
            return inner
    return functions[0] if functions else None


def _forward_of(value: Any) -> Any:
    """A module's ``forward`` function for a module (torch wraps module calls), a method's function, or the value."""
    forward = getattr(type(value), "forward", None) if _is_module(value) else None
    return forward if forward is not None else getattr(value, "__func__", value)


def _is_module(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.nn.Module)


def in_torch(file: str) -> bool:
    return any(part in file for part in _TORCH_PARTS)


def _unwrapped(function: types.FunctionType, depth: int = 8) -> types.FunctionType:
    """Through ``functools.wraps`` (``__wrapped__``) and closures to a function whose own code is not a
    wrapper's (a wrapper made by ``functools.wraps`` carries the wrapped name, not its code)."""
    while depth and ("<locals>" in function.__code__.co_qualname or in_torch(function.__code__.co_filename)):
        depth -= 1
        inner = getattr(function, "__wrapped__", None)
        if not isinstance(inner, types.FunctionType):
            torch_wrapper = in_torch(function.__code__.co_filename)  # torch's own wrapper of a module call: the module's forward
            cells = [cell.cell_contents for cell in function.__closure__ or () if _bound(cell)]
            values = [_forward_of(value) if torch_wrapper else getattr(value, "__func__", value) for value in cells]
            inner = next((value for value in values if isinstance(value, types.FunctionType)), None)
        if inner is None:
            break
        function = inner
    return function


def _bound(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def value_now(reason: str | None, frame: Any) -> tuple[str | None, str | None]:
    """The value a guarded name (``lr == 0.1``) holds now, read from the frame, and the file of the class of
    the object that holds it when that is an attribute of a library's object; (None, None) for other guards."""
    text, _ = dynamo_internals.guard_reason(reason or "")
    match = _GUARDED.match(text)
    if match is None or "tensor '" in text:
        return None, None
    expression = re.sub(r"\b[LG]\['([^']+)'\]", r"\1", match["expression"].strip())
    try:
        tree = ast.parse(expression, mode="eval").body
        value = _evaluate(tree, frame.f_locals, frame.f_globals)
        owner = _evaluate(tree.value, frame.f_locals, frame.f_globals) if isinstance(tree, ast.Attribute) else None
    except Exception:  # a guard on something else than names, attributes and constant subscripts: not read
        return None, None
    owner_file = getattr(sys.modules.get(type(owner).__module__), "__file__", None) if owner is not None else None
    return repr(value)[:80], owner_file


def _evaluate(node: ast.AST, local: Mapping[str, Any], global_: Mapping[str, Any]) -> Any:
    """Names, attributes and constant subscripts only: nothing is called, nothing is changed."""
    if isinstance(node, ast.Name):
        return local[node.id] if node.id in local else global_[node.id]
    if isinstance(node, ast.Attribute):
        return getattr(_evaluate(node.value, local, global_), node.attr)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return _evaluate(node.value, local, global_)[node.slice.value]
    raise ValueError("not a plain reference")
