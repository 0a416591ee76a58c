"""What explain's copies of its inputs will take, said before it is spent (a LargeInputWarning)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from neurondev._compat.fx_internals import tree_leaves
from neurondev.errors import LargeInputWarning, warn_user

__all__ = ["PEAK_PER_INPUT_BYTE", "WARN_ABOVE", "input_bytes", "say_input_memory"]

# explain's peak memory above the process's baseline, per byte of input: benchmarks/bench_explain.py --only memory
# (a float32 input of 10^7 elements with an output of its size, on XLA: about 16x; an int64 input with a float32 output: 11x)
PEAK_PER_INPUT_BYTE = 16
WARN_ABOVE = 1 << 30  # bytes of that peak: under it nothing is said


def input_bytes(fn: Callable[..., Any], args: tuple, kwargs: dict) -> int:
    """Bytes of the tensors explain copies: the inputs' and, for a module, its parameters and buffers (each storage
    once; a meta tensor holds none)."""
    tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    module = fn if isinstance(fn, torch.nn.Module) else getattr(fn, "__self__", None)
    if isinstance(module, torch.nn.Module):
        tensors += [*module.parameters(), *module.buffers()]
    storages = dict(_storage(tensor) for tensor in tensors if tensor.device.type != "meta" and tensor.layout == torch.strided)
    return sum(storages.values())


def _storage(tensor: torch.Tensor) -> tuple[tuple[str, int], int]:
    """(a key per storage, its bytes): its device and address; a tensor whose storage cannot be read here (a wrapper
    subclass, a device's own tensor: XLA's) is a storage of its own, its bytes its elements'."""
    try:
        storage = tensor.untyped_storage()
        return (tensor.device.type, storage.data_ptr()), storage.nbytes()
    except (RuntimeError, NotImplementedError):
        return ("object", id(tensor)), tensor.nbytes


def say_input_memory(fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
    """A LargeInputWarning before anything is copied when explain's peak would pass ``WARN_ABOVE`` or half of the
    memory this machine has free."""
    size = input_bytes(fn, args, kwargs)
    needed = size * PEAK_PER_INPUT_BYTE
    free = _available()
    if needed < WARN_ABOVE and (free is None or needed < free / 2):
        return
    short = f", more than the {_gb(free)} this machine has free" if free is not None and needed > free else ""
    warn_user(
        f"the inputs hold {_mb(size)}: explain copies them for each run and needs about {PEAK_PER_INPUT_BYTE}x that at its "
        f"peak ({_gb(needed)}{short}). The pins and the fixes do not depend on the inputs' size: explain a smaller input "
        "of the same dtype and rank (e.g. 1/100 of each dimension that may change)",
        LargeInputWarning,
    )


def _available() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), in bytes; None elsewhere."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def _gb(size: int | None) -> str:
    return f"{(size or 0) / 1e9:.1f} GB"
