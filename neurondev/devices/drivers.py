"""The driver of a target device: XLA's for ``xla``, the native one for the PrivateUse1 backend's device."""

from __future__ import annotations

import torch

from neurondev.errors import DeviceUnavailableError
from neurondev.runs.interface import Driver

__all__ = ["driver_for", "stack_of"]


def stack_of(target: torch.device) -> str:
    """'xla' for an XLA device, 'native' for the PrivateUse1 backend's device; DeviceUnavailableError otherwise."""
    if target.type == "xla":
        return "xla"
    if target.type == torch._C._get_privateuse1_backend_name() and target.type != "privateuseone":
        return "native"
    raise DeviceUnavailableError(
        f"neurondev runs on XLA devices and on the native (PrivateUse1) device loaded in this process; {target} is neither: "
        "pass target='xla', or a native device such as 'neuron' (TorchNeuron) or 'hostdev' (the host test device)"
    )


def driver_for(target: torch.device) -> Driver:
    """The driver that runs on ``target``'s stack."""
    if stack_of(target) == "xla":
        from neurondev.xla.driver import XlaDriver

        return XlaDriver()
    from neurondev.native.device import NativeDriver

    indexed = target if target.index is not None else torch.device(target.type, 0)
    return NativeDriver(indexed)
