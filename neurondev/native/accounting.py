"""Dispatch-level accounting on a native device: every copy across devices, every sync and every CPU fallback, with the line.

A ``TorchDispatchMode`` sees each ATen op on its way to the backend. Copies are ``_to_copy`` / ``copy_``
between the device and the host (and ``lift_fresh``: ``torch.tensor([...], device=...)`` builds on the host
and uploads), syncs are host reads of a device value (``_local_scalar_dense``: ``.item()``, ``bool(x)``),
and a fallback is an op the backend has no kernel for (``neurondev.native.fallbacks``), whose inputs go
to the host and whose results come back. Each is attributed to the graph node running it (an
interpreter sets ``node``) or else to the innermost line of the program's code on the Python stack.
The mode says it ignores compile internals: compiled frames still compile under it (a plain mode would
make dynamo run them eagerly), and what their graphs run is seen too.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import threading
from collections.abc import Iterator
from typing import Any

import torch
import torch.fx
from torch.utils._python_dispatch import TorchDispatchMode

from neurondev._compat import OpOverload
from neurondev.fx.modules import module_path
from neurondev.native.fallbacks import generation as fallbacks_generation
from neurondev.native.fallbacks import host_op, name_of
from neurondev.runs.counts import Counts
from neurondev.trace.source import Located, SourceLine, is_program_file, source_line, source_of

__all__ = ["Accounting", "DeviceEvent", "EVENT_KINDS"]

EVENT_KINDS = ("copy to host", "copy to device", "sync", "fallback")

_aten = torch.ops.aten
_COPY, _LIFT, _SYNC, _FALLBACK = "copy", "lift", "sync", "fallback"
_KINDS = {
    _aten._to_copy.default: _COPY,
    _aten.copy_.default: _COPY,
    _aten.lift_fresh.default: _LIFT,
    _aten._local_scalar_dense.default: _SYNC,
    _aten.equal.default: _SYNC,
}


@dataclasses.dataclass(frozen=True)
class DeviceEvent(Located):
    """One thing a native device did that costs the program: ``kind`` (one of ``EVENT_KINDS``), the ATen
    op (``aten::addmm``; for a fallback ``runs_as`` is the op the backend ran on the host, its out form),
    the bytes it moved, the graph node and module it happened in, and the line."""

    kind: str
    op: str
    bytes: int
    node: str | None = None
    module: str = ""
    source: SourceLine | None = None
    runs_as: str | None = None


class Accounting(TorchDispatchMode):
    """Counts what the program does on device type ``device_type`` while the mode is on; ``events``
    lists each event, ``counts()`` reads the cumulative totals (subtract two readings)."""

    def __init__(self, device_type: str, *, modules: dict[int, str] | None = None) -> None:
        super().__init__()
        self.device_type = device_type
        self.modules = dict(modules or {})  # id(nn.Module) -> its dotted name in the model
        self.events: list[DeviceEvent] = []
        self.node: torch.fx.Node | None = None
        self._lock = threading.Lock()
        self._totals = _Totals()

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return True

    def counts(self) -> Counts:
        with self._lock:
            return self._totals.reading()

    def __torch_dispatch__(self, func: OpOverload, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        route = _route(func)  # one lookup per op: most ops cost the device nothing to account for
        if route is None:
            return out
        kind, runs_as = route
        if kind is _COPY:
            self._copy(func, args, out)
        elif kind is _LIFT:
            if self._on_device(out):
                self._add("copy to device", func, _nbytes(out))
        elif kind is _SYNC:
            if self._any_on_device(args):
                self._add("sync", func, 0)
        elif self._any_on_device(args) or self._any_on_device(kwargs.values()):
            self._fallback(func, runs_as or "", args, kwargs, out)
        return out

    # --- what each kind costs ------------------------------------------------------------------
    def _copy(self, func: OpOverload, args: tuple, out: Any) -> None:
        source, destination = (args[0], out) if func is _aten._to_copy.default else (args[1], args[0])
        if not isinstance(source, torch.Tensor) or not isinstance(destination, torch.Tensor):
            return
        there, here = self._on_device(source), self._on_device(destination)
        if there and destination.device.type == "cpu":
            self._add("copy to host", func, _nbytes(source))
        elif here and source.device.type == "cpu" and source.dim() > 0:
            self._add("copy to device", func, _nbytes(source))

    def _fallback(self, func: OpOverload, runs_as: str, args: tuple, kwargs: dict, out: Any) -> None:
        """cpu_fallback copies every device tensor argument to the host (the out tensor too, when the
        op runs as its out form) and the results back."""
        inputs = sum(_nbytes(t) for t in self._device_tensors(args)) + sum(_nbytes(t) for t in self._device_tensors(kwargs.values()))
        outputs = sum(_nbytes(t) for t in self._device_tensors(out if isinstance(out, (tuple, list)) else (out,)))
        through_out = runs_as != name_of(func)
        self._add("fallback", func, inputs + outputs * (2 if through_out else 1), runs_as=runs_as)

    def _add(self, kind: str, func: OpOverload, nbytes: int, *, runs_as: str | None = None) -> None:
        node, module, source = self._where()
        event = DeviceEvent(kind, name_of(func), nbytes, node, module, source, runs_as)
        with self._lock:
            self.events.append(event)
            self._totals.add(event)

    # --- where it happened ---------------------------------------------------------------------
    def _where(self) -> tuple[str | None, str, SourceLine | None]:
        node = self.node
        if node is not None:
            return node.name, module_path(node), source_of(node)
        caller = sys._getframe(2)
        frame = _program_frame(caller)
        if frame is None:
            return None, "", None
        return None, self._module_of(caller), _line_of(frame.f_code, frame.f_lineno)

    def _module_of(self, frame: Any) -> str:
        """The innermost module of the model whose code is running from ``frame`` outwards (its dotted
        name when known, else its class)."""
        while frame is not None:
            owner = frame.f_locals.get("self")
            if isinstance(owner, torch.nn.Module):
                return self.modules.get(id(owner), type(owner).__name__)
            frame = frame.f_back
        return ""

    # --- which tensors are on the device -------------------------------------------------------
    def _on_device(self, value: Any) -> bool:
        return isinstance(value, torch.Tensor) and value.device.type == self.device_type

    def _device_tensors(self, values: Any) -> Iterator[torch.Tensor]:
        """The device tensors among an op's arguments (ATen arguments are tensors, lists of tensors or plain values)."""
        for value in values:
            if isinstance(value, (list, tuple)):
                yield from (item for item in value if self._on_device(item))
            elif self._on_device(value):
                yield value

    def _any_on_device(self, values: Any) -> bool:
        return next(self._device_tensors(values), None) is not None


class _Totals:
    """The running sums behind ``Accounting.counts()``."""

    def __init__(self) -> None:
        self.to_host = self.to_device = self.bytes_to_host = self.bytes_to_device = self.syncs = self.fallback_bytes = 0
        self.fallbacks: dict[str, int] = {}

    def add(self, event: DeviceEvent) -> None:
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
        )


def _nbytes(tensor: Any) -> int:
    return int(tensor.numel() * tensor.element_size()) if isinstance(tensor, torch.Tensor) else 0


def _route(func: OpOverload) -> tuple[str, str | None] | None:
    """What an op costs on the device, decided once per op (and again after ``fallbacks.forget()``):
    (kind, the host op a fallback runs as), or None for an op that runs on the device."""
    routes = _ROUTES.get(fallbacks_generation())
    if routes is None:
        _ROUTES.clear()
        routes = _ROUTES[fallbacks_generation()] = {}
    try:
        return routes[func]
    except KeyError:
        kind = _KINDS.get(func)
        runs_as = None if kind is not None else host_op(func)
        route = (kind, None) if kind is not None else (_FALLBACK, runs_as) if runs_as is not None else None
        routes[func] = route
        return route


_ROUTES: dict[int, dict[OpOverload, tuple[str, str | None] | None]] = {}


def _program_frame(frame: Any) -> Any:
    """The innermost frame of the program's own code (the user's files and the libraries they call:
    not torch, not neurondev, not the standard library), or None."""
    while frame is not None:
        if _is_program_code(frame.f_code):
            return frame
        frame = frame.f_back
    return None


@functools.lru_cache(maxsize=4096)
def _is_program_code(code: Any) -> bool:
    return is_program_file(code.co_filename)


@functools.lru_cache(maxsize=4096)
def _line_of(code: Any, line: int) -> SourceLine:
    return source_line(code.co_filename, line, code.co_name)
