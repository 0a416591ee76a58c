"""The Python device module of the host test device (``torch.hostdev``): what torch asks a PrivateUse1 backend's module."""

from __future__ import annotations

import torch

__all__ = [
    "current_device",
    "device_count",
    "get_rng_state",
    "is_available",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "set_rng_state",
    "synchronize",
]

# Its memory is host memory and its random ops run on the CPU's generator: the CPU's state is its state.


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


def set_device(device: object) -> None:
    """There is one device (index 0)."""


def synchronize(device: object = None) -> None:
    """Every op finishes before it returns: nothing to wait for."""


def manual_seed(seed: int) -> None:
    torch.default_generator.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Called by ``torch.manual_seed`` (which has seeded the CPU's generator, the device's, already)."""
    torch.default_generator.manual_seed(seed)


def get_rng_state(device: object = "hostdev") -> torch.Tensor:
    return torch.default_generator.get_state()


def set_rng_state(state: torch.Tensor, device: object = "hostdev") -> None:
    torch.default_generator.set_state(state)
