"""Which accounting a native device gets: its own log where it keeps one (Python runs only at events), else the
dispatch mode (Python at every op); ``NEURONDEV_ACCOUNTING=mode`` asks for the mode on any device."""

from __future__ import annotations

import os
from typing import Any

from neurondev.errors import InvalidOptionError
from neurondev.native.events import DEVICE_LOGS

__all__ = ["ACCOUNTINGS", "accounting_for", "chosen"]

ACCOUNTINGS = ("log", "mode")


def chosen() -> str:
    """The accounting asked for (``NEURONDEV_ACCOUNTING``): 'log' (the default: the device's log where it has one) or 'mode'."""
    asked = os.environ.get("NEURONDEV_ACCOUNTING", "log").strip().lower() or "log"
    if asked not in ACCOUNTINGS:
        raise InvalidOptionError(
            f"NEURONDEV_ACCOUNTING is 'log' (the device's own log, where it keeps one: the default) or 'mode' (a dispatch mode "
            f"that sees every op), got {asked!r}"
        )
    return asked


def accounting_for(device_type: str, *, modules: dict[int, str] | None = None) -> Any:
    """A new accounting of ``device_type``: a LoggedAccounting over its log, or the dispatch mode's Accounting."""
    log = DEVICE_LOGS.get(device_type)
    if log is not None and chosen() == "log":
        from neurondev.native.logged import LoggedAccounting

        return LoggedAccounting(device_type, log, modules=modules)
    from neurondev.native.accounting import Accounting

    return Accounting(device_type, modules=modules)
