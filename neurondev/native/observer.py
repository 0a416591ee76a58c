"""The dispatcher's observer: one accounting for every native device (CUDA, TorchNeuron's ``neuron``, any PrivateUse1
backend, the host test device), read from PyTorch's own record of each op.

A small C++ extension (``csrc/observer.cpp``, built once per torch into the cache, as the host device is) registers a
``RecordFunction`` callback, the one torch.profiler uses: each op the dispatcher runs, on every backend, is reported to
it with its inputs. It counts in C++ each fallback (``aten::_to_cpu`` beneath an op on the device), each copy across
the device's boundary (the outermost copy op, its direction and bytes) and each sync (the innermost op on the device
that handed the host a value or a size), and calls Python only at an event, for its line. It never intercepts or
dispatches an op, so it cannot change a value. It has the interface of a device's own log (``native.logged`` reads
both alike); the host device's own log stays the reference it is tested against (``NEURONDEV_ACCOUNTING=log``).
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any

from neurondev._build import CppExtension
from neurondev.errors import ObserverError

__all__ = ["Observer", "loaded", "observer_for", "observer_module"]

_SOURCE = Path(__file__).resolve().parent / "csrc" / "observer.cpp"
_lock = threading.Lock()
_loaded: list[Any] = []


def _extension() -> CppExtension:
    return CppExtension(
        "neurondev_observer", "observer", (_SOURCE,), _SOURCE.name, "the dispatcher's observer", ObserverError, ("-O2", "-DNDEBUG")
    )


def observer_module() -> Any:
    """The compiled observer (built the first time, under a minute; cached after), loaded once per process."""
    with _lock:
        if not _loaded:
            _loaded.append(_extension().load())
        return _loaded[0]


def loaded() -> Any:
    """The observer when this process has loaded it, else None (never builds it)."""
    return _loaded[0] if _loaded else None


class Observer:
    """The observer as device ``device_type``'s log (``observe``, ``attribute``, ``graph_running``,
    ``observed_totals``, ``set_collective``): it counts that device's costs while observing."""

    def __init__(self, device_type: str) -> None:
        self.device_type = device_type
        self.module = observer_module()

    def observe(self, callback: Any) -> None:
        if callback is not None:
            self.module.watch(self.device_type)
        self.module.observe(callback)

    def attribute(self, on: bool) -> None:
        self.module.attribute(on)

    def graph_running(self, begins: bool) -> None:
        self.module.graph_running(begins)

    def observed_totals(self) -> Any:
        return self.module.observed_totals()

    def set_collective(self, name: str) -> None:
        self.module.set_collective(name)


@functools.cache
def observer_for(device_type: str) -> Observer:
    """The observer, counting ``device_type``'s costs while on (one per device type: the accountings on the same record
    nest; one device type is observed at a time)."""
    return Observer(device_type)
