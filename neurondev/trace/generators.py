"""The user's own random generators a call can reach, so that whatever neurondev runs leaves their state as it was."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any

import torch

from neurondev._compat.fx_internals import tree_leaves
from neurondev.trace.source import is_program_file

__all__ = ["reachable_generators"]

_MAX_FUNCTIONS = 200  # functions followed through globals and closures: enough for a program, bounded for a library


def reachable_generators(subject: Any, args: tuple = (), kwargs: dict | None = None) -> tuple[torch.Generator, ...]:
    """Every ``torch.Generator`` the call ``subject(*args, **kwargs)`` can reach: in its arguments, in a
    module's attributes (and its submodules'), and in the globals and closures its code reads (and the
    code of the functions those name), each once."""
    found: dict[int, torch.Generator] = {}
    for value in _reachable(subject, args, kwargs or {}):
        if isinstance(value, torch.Generator):
            found.setdefault(id(value), value)
    return tuple(found.values())


def _reachable(subject: Any, args: tuple, kwargs: dict) -> Iterator[Any]:
    yield from tree_leaves((args, kwargs))
    seen: set[int] = set()
    pending = [subject]
    while pending and len(seen) < _MAX_FUNCTIONS:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        for value in _values_of(item):
            yield value
            if isinstance(value, (types.FunctionType, types.MethodType, torch.nn.Module)) and _is_users(value):
                pending.append(value)


def _values_of(item: Any) -> Iterator[Any]:
    """What ``item`` holds directly: a module's attributes and its forward's names; a function's globals
    read by its code and its closure's cells."""
    if isinstance(item, torch.nn.Module):
        for module in item.modules():
            yield from vars(module).values()
        forward = getattr(type(item), "forward", None)
        if isinstance(forward, types.FunctionType):
            yield forward
        return
    function = getattr(item, "__func__", item)
    code = getattr(function, "__code__", None)
    if code is None:
        return
    namespace = getattr(function, "__globals__", {})
    yield from (namespace[name] for name in _names_read(code) if name in namespace)
    yield from (_cell_value(cell) for cell in function.__closure__ or ())


def _names_read(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _names_read(constant)


def _cell_value(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def _is_users(value: Any) -> bool:
    """The program's own functions and modules (torch's, neurondev's and the standard library's are not followed)."""
    if isinstance(value, torch.nn.Module):
        return not type(value).__module__.startswith(("torch.", "neurondev."))
    code = getattr(getattr(value, "__func__", value), "__code__", None)
    return code is not None and is_program_file(code.co_filename)
