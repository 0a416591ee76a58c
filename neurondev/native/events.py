"""What a native device did that costs a program (``DeviceEvent``), where it happened (the graph node, the module, the
user's line), and which accounting of each device is on; shared by the accountings (``native.accounting``, the
dispatch mode; ``native.logged``, a device's own log)."""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import threading
import weakref
from typing import Any

import torch
import torch.fx

from neurondev._compat.fx_internals import OpOverload
from neurondev.fx.modules import module_path
from neurondev.runs.counts import Counts
from neurondev.trace.source import Located, SourceLine, is_program_file, is_user_file, source_line, source_of

__all__ = ["ACTIVE", "DEVICE_LOGS", "EVENT_KINDS", "DeviceEvent", "Totals", "Whereabouts", "active_for", "name_of"]

EVENT_KINDS = ("copy to host", "copy to device", "sync", "fallback")

ACTIVE: list[Any] = []  # the accountings that are on, innermost last (both kinds)
DEVICE_LOGS: dict[str, Any] = {}  # device type -> its own log of copies, syncs and fallbacks (the host device registers its)


def active_for(device_type: str) -> Any:
    """The innermost accounting of ``device_type`` that is on, or None."""
    return next((accounting for accounting in reversed(ACTIVE) if accounting.device_type == device_type), None)


@dataclasses.dataclass(frozen=True)
class DeviceEvent(Located):
    """One thing a native device did that costs the program: ``kind`` (one of ``EVENT_KINDS``), the ATen
    op that did it as the dispatcher ran it (for a fallback: the op that fell back, ``aten::index_select``),
    the op the program called (``called``: ``aten::embedding``; the same op when it was called directly),
    the bytes it moved, the graph node and module it happened in, the line, and the collective a copy was part
    of (``c10d::allreduce``: a process group that moves device tensors through the host)."""

    kind: str
    op: str
    bytes: int
    node: str | None = None
    module: str = ""
    source: SourceLine | None = None
    called: str | None = None
    collective: str | None = None


class Totals:
    """Running sums of events, read as ``Counts``."""

    def __init__(self) -> None:
        self.to_host = self.to_device = self.bytes_to_host = self.bytes_to_device = self.syncs = self.fallback_bytes = 0
        self.collective_copies = 0
        self.fallbacks: dict[str, int] = {}

    def add(self, event: DeviceEvent) -> None:
        if event.collective is not None and event.kind in ("copy to host", "copy to device"):
            self.collective_copies += 1
        if event.kind == "copy to host":
            self.to_host += 1
            self.bytes_to_host += event.bytes
        elif event.kind == "copy to device":
            self.to_device += 1
            self.bytes_to_device += event.bytes
        elif event.kind == "sync":
            self.syncs += 1
        else:
            self.fallbacks[event.op] = self.fallbacks.get(event.op, 0) + 1
            self.fallback_bytes += event.bytes

    def reading(self) -> Counts:
        return Counts(
            transfers_to_host=self.to_host,
            transfers_to_device=self.to_device,
            fallbacks=tuple(self.fallbacks.items()),
            syncs=self.syncs,
            bytes_to_host=self.bytes_to_host,
            bytes_to_device=self.bytes_to_device,
            fallback_bytes=self.fallback_bytes,
            collective_copies=self.collective_copies,
        )


class Whereabouts:
    """Where an event happened: the graph node running (an interpreter sets ``node``), else the innermost line of the
    program's code on the Python stack, and the innermost module of the model there (``modules``: id -> dotted name)."""

    def __init__(self, modules: dict[int, str] | None = None) -> None:
        self.modules = dict(modules or {})
        self.node: torch.fx.Node | None = None

    def where(self, caller: Any) -> tuple[str | None, str, SourceLine | None]:
        """(node name, module, line) of an event seen in ``caller``'s frame (or beneath it): the node an interpreter
        runs, or the node of a compiled graph whose code is on the stack, else the innermost line of the program."""
        return self.where_called(caller)[:3]

    def where_called(self, caller: Any) -> tuple[str | None, str, SourceLine | None, str | None]:
        """``where``, and the ATen op the program called there when a graph's node says it (its target), else None."""
        node = self.node
        frame = caller
        while node is None and frame is not None and not _is_program_code(frame.f_code):
            if frame.f_code.co_filename.startswith("<eval_with_key>"):  # the code FX writes: a compiled graph's, maybe
                from neurondev.native.compiled_graphs import node_at

                node = node_at(frame)
            frame = frame.f_back
        if node is not None:
            return _node_place(node)
        frame = _program_frame(frame)
        if frame is None:  # autograd's own thread of the device runs a backward: the line that asked for it
            caller = _waiting_in_backward()
            frame = _program_frame(caller)
        if frame is None:
            return None, "", None, None
        return None, self._module_of(caller), _called(_line_of(frame.f_code, frame.f_lineno), frame), None

    def _module_of(self, frame: Any) -> str:
        """The innermost module of the model whose code is running from ``frame`` outwards (its dotted
        name when known, else its class)."""
        while frame is not None:
            owner = frame.f_locals.get("self")
            if isinstance(owner, torch.nn.Module):
                return self.modules.get(id(owner), type(owner).__name__)
            frame = frame.f_back
        return ""


_PLACES: weakref.WeakKeyDictionary[torch.fx.Node, tuple[str, str, SourceLine | None, str | None]] = weakref.WeakKeyDictionary()


def _node_place(node: torch.fx.Node) -> tuple[str, str, SourceLine | None, str | None]:
    """(name, module, line, the ATen op it calls) of a graph node, read from its meta once (a graph runs its nodes
    call after call)."""
    place = _PLACES.get(node)
    if place is None:
        place = _PLACES[node] = (node.name, module_path(node), source_of(node), _called_at(node))
    return place


def name_of(func: OpOverload) -> str:
    """An op as the dispatcher and a backend's log name it: 'aten::addmm' (aten.addmm.default), 'aten::addmm.out'."""
    schema = func._schema
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name


def _called_at(node: torch.fx.Node) -> str | None:
    """The ATen op a graph's node calls (``name_of`` its target), None when its target is no op overload."""
    return name_of(node.target) if isinstance(node.target, OpOverload) else None


def _program_frame(frame: Any) -> Any:
    """The innermost frame of the program's own code (the user's files and the libraries they call:
    not torch, not neurondev, not the standard library), or None."""
    while frame is not None:
        if _is_program_code(frame.f_code):
            return frame
        frame = frame.f_back
    return None


def _is_program_code(code: Any) -> bool:
    """The program's own code: not torch's, neurondev's, the standard library's, nor a graph FX wrote (``<eval_with_key>``).
    Cached by file name, not by code object: the code dynamo writes can hold a slice among its constants, and a code
    object with one cannot be hashed (TypeError in every event of a compiled ``x[:, mask]``)."""
    return _is_program_filename(code.co_filename)


@functools.lru_cache(maxsize=4096)
def _is_program_filename(filename: str) -> bool:
    return is_program_file(filename) and not filename.startswith("<eval_with_key>")


def _line_of(code: Any, line: int) -> SourceLine:
    return _source_line(code.co_filename, line, code.co_name)


@functools.lru_cache(maxsize=4096)
def _source_line(filename: str, line: int, function: str) -> SourceLine:
    return source_line(filename, line, function)


def _called(line: SourceLine, frame: Any) -> SourceLine:
    """``line`` with the user's line that called its function, when it is inside a helper the user's code called (a
    sync in ``def log_loss(loss): loss.item()`` is named with the loop's call of it)."""
    outer = frame.f_back  # the helper's caller itself: a frame of neurondev's or torch's between them is no program call
    if (
        frame.f_code.co_name == "<module>"
        or outer is None
        or not _is_program_code(outer.f_code)
        or not is_user_file(outer.f_code.co_filename)
    ):
        return line
    return _with_caller(line, _line_of(outer.f_code, outer.f_lineno).where)


@functools.lru_cache(maxsize=4096)
def _with_caller(line: SourceLine, caller: str) -> SourceLine:
    return dataclasses.replace(line, caller=caller)


def caller(depth: int) -> Any:
    """The frame ``depth`` levels above the caller's (``sys._getframe``), or None where the stack is shallower: on a
    thread torch runs (autograd's, for a device's backward) the Python stack is only the callback's own."""
    try:
        return sys._getframe(depth + 1)
    except ValueError:  # "call stack is not deep enough"
        return None


_BACKWARD = ("backward", "grad", "_engine_run_backward")  # where a thread waits while autograd's thread runs its backward


def _waiting_in_backward() -> Any:
    """The innermost frame of another thread that waits in autograd's backward (``loss.backward()``,
    ``torch.autograd.grad``) while the device's autograd thread runs it, or None."""
    me = threading.get_ident()
    for ident, frame in sys._current_frames().items():
        if ident == me:
            continue
        here: Any = frame
        while here is not None:
            code = here.f_code
            if code.co_name in _BACKWARD and f"torch{os.sep}autograd{os.sep}" in code.co_filename:
                return frame
            if code.co_name == "backward" and code.co_filename.endswith(f"torch{os.sep}_tensor.py"):
                return frame
            here = here.f_back
    return None
