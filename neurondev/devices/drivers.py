"""The driver of a target device: XLA's for ``xla``, the native one for the PrivateUse1 backend's device."""

from __future__ import annotations

import torch

from neurondev._compat.out_of_tree import privateuse1_name
from neurondev.errors import DeviceUnavailableError
from neurondev.runs.interface import Driver

__all__ = ["driver_for", "native_device_count", "stack_of"]


def stack_of(target: torch.device) -> str:
    """'xla' for an XLA device, 'native' for the PrivateUse1 backend's device or a CUDA device torch sees here;
    DeviceUnavailableError otherwise."""
    if target.type == "xla":
        return "xla"
    if target.type == privateuse1_name() and target.type != "privateuseone":
        return "native"
    if target.type == "cuda" and torch.cuda.is_available():
        return "native"
    if target.type == "cuda":
        raise DeviceUnavailableError("torch sees no CUDA device here (torch.cuda.is_available() is False): run on a machine with one")
    raise DeviceUnavailableError(
        f"neurondev runs on XLA devices, on the native (PrivateUse1) device loaded in this process and on CUDA; {target} is none of "
        "them: pass target='xla', or a native device such as 'neuron' (TorchNeuron), 'hostdev' (the host test device) or 'cuda'"
    )


def native_device_count(device_type: str) -> int | None:
    """How many devices of a native type this process has (its device module's ``device_count()``), None when it cannot say."""
    module = getattr(torch, device_type, None)
    count = getattr(module, "device_count", None)
    return int(count()) if callable(count) else None


def driver_for(target: torch.device) -> Driver:
    """The driver that runs on ``target``'s stack."""
    if stack_of(target) == "xla":
        from neurondev.xla.driver import XlaDriver

        return XlaDriver()
    from neurondev.native.device import NativeDriver

    indexed = target if target.index is not None else torch.device(target.type, 0)
    return NativeDriver(indexed)
