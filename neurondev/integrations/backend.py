"""The "neurondev" torch.compile backend: DeviceRewriterPass on each graph, then torch_xla's openxla."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from neurondev.errors import MixedDeviceInputsError
from neurondev.passes.device_rewriter import DeviceRewriterPass

__all__ = ["backend", "input_placement"]

log = logging.getLogger("neurondev")
_told_about_cpu_inputs = False


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

    The backend is for graphs whose inputs are on XLA. With every input on the host there is
    nothing to fix for XLA: unless a ``target`` is given, the graph goes to ``inner`` unchanged
    (said once on the ``neurondev`` logger). Inputs on XLA and on the host in one graph raise MixedDeviceInputsError naming them
    (a 0-dim CPU tensor, which torch lets mix with any device, does not count).
    """
    settings = {"inner": inner, "target": target, "rewrite_positional": rewrite_positional, **(options or {})}
    placement = input_placement(gm, example_inputs)
    if placement == "host" and settings["target"] is None:
        _tell_once_about_cpu_inputs()
        return _inner_backend(settings["inner"])(gm, example_inputs)
    device = settings["target"] or _target_of(example_inputs)
    rewriter = DeviceRewriterPass(target=device, rewrite_positional=settings["rewrite_positional"])
    rewriter(gm)
    for rewrite in rewriter.rewrites:
        log.info("neurondev backend: %s %s: %r -> %r", rewrite.node, rewrite.location, rewrite.old, rewrite.new)
    return _inner_backend(settings["inner"])(gm, example_inputs)


def input_placement(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> str:
    """'xla' (every tensor input on XLA), 'host' (none on XLA), or MixedDeviceInputsError."""
    names = [node.name for node in gm.graph.nodes if node.op == "placeholder"]
    tensors = [(name, value) for name, value in zip(names, example_inputs) if isinstance(value, torch.Tensor)]
    on_xla = [name for name, value in tensors if value.device.type == "xla"]
    elsewhere = [f"{name} ({value.device})" for name, value in tensors if value.device.type != "xla" and value.dim() > 0]
    if on_xla and elsewhere:
        raise MixedDeviceInputsError(
            f"the graph's inputs are on XLA ({', '.join(on_xla)}) and elsewhere ({', '.join(elsewhere)}); "
            "move every input (and the module: model.to(xla_device)) to the XLA device before calling the compiled function"
        )
    return "xla" if on_xla else "host"


def _tell_once_about_cpu_inputs() -> None:
    global _told_about_cpu_inputs
    if not _told_about_cpu_inputs:
        _told_about_cpu_inputs = True
        log.info(
            "neurondev backend: the inputs are on the host, so the graph runs unchanged; the backend rewrites "
            "graphs whose inputs are on XLA (move inputs and module there: x.to(torch_xla.device()))"
        )


def _target_of(example_inputs: list[Any]) -> torch.device:
    for value in example_inputs:
        if isinstance(value, torch.Tensor) and value.device.type == "xla":
            return value.device
    from neurondev import xla

    return xla.device()


def _inner_backend(inner: str | Callable) -> Callable:
    if callable(inner):
        return inner
    from neurondev._compat import lookup_backend

    return lookup_backend(inner)
