"""The XLA side: the runtime and its counters, runs of one graph, value comparison, native traces.

``neurondev.xla.device()``, ``describe()``, ``to_device()``, ``counts()``, ``sync()`` are the
runtime's and the counters' own functions, re-exported here.
"""

from neurondev.runs.counts import Counts
from neurondev.xla.counters import counts, keep_counters, settle, sync
from neurondev.xla.runtime import (
    RuntimeChoice,
    choose_runtime,
    describe,
    device,
    device_count,
    load_torch_xla,
    planned_runtime,
    to_device,
)

__all__ = [
    "Counts",
    "RuntimeChoice",
    "choose_runtime",
    "counts",
    "describe",
    "device",
    "device_count",
    "keep_counters",
    "load_torch_xla",
    "planned_runtime",
    "settle",
    "sync",
    "to_device",
]
