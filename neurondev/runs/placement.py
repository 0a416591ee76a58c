"""Inputs for a run: copies on the run's device (the caller's tensors are never handed on)."""

from __future__ import annotations

from typing import Any

import torch

from neurondev._compat.fx_internals import keystr, tree_flatten_with_path, tree_unflatten
from neurondev.errors import XlaInputError

__all__ = ["to_device"]


def to_device(inputs: tuple | list, target: torch.device) -> list[Any]:
    """Copies of the inputs (nested lists/tuples/dicts too) on ``target``; the caller's tensors are
    never handed on, even when already there. XlaInputError names an input that cannot move."""
    leaves, spec = tree_flatten_with_path(list(inputs))
    return tree_unflatten([_moved(value, keystr(path), target) for path, value in leaves], spec)


def _moved(value: Any, path: str, target: torch.device) -> Any:
    if not isinstance(value, torch.Tensor):
        return value
    try:
        copied = value.detach().to(target, copy=True)  # a copy even on the same device: graphs write to inputs
    except Exception as error:
        raise XlaInputError(
            f"input{path} ({value.dtype}, {value.layout}, on {value.device}) cannot move to {target}: {error}. "
            "Pass dense tensors with data (not meta) of a dtype the device supports"
        ) from error
    return copied
