"""The native driver of the run layer: a PrivateUse1 device (TorchNeuron's ``neuron``, the host test device), measured at dispatch."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
import torch.fx

from neurondev.native.choice import accounting_for
from neurondev.native.events import DeviceEvent, active_for
from neurondev.runs.counts import Counts
from neurondev.runs.run_records import Fallback, HostCopy, Seen, Upload

__all__ = ["NativeDriver", "grouped"]

# Devices whose backend compiles programs itself: the program as written goes through it.
_OWN_BACKENDS = {"neuron": "neuron"}
_HOST_DEVICE = "hostdev"


class NativeDriver:
    """Runs on ``device``, a device of the PrivateUse1 backend loaded in this process (or CUDA); what it costs is counted
    by its accounting (copies, syncs, fallbacks with their lines): the dispatcher's observer, or the device's own log
    where asked for (``native.choice``)."""

    stack = "native"

    def __init__(self, device: torch.device) -> None:
        self._device = device
        self.accounting = accounting_for(device.type)
        self.program_label = _OWN_BACKENDS.get(device.type, "aot_autograd")
        shares = device.type == _HOST_DEVICE  # the host test device draws from the CPU's generator
        self.own_generator: str | None = None if shares else device.type

    def device(self) -> torch.device:
        return self._device

    def describe(self) -> Mapping[str, str]:
        return {
            "runtime": "native",
            "device": str(self._device),
            "backend": self._device.type,
            "torch": torch.__version__,
        }

    def counts(self) -> Counts:
        return self._counting().counts()

    def settle(self) -> None:
        module = getattr(torch, self._device.type, None)
        synchronize = getattr(module, "synchronize", None)
        if callable(synchronize):
            synchronize()

    def sync(self) -> None:
        self.settle()

    def seed(self, seed: int) -> None:
        torch.manual_seed(seed)  # the CPU's generator and every device's (torch seeds a PrivateUse1 backend's too)

    # The accounting stays on around compiled code and sees what runs between its graphs (the observer, a device's log:
    # no dispatch mode, which would make dynamo compile again), so a call of compiled code is counted as it runs.
    sees_between_graphs = True
    needs_counting_call = False

    @contextlib.contextmanager
    def measuring(self, *, compiled: bool = False, whole: bool = False) -> Iterator[Any]:
        """The accounting on around what runs inside. An accounting of this device already on (a watch's, or
        the one of the run that called this compiled code) counts it instead: a second one on top of it would
        take the ops from it. Around compiled code only where it sees between graphs, or when asked to count
        a call ``whole``."""
        active = self._active()
        if active is not None or (compiled and not whole and not self.sees_between_graphs):
            yield self._counting()
            return
        with self.accounting:
            yield self.accounting

    @contextlib.contextmanager
    def at_node(self, node: torch.fx.Node) -> Iterator[None]:
        accounting = self._counting()
        outer, accounting.node = accounting.node, node
        try:
            yield
        finally:
            accounting.node = outer

    def _counting(self) -> Any:
        """The accounting that counts what runs now: one of this device already on (a watch's), else the driver's own."""
        return self._active() or self.accounting

    def _active(self) -> Any:
        """The innermost accounting of this device that is on, if any."""
        return active_for(self._device.type)

    def mark(self) -> int:
        return len(self._counting().events)

    def located_since(self, mark: int) -> Seen:
        return grouped(self._counting().events[mark:])

    def unseen(self) -> str | None:
        """The compiler whose graphs a program run cannot see into (TorchNeuron's: inside them, ops do not pass the
        dispatcher one by one), None when every op is seen. A call is otherwise counted whole (torch 2.9: by a call of its own)."""
        return _OWN_BACKENDS.get(self._device.type)

    def program_backend(self) -> Callable[..., Any]:
        own = _OWN_BACKENDS.get(self._device.type)
        if own is not None:
            from neurondev._compat.dynamo import lookup_backend

            return lookup_backend(own)
        from neurondev.native.compiled_graphs import graph_backend

        return graph_backend(self)


def grouped(events: list[DeviceEvent]) -> Seen:
    """Events by line: copies to the host and syncs as HostCopy, copies to the device as Upload, fallbacks as
    Fallback (op, calls, bytes)."""
    copies: dict[tuple[Any, ...], list[DeviceEvent]] = {}
    uploads: dict[tuple[Any, ...], list[DeviceEvent]] = {}
    fallbacks: dict[tuple[Any, ...], list[DeviceEvent]] = {}
    for event in events:
        if event.kind in ("copy to host", "sync"):
            copies.setdefault((event.node, event.file, event.line, event.collective), []).append(event)
        elif event.kind == "copy to device":
            uploads.setdefault((event.node, event.file, event.line, event.collective), []).append(event)
        elif event.kind == "fallback":
            fallbacks.setdefault((event.op, event.called, event.node, event.module, event.file, event.line), []).append(event)
    return Seen(
        tuple(_host_copy(group) for group in copies.values()),
        tuple(_upload(group) for group in uploads.values()),
        tuple(_fallback(group) for group in fallbacks.values()),
    )


def _host_copy(group: list[DeviceEvent]) -> HostCopy:
    first = group[0]
    copies = [e for e in group if e.kind == "copy to host"]
    return HostCopy(
        first.node or "",
        first.op,
        len(copies),
        len(group) - len(copies),
        sum(e.bytes for e in copies),
        first.source,
        first.module,
        first.collective,
    )


def _upload(group: list[DeviceEvent]) -> Upload:
    first = group[0]
    return Upload(first.node or "", first.op, len(group), first.source, sum(e.bytes for e in group), first.module, first.collective)


def _fallback(group: list[DeviceEvent]) -> Fallback:
    first = group[0]
    return Fallback(first.op, len(group), sum(e.bytes for e in group), first.node, first.module, first.source, first.called)
