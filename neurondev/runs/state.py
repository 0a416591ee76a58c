"""The state a program leaves besides what it returns: its inputs as it left them, its module's buffers and plain
tensor attributes, and the tensors in the globals of its code, on the host, for a comparison with CPU."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import torch

from neurondev._compat.fx_internals import keystr, tree_flatten_with_path

__all__ = ["program_state"]


def program_state(fn: Callable[..., Any], args: tuple, kwargs: dict) -> dict[str, torch.Tensor]:
    """{where: a host copy} for every tensor the program could have written: the arguments (written in
    place), a module's buffers and plain tensor attributes (not its parameters: a training step's
    weights are the outputs of the optimizer, compared elsewhere), and the tensors in its globals."""
    state: dict[str, torch.Tensor] = {}
    for path, value in tree_flatten_with_path((args, kwargs))[0]:
        if isinstance(value, torch.Tensor):
            state[f"input{keystr(path)}"] = _host(value)
    module = fn if isinstance(fn, torch.nn.Module) else getattr(fn, "__self__", None)
    if isinstance(module, torch.nn.Module):
        state.update(_module_state(module))
    for name, value in _globals(fn).items():
        if isinstance(value, torch.Tensor) and not name.startswith("__"):
            state[f"global {name}"] = _host(value)
    return state


def _module_state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    found = {f"self.{name}": _host(buffer) for name, buffer in module.named_buffers()}
    for prefix, sub in module.named_modules():
        for name, value in vars(sub).items():
            if isinstance(value, torch.Tensor) and not name.startswith("_"):
                found[f"self.{prefix + '.' if prefix else ''}{name}"] = _host(value)
    return found


def _globals(fn: Any) -> dict[str, Any]:
    if isinstance(fn, torch.nn.Module):
        forward = getattr(type(fn), "forward", None)
        return getattr(forward, "__globals__", {})
    function = getattr(fn, "__func__", fn)
    return function.__globals__ if isinstance(function, types.FunctionType) else {}


def _host(value: torch.Tensor) -> torch.Tensor:
    value = value.detach()
    if value.layout != torch.strided:
        value = value.to_dense()
    return value.to("cpu", copy=True)
