"""torch_xla's counters: executions, compilations, transfers and CPU fallbacks, read as deltas and never reset."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

from neurondev._compat import increment_xla_counter
from neurondev.xla.runtime import load_torch_xla

__all__ = ["Counts", "counts", "keep_counters", "settle", "sync"]


def sync() -> None:
    """Execute the pending lazy graph and wait until every execution has finished (and been counted)."""
    torch_xla = load_torch_xla()
    torch_xla.sync()
    settle()


def settle() -> None:
    """Wait for this thread's device's in-flight work, so that its counters are recorded before they
    are read. Only this device: with a thread per device, waiting for a peer that is itself waiting
    for us in a collective would never end."""
    import torch_xla.core.xla_model as xm

    devices: list[Any] = [str(load_torch_xla().device())]
    xm.wait_device_ops(xm.xla_real_devices(devices))


# Counters torch_xla's dynamo bridge saves and restores itself around its clear_counters().
_RESTORED_BY_THE_BRIDGE = frozenset({"DynamoExtractCompiledGraph", "UncachedCompile"})


@contextlib.contextmanager
def keep_counters() -> Iterator[None]:
    """Give the user's torch_xla counters back if the block clears them.

    torch_xla's dynamo bridge (the openxla backend) calls ``metrics.clear_counters()`` for every
    node it probes; inside this block that would wipe the user's counts. After it, every counter
    that was cleared gets its earlier value added back.
    """
    import torch_xla.debug.metrics as metrics

    saved = {name: metrics.counter_value(name) or 0 for name in metrics.counter_names()}
    try:
        yield
    finally:
        now = {name: metrics.counter_value(name) or 0 for name in saved}
        if any(now[name] < value for name, value in saved.items()):
            for name, value in saved.items():
                if name not in _RESTORED_BY_THE_BRIDGE and value:
                    increment_xla_counter(name, value)


@dataclasses.dataclass(frozen=True)
class Counts:
    """torch_xla's cumulative counters at one moment; subtract two for what happened in between."""

    executions: int = 0
    compilations: int = 0
    transfers_to_host: int = 0
    transfers_to_device: int = 0
    fallbacks: tuple[tuple[str, int], ...] = ()

    def __sub__(self, other: Counts) -> Counts:
        earlier = dict(other.fallbacks)
        fallbacks = tuple((op, n - earlier.get(op, 0)) for op, n in self.fallbacks if n - earlier.get(op, 0))
        return Counts(
            self.executions - other.executions,
            self.compilations - other.compilations,
            self.transfers_to_host - other.transfers_to_host,
            self.transfers_to_device - other.transfers_to_device,
            fallbacks,
        )

    @property
    def forced(self) -> bool:
        """True when an execution or a device-to-host transfer happened: a break in the lazy graph."""
        return self.executions > 0 or self.transfers_to_host > 0


def counts() -> Counts:
    """Read torch_xla.debug.metrics now (never cleared: the user's own figures stay as they are)."""
    import torch_xla.debug.metrics as metrics

    def samples(name: str) -> int:
        data = metrics.metric_data(name)
        return int(data[0]) if data else 0

    fallbacks = tuple((name, int(metrics.counter_value(name))) for name in metrics.counter_names() if name.startswith("aten::"))
    return Counts(
        samples("ExecuteTime"),
        samples("CompileTime"),
        samples("TransferFromDeviceTime"),
        samples("TransferToDeviceTime"),
        fallbacks,
    )
