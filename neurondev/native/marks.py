"""What a device copy is part of: a collective, when a process group moves device tensors through the host."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["collective", "current_collective"]

_local = threading.local()


@contextlib.contextmanager
def collective(name: str) -> Iterator[None]:
    """The copies made inside are ``name``'s (``c10d::allreduce``): counted as copies, and said to be the collective's
    (the dispatcher's observer and the devices that keep their own log are told too)."""
    outer = getattr(_local, "name", None)
    _local.name = name
    for record in _records():
        record.set_collective(name)
    try:
        yield
    finally:
        _local.name = outer
        for record in _records():
            record.set_collective(outer or "")


def _records() -> list[Any]:
    """The records kept in C++ that count copies: the devices' own logs, and the observer once loaded."""
    from neurondev.native import observer
    from neurondev.native.events import DEVICE_LOGS

    loaded = observer.loaded()
    return [*DEVICE_LOGS.values(), *([loaded] if loaded is not None else [])]


def current_collective() -> str | None:
    """The collective running on this thread (None: none)."""
    return getattr(_local, "name", None)
