"""The "neurondev" torch.compile backend: DeviceRewriterPass on each graph, then torch_xla's openxla."""

from __future__ import annotations

import logging
from typing import Any, Callable

import torch
import torch.fx

from .passes.device_rewriter import DeviceRewriterPass

__all__ = ["backend"]

log = logging.getLogger("neurondev")


def backend(
    gm: torch.fx.GraphModule,
    example_inputs: list[Any],
    *,
    inner: str | Callable = "openxla",
    target: str | torch.device | None = None,
    rewrite_positional: bool = True,
    options: dict | None = None,
) -> Callable:
    """Rewrite every device pin of ``gm`` to the XLA device, log what changed, then compile with ``inner``.

    Use as ``torch.compile(model, backend="neurondev")`` (registered through the
    ``torch_dynamo_backends`` entry point) or ``backend=neurondev.backend``. ``options`` (what
    ``torch.compile(..., options={...})`` passes) may set ``inner``, ``target`` and
    ``rewrite_positional``. ``target`` defaults to the device of the first XLA input, else the
    XLA device neurondev selects: an indexed device such as ``xla:0``, which aot_autograd's fake
    tensors need (``xla`` and ``xla:0`` count as different devices there).
    """
    settings = {"inner": inner, "target": target, "rewrite_positional": rewrite_positional, **(options or {})}
    device = settings["target"] or _target_of(example_inputs)
    rewriter = DeviceRewriterPass(target=device, rewrite_positional=settings["rewrite_positional"])
    rewriter(gm)
    for rewrite in rewriter.rewrites:
        log.info("neurondev backend: %s %s: %r -> %r", rewrite.node, rewrite.location, rewrite.old, rewrite.new)
    return _inner_backend(settings["inner"])(gm, example_inputs)


def _target_of(example_inputs: list[Any]) -> torch.device:
    for value in example_inputs:
        if isinstance(value, torch.Tensor) and value.device.type == "xla":
            return value.device
    from . import xla

    return xla.device()


def _inner_backend(inner: str | Callable) -> Callable:
    if callable(inner):
        return inner
    from torch._dynamo.backends.registry import lookup_backend

    return lookup_backend(inner)
