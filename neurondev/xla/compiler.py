"""The "neurondev" torch.compile backend: DeviceRewriterPass on each graph, then torch_xla's openxla."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from neurondev.fx.devices import parse_target
from neurondev.passes.device_rewriter import DeviceRewriterPass

__all__ = ["Placement", "backend", "input_placement"]

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
    (said once on the ``neurondev`` logger). A graph whose inputs are on XLA but which also reads
    host tensors (a tensor in a global, a closure or a plain attribute, which dynamo lifts into an
    input; 0-dim tensors aside, which torch lets mix with any device) gets those copied to the
    device on every call, one upload each, as eager torch_xla would do at their ``.to(device)``;
    the logger names them once (register them as buffers to keep them on the device).
    """
    settings = {"inner": inner, "target": target, "rewrite_positional": rewrite_positional, **(options or {})}
    placement = input_placement(gm, example_inputs)
    if placement.on_host_only and settings["target"] is None:
        _tell_once_about_cpu_inputs()
        return _inner_backend(settings["inner"])(gm, example_inputs)
    device = parse_target(settings["target"]) if settings["target"] is not None else _target_of(example_inputs)
    result = DeviceRewriterPass(target=device, rewrite_positional=settings["rewrite_positional"])(gm)
    for rewrite in result.rewrites:
        log.info("neurondev backend: %s %s: %r -> %r", rewrite.node, rewrite.location, rewrite.old, rewrite.new)
    if not placement.host:
        return _inner_backend(settings["inner"])(gm, example_inputs)
    log.info(
        "neurondev backend: %s are host tensors read by a graph on %s (a global, a closure or a plain attribute): "
        "each is copied to the device on every call; register them as buffers (or pass them in on the device) to keep them there",
        ", ".join(placement.host_names),
        device,
    )
    return _uploading(_inner_backend(settings["inner"]), gm, example_inputs, placement.host, device)


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where a graph's tensor inputs are: positions and names on XLA, and host tensors (not 0-dim) beside them."""

    on_xla: tuple[int, ...]
    host: tuple[int, ...]
    host_names: tuple[str, ...]

    @property
    def on_host_only(self) -> bool:
        return not self.on_xla


def input_placement(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Placement:
    """Which tensor inputs are on XLA and which host tensors (0-dim ones aside) a graph on XLA reads."""
    names = [node.name for node in gm.graph.nodes if node.op == "placeholder"]
    tensors = [(i, name, value) for i, (name, value) in enumerate(zip(names, example_inputs)) if isinstance(value, torch.Tensor)]
    on_xla = tuple(i for i, _, value in tensors if value.device.type == "xla")
    host = [(i, f"{name} ({value.device})") for i, name, value in tensors if value.device.type != "xla" and value.dim() > 0]
    return Placement(on_xla, tuple(i for i, _ in host), tuple(name for _, name in host))


def _uploading(
    inner: Callable, gm: torch.fx.GraphModule, example_inputs: list[Any], host: tuple[int, ...], device: torch.device
) -> Callable:
    """``inner``'s compiled graph, given the host inputs at ``host`` copied to ``device`` on every call."""
    moved = [value.to(device) if i in host else value for i, value in enumerate(example_inputs)]
    compiled = inner(gm, moved)

    def run(*args: Any) -> Any:
        return compiled(*[value.to(device) if i in host else value for i, value in enumerate(args)])

    return run


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
    from neurondev.xla.runtime import device

    return device()


def _inner_backend(inner: str | Callable) -> Callable:
    if callable(inner):
        return inner
    from neurondev._compat import lookup_backend

    return lookup_backend(inner)
