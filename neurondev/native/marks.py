"""What a device copy is part of: a collective, when a process group moves device tensors through the host."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

__all__ = ["collective", "current_collective"]

_local = threading.local()


@contextlib.contextmanager
def collective(name: str) -> Iterator[None]:
    """The copies made inside are ``name``'s (``c10d::allreduce``): counted as copies, and said to be the collective's
    (the devices that keep their own log are told too)."""
    from neurondev.native.events import DEVICE_LOGS

    outer = getattr(_local, "name", None)
    _local.name = name
    for log in DEVICE_LOGS.values():
        log.set_collective(name)
    try:
        yield
    finally:
        _local.name = outer
        for log in DEVICE_LOGS.values():
            log.set_collective(outer or "")


def current_collective() -> str | None:
    """The collective running on this thread (None: none)."""
    return getattr(_local, "name", None)
