"""Which accounting a native device gets: the dispatcher's observer (every device alike: Python only at events), or the
device's own log where it keeps one (``NEURONDEV_ACCOUNTING=log``: the host test device's, the reference the observer
is tested against)."""

from __future__ import annotations

import os
from typing import Any

from neurondev.errors import InvalidOptionError
from neurondev.native.events import DEVICE_LOGS

__all__ = ["ACCOUNTINGS", "accounting_for", "chosen"]

ACCOUNTINGS = ("observer", "log")


def chosen() -> str:
    """The accounting asked for (``NEURONDEV_ACCOUNTING``): 'observer' (the default) or 'log'."""
    asked = os.environ.get("NEURONDEV_ACCOUNTING", "observer").strip().lower() or "observer"
    if asked not in ACCOUNTINGS:
        raise InvalidOptionError(
            f"NEURONDEV_ACCOUNTING is 'observer' (the dispatcher's record of every op, on any device: the default) or 'log' "
            f"(the device's own log, where it keeps one: the host test device), got {asked!r}"
        )
    return asked


def accounting_for(device_type: str, *, modules: dict[int, str] | None = None) -> Any:
    """A new accounting of ``device_type``: over the dispatcher's observer, or over the device's own log when asked for
    and it keeps one."""
    from neurondev.native.logged import LoggedAccounting

    log = DEVICE_LOGS.get(device_type) if chosen() == "log" else None
    if log is None:
        from neurondev.native.observer import observer_for

        log = observer_for(device_type)
    return LoggedAccounting(device_type, log, modules=modules)
