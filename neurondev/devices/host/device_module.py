"""The Python device module of the host test device (``torch.hostdev``): what torch asks a PrivateUse1 backend's module."""

from __future__ import annotations

import types
from typing import Any

import torch

__all__ = [
    "Event",
    "Stream",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "get_amp_supported_dtype",
    "get_rng_state",
    "get_rng_state_all",
    "initial_seed",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "set_device",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stream",
    "synchronize",
]

# Its memory is host memory and its random ops run on the CPU's generator by default: the CPU's state is its state
# (a torch.Generator(device="hostdev") of your own has its own state, as on a real device).
_NAME = "hostdev"


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def _lazy_init() -> None:
    """Nothing to start: the device is ready once loaded."""


def _is_in_bad_fork() -> bool:
    return False


def device_count() -> int:
    return 1


def current_device() -> int:
    return 0


def _get_device_index(device: Any, optional: bool = False, allow_cpu: bool = False) -> int:
    """The index of ``device`` (a str, a torch.device, an int, or None for the current one); there is one: 0."""
    if device is None:
        return current_device()
    if isinstance(device, str):
        device = torch.device(device)
    index = device if isinstance(device, int) else device.index
    if isinstance(device, torch.device) and device.type != _NAME and not (allow_cpu and device.type == "cpu"):
        raise ValueError(f"expected a {_NAME} device, got {device}")
    if index is None:
        return current_device()
    if index != 0:
        raise RuntimeError(f"{_NAME} has one device, {_NAME}:0; got index {index}")
    return index


_utils = types.SimpleNamespace(_get_device_index=_get_device_index)  # where torch.serialization looks for it


def set_device(device: Any) -> None:
    """There is one device (index 0): another is refused."""
    _get_device_index(device)


class device:
    """The device context manager torch asks for (``with torch.hostdev.device(0):``); there is one device."""

    def __init__(self, device: Any) -> None:
        self.index = _get_device_index(device, optional=True)

    def __enter__(self) -> device:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def synchronize(device: object = None) -> None:
    """Every op finishes before it returns: nothing to wait for."""


def get_amp_supported_dtype() -> list[torch.dtype]:
    """The dtypes autocast may cast to on this device (its kernels are the CPU's: both half types run)."""
    return [torch.float16, torch.bfloat16]


def is_bf16_supported() -> bool:
    return True


def manual_seed(seed: int) -> None:
    torch.default_generator.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Called by ``torch.manual_seed`` (which has seeded the CPU's generator, the device's, already)."""
    torch.default_generator.manual_seed(seed)


def initial_seed() -> int:
    return torch.default_generator.initial_seed()


def seed() -> None:
    """A new random seed for the device's generator (the CPU's)."""
    torch.default_generator.seed()


def seed_all() -> None:
    """A new random seed for every device's generator: there is one."""
    seed()


def get_rng_state(device: object = "hostdev") -> torch.Tensor:
    return torch.default_generator.get_state()


def set_rng_state(state: torch.Tensor, device: object = "hostdev") -> None:
    torch.default_generator.set_state(state)


def get_rng_state_all() -> list[torch.Tensor]:
    """Each device's generator state, in device order: one."""
    return [get_rng_state()]


def set_rng_state_all(states: list[torch.Tensor]) -> None:
    """Set each device's generator state from ``states`` (one per device: one)."""
    if len(states) != device_count():
        raise ValueError(f"{_NAME} has {device_count()} device: give one state, got {len(states)}")
    set_rng_state(states[0])


# Streams and events, as FSDP2 and DTensor ask a device for them. Every op of this device finishes before it
# returns, so it has one stream (the default) and every event is complete when recorded: ordering is given.


def Stream(device: Any = None, priority: int = 0, **kwargs: Any) -> torch.Stream:  # noqa: N802  (a class to its callers)
    """A stream of the device (``torch.Stream``): the default one, the only one there is."""
    return torch.Stream(device=torch.device(_NAME, _get_device_index(device, optional=True)), priority=priority)


def Event(enable_timing: bool = False, **kwargs: Any) -> torch.Event:  # noqa: N802
    """An event of the device (``torch.Event``): complete as soon as it is recorded."""
    return torch.Event(device=torch.device(_NAME, 0), enable_timing=enable_timing)


def current_stream(device: Any = None) -> torch.Stream:
    return Stream(device)


def default_stream(device: Any = None) -> torch.Stream:
    return Stream(device)


def set_stream(stream: Any) -> None:
    """There is one stream: setting it changes nothing."""


class stream:  # noqa: N801  (torch's name: ``with torch.hostdev.stream(s):``)
    """The stream context manager; there is one stream."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def __enter__(self) -> Any:
        return self.stream

    def __exit__(self, *exc: object) -> None:
        return None
