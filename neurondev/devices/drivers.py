"""The driver of a target device: XLA's for ``xla``, the native one for a PrivateUse1 backend's device."""

from __future__ import annotations

import torch

from neurondev.errors import DeviceUnavailableError
from neurondev.runs.interface import Driver

__all__ = ["driver_for"]


def driver_for(target: torch.device) -> Driver:
    """The driver that runs on ``target``'s stack (its device type)."""
    if target.type == "xla":
        from neurondev.xla.driver import XlaDriver

        return XlaDriver()
    raise DeviceUnavailableError(f"neurondev runs on XLA devices and on native (PrivateUse1) devices; {target} is neither")
