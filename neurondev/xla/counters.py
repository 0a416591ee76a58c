"""torch_xla's counters: executions, compilations, transfers and CPU fallbacks, read as deltas and never reset."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from neurondev._compat.torch_xla_hooks import patched_xla_counter_increment
from neurondev.runs.counts import Counts
from neurondev.xla.runtime import load_torch_xla

__all__ = ["TIMED", "Counts", "counts", "keep_counters", "samples_between", "settle", "sync"]


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


# Counters the bridge saves before its clear_counters() and adds back after it.
_RESTORED_BY_THE_BRIDGE = frozenset({"DynamoExtractCompiledGraph", "UncachedCompile"})


@contextlib.contextmanager
def keep_counters() -> Iterator[None]:
    """Inside the block torch_xla's dynamo bridge (the openxla backend) clears no counter.

    To learn which ops of one FX node fall back to the CPU, the bridge calls
    ``metrics.clear_counters()`` before each node it probes and ``metrics.executed_fallback_ops()``
    after it, then adds back two counters of its own. Clearing would wipe the user's counts, and
    adding a value back cannot mend it: ``_xla_increment_counter`` keeps its own counter beside a
    fallback counter of the same name, so later fallbacks would no longer show. Inside this block
    the clearing is virtual instead: the counters stay as they are, the fallback ops the bridge
    asks for are the ones counted since its last "clear", and its adding back is skipped.
    """
    from unittest import mock

    import torch_xla.debug.metrics as metrics

    since: dict[str, int] = {}
    pending: set[str] = set()

    def clear() -> None:
        since.clear()
        since.update(_fallback_counts())
        pending.clear()
        pending.update(_RESTORED_BY_THE_BRIDGE)

    def executed() -> list[str]:
        return [name for name, value in _fallback_counts().items() if value > since.get(name, 0)]

    def counting(increment: Callable[[str, int], None]) -> Callable[[str, int], None]:
        def add(name: str, value: int) -> None:
            if name in pending:  # the bridge giving back what a real clear would have taken
                pending.discard(name)
                return
            increment(name, value)

        return add

    with (
        mock.patch.object(metrics, "clear_counters", clear),
        mock.patch.object(metrics, "executed_fallback_ops", executed),
        patched_xla_counter_increment(counting),
    ):
        yield


def _fallback_counts() -> dict[str, int]:
    """The counters of ops that ran on the CPU (``aten::histc``: how many times)."""
    import torch_xla.debug.metrics as metrics

    return {name: int(metrics.counter_value(name) or 0) for name in metrics.counter_names() if name.startswith("aten::")}


def counts() -> Counts:
    """Read torch_xla.debug.metrics now (never cleared: the user's own figures stay as they are); each metric read once
    (a read copies its latest samples too: this runs at every node of a measured graph and every step of a watch)."""
    import torch_xla.debug.metrics as metrics

    read = {name: metrics.metric_data(name) for name in ("ExecuteTime", "CompileTime", "TransferFromDeviceTime", "TransferToDeviceTime")}

    def samples(name: str) -> int:
        return int(read[name][0]) if read[name] else 0

    def seconds(name: str) -> float:
        return float(read[name][1]) / 1e9 if read[name] else 0.0

    fallbacks = tuple((name, int(metrics.counter_value(name))) for name in metrics.counter_names() if name.startswith("aten::"))
    return Counts(
        samples("ExecuteTime"),
        samples("CompileTime"),
        samples("TransferFromDeviceTime"),
        samples("TransferToDeviceTime"),
        fallbacks,
        compile_seconds=seconds("CompileTime"),
        cached_compiles=int(metrics.counter_value("CachedCompile") or 0),
        execute_seconds=seconds("ExecuteTime"),
        transfer_seconds=seconds("TransferFromDeviceTime"),
    )


TIMED = {"CompileTime": "XLA compile", "ExecuteTime": "XLA execution", "TransferFromDeviceTime": "transfer to host"}


def samples_between(start: float, end: float) -> tuple[tuple[str, float, float], ...]:
    """torch_xla's own samples of its compiles, executions and transfers to the host that ended between ``start`` and
    ``end`` (seconds since the epoch): (what, when it ended, seconds), in time order. torch_xla keeps the latest
    samples of each metric only (a long run's earliest are gone; its totals stay whole)."""
    import torch_xla.debug.metrics as metrics

    found = []
    for name, what in TIMED.items():
        data = metrics.metric_data(name)
        for when, nanoseconds in data[2] if data else ():
            if start <= when <= end:
                found.append((what, float(when), float(nanoseconds) / 1e9))
    return tuple(sorted(found, key=lambda sample: sample[1]))
