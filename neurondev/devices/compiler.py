"""The "neurondev" torch.compile backend: DeviceRewriterPass on each graph, then the device's own backend (openxla on XLA)."""

from __future__ import annotations

import dataclasses
import logging
import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from neurondev._compat.fx_internals import source_name, tree_flatten, tree_unflatten
from neurondev.fx.devices import parse_target
from neurondev.passes.device_rewriter import DeviceRewriterPass
from neurondev.trace.inputs import is_host_value, on_host

__all__ = ["Placement", "backend", "host_results", "input_placement", "written_inputs"]

log = logging.getLogger("neurondev")
_told_about_cpu_inputs = False


def backend(
    gm: torch.fx.GraphModule,
    example_inputs: list[Any],
    *,
    inner: str | Callable | None = None,
    target: str | torch.device | None = None,
    rewrite_positional: bool = True,
    options: dict | None = None,
) -> Callable:
    """Rewrite every device pin of ``gm`` to the inputs' device, log what changed, then compile with ``inner``
    (default: the device's own backend: torch_xla's ``openxla`` on XLA, ``neuron`` on TorchNeuron's device,
    neurondev's interpreting aot_autograd backend on another native device).

    Use as ``torch.compile(model, backend="neurondev")`` (registered through the
    ``torch_dynamo_backends`` entry point) or ``backend=neurondev.backend``. ``options`` (what
    ``torch.compile(..., options={...})`` passes) may set ``inner``, ``target`` and
    ``rewrite_positional``. ``target`` defaults to the device of the first input on a device: an
    indexed device such as ``xla:0``, which aot_autograd's fake tensors need.

    The backend is for graphs whose inputs are on a device. With every input on the host there is
    nothing to fix: unless a ``target`` is given, the graph goes to ``inner`` unchanged (said once on
    the ``neurondev`` logger). A graph on a device that also reads host tensors (a tensor in a global, a
    closure or a plain attribute, which dynamo lifts into an input; 0-dim tensors aside, which torch lets
    mix with any device) gets them copied to the device on every call, one upload each, named at WARNING
    on the ``neurondev`` logger once per graph (torch_xla's own warning about host tensors no longer
    fires: this one replaces it). What the program writes into such a host tensor is copied back into it
    after each call. Every result comes back on the device the program as written gives it (as traced:
    ``(x + 1).cpu() * 2`` and a returned ``x.new_zeros(..., device="cpu")`` on the host): the pass may move
    the work before a result to the device, never the result, so a backend swap changes no result's device.
    """
    settings = {"inner": inner, "target": target, "rewrite_positional": rewrite_positional, **(options or {})}
    placement = input_placement(gm, example_inputs)
    if placement.on_host_only and settings["target"] is None:
        _tell_once_about_cpu_inputs()
        return _inner_backend(settings["inner"], None)(gm, example_inputs)
    device = parse_target(settings["target"]) if settings["target"] is not None else _target_of(example_inputs)
    host_out = host_results(gm) if _traced_there(gm, example_inputs) else ()  # before the pass: where the program leaves each result
    makers = _result_nodes(gm, host_out)
    result = DeviceRewriterPass(target=device, rewrite_positional=settings["rewrite_positional"])(gm)
    for rewrite in result.rewrites:
        log.info("neurondev backend: %s %s: %r -> %r", rewrite.node, rewrite.location, rewrite.old, rewrite.new)
    inner_backend = _inner_backend(settings["inner"], device)
    if not placement.host or placement.on_host_only:  # every input on the host: where they go is the caller's to say
        return _results_where_written(inner_backend(gm, example_inputs), host_out, makers)
    written = written_inputs(gm, placement.host)
    log.warning(
        "neurondev backend: %s are host tensors read by a graph on %s (a global, a closure or a plain attribute): each is "
        "copied to the device on every call%s; register them as buffers (or pass them in on the device) to keep them there",
        ", ".join(placement.host_names),
        device,
        f", and {', '.join(placement.names_of(written))} copied back after it (the graph writes into them)" if written else "",
    )
    return _results_where_written(
        _uploading(inner_backend, gm, example_inputs, _Uploads(placement.host, written, device)), host_out, makers
    )


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where a graph's tensor inputs are: positions on a device, and host tensors (not 0-dim) beside them."""

    on_device: tuple[int, ...]
    host: tuple[int, ...]
    host_names: tuple[str, ...]

    @property
    def on_host_only(self) -> bool:
        return not self.on_device

    @property
    def on_xla(self) -> tuple[int, ...]:
        """The positions on a device (XLA's, most often): the name this field had."""
        return self.on_device

    def names_of(self, positions: tuple[int, ...]) -> list[str]:
        return [name for index, name in zip(self.host, self.host_names) if index in positions]


def input_placement(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Placement:
    """Which tensor inputs are on a device and which host tensors (0-dim ones aside) a graph on a device reads."""
    names = [source_name(node) or node.name for node in gm.graph.nodes if node.op == "placeholder"]
    tensors = [(i, name, value) for i, (name, value) in enumerate(zip(names, example_inputs)) if isinstance(value, torch.Tensor)]
    on_device = tuple(i for i, _, value in tensors if not on_host(value))
    host = [(i, f"{name} ({value.device})") for i, name, value in tensors if is_host_value(value)]
    return Placement(on_device, tuple(i for i, _ in host), tuple(name for _, name in host))


# Ops through which a value is the same memory (a write into the result writes the input).
_VIEWS = {"view", "reshape", "transpose", "permute", "select", "narrow", "expand", "unsqueeze", "squeeze", "flatten", "t", "as_strided"}


def written_inputs(gm: torch.fx.GraphModule, positions: tuple[int, ...]) -> tuple[int, ...]:
    """The inputs at ``positions`` the graph writes into: an in-place op (``add_``, ``copy_``, ``x[i] = v``,
    ``x[i] += v``) on the input or on a view of it."""
    placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    written = []
    for index in positions:
        aliases = _aliases(placeholders[index])
        if any(_writes(user, aliases) for alias in aliases for user in alias.users):
            written.append(index)
    return tuple(written)


def _aliases(node: torch.fx.Node) -> set[torch.fx.Node]:
    found, todo = {node}, [node]
    while todo:
        for user in todo.pop().users:
            if user not in found and (_name_of(user) in _VIEWS or user.target is operator.getitem):
                found.add(user)
                todo.append(user)
    return found


def _writes(node: torch.fx.Node, aliases: set[torch.fx.Node]) -> bool:
    name = _name_of(node)
    first = node.args[0] if node.args else None
    if node.target is operator.setitem or (name.endswith("_") and not name.startswith("_")) or name.startswith("__i"):
        return first in aliases
    return any(value in aliases for value in node.kwargs.values()) and "out" in node.kwargs


def _name_of(node: torch.fx.Node) -> str:
    if node.op == "call_method":
        return str(node.target)
    return getattr(node.target, "__name__", "") if node.op == "call_function" else ""


def _traced_there(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> bool:
    """Whether dynamo traced ``gm`` with its inputs where they are now (the program on the device: its results'
    devices are the program's), not on the host and moved since (a graph traced on CPU: its results follow the target)."""
    placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    for node, value in zip(placeholders, example_inputs):
        traced = node.meta.get("example_value", node.meta.get("val"))
        if isinstance(value, torch.Tensor) and not on_host(value) and isinstance(traced, torch.Tensor):
            return traced.device.type == value.device.type
    return False


def host_results(gm: torch.fx.GraphModule) -> tuple[int, ...]:
    """Positions (in the flattened output) of results dynamo traced on the host: made from host values
    only, they stay on the host in the program (a host attribute assigned from them keeps its device)."""
    output = next(node for node in reversed(gm.graph.nodes) if node.op == "output")
    leaves, _ = tree_flatten(output.args[0])
    found = []
    for position, leaf in enumerate(leaves):
        value = leaf.meta.get("example_value") if isinstance(leaf, torch.fx.Node) else None
        if on_host(value):
            found.append(position)
    return tuple(found)


@dataclasses.dataclass(frozen=True)
class _Uploads:
    host: tuple[int, ...]  # host inputs copied up on every call
    written: tuple[int, ...]  # of those, the ones the graph writes into: copied back after the call
    device: torch.device


def _uploading(inner: Callable, gm: torch.fx.GraphModule, example_inputs: list[Any], uploads: _Uploads) -> Callable:
    """``inner``'s compiled graph, given the host inputs copied to the device on every call, and the ones it
    writes copied back after it."""
    moved = [value.to(uploads.device) if i in uploads.host else value for i, value in enumerate(example_inputs)]
    compiled = inner(gm, moved)

    def run(*args: Any) -> Any:
        placed = [value.to(uploads.device) if i in uploads.host else value for i, value in enumerate(args)]
        result = compiled(*placed)
        for index in uploads.written:
            args[index].copy_(placed[index])  # the program wrote into the user's host tensor: so does this call
        return result

    return run


def _result_nodes(gm: torch.fx.GraphModule, positions: tuple[int, ...]) -> dict[int, torch.fx.Node]:
    """The node that brought each result at ``positions`` (in the flattened output) to the host: the first node,
    from the result back, that takes a device value (``h = (x * 2).to("cpu")``, not the ``h + 1`` returned)."""
    output = next(node for node in reversed(gm.graph.nodes) if node.op == "output")
    leaves, _ = tree_flatten(output.args[0])
    return {i: _where_it_left(leaf) for i, leaf in enumerate(leaves) if i in positions and isinstance(leaf, torch.fx.Node)}


def _where_it_left(result: torch.fx.Node) -> torch.fx.Node:
    """The node nearest ``result`` (itself included) with a tensor input dynamo traced off the host; ``result`` when
    every value before it was on the host (a tensor made there)."""
    seen, frontier = {result}, [result]
    while frontier:
        node = frontier.pop(0)
        inputs = [value for value in node.all_input_nodes if isinstance(value.meta.get("example_value"), torch.Tensor)]
        if any(not on_host(value.meta["example_value"]) for value in inputs):
            return node
        frontier += [value for value in inputs if value not in seen]
        seen.update(inputs)
    return result


def _results_where_written(compiled: Callable, positions: tuple[int, ...], makers: dict[int, torch.fx.Node]) -> Callable:
    """``compiled`` giving back on the host the results the program as written leaves there (``x.cpu() * 2``, a
    returned ``x.new_zeros(..., device="cpu")``): the pass may move the work before them to the device, never the
    result itself, so swapping the backend changes no result's device. Each copy is the line of the node that took
    the value to the host (``h = (x * 2).to("cpu")``, though ``h + 1`` is returned), not of whoever called the compiled code."""
    if not positions:
        return compiled

    def run(*args: Any) -> Any:
        leaves, spec = tree_flatten(compiled(*args))
        moved = [
            _to_host(leaf, makers.get(i)) if i in positions and isinstance(leaf, torch.Tensor) else leaf for i, leaf in enumerate(leaves)
        ]
        return tree_unflatten(moved, spec)

    return run


def _to_host(result: torch.Tensor, maker: torch.fx.Node | None) -> torch.Tensor:
    """``result.cpu()``, said (to an accounting of its device that is on) to be ``maker``'s."""
    from neurondev.native.events import active_for

    accounting = active_for(result.device.type) if maker is not None else None
    if accounting is None:
        return result.cpu()
    outer, accounting.node = accounting.node, maker
    try:
        return result.cpu()
    finally:
        accounting.node = outer


def _tell_once_about_cpu_inputs() -> None:
    global _told_about_cpu_inputs
    if not _told_about_cpu_inputs:
        _told_about_cpu_inputs = True
        log.info(
            "neurondev backend: the inputs are on the host, so the graph runs unchanged; the backend rewrites "
            "graphs whose inputs are on a device (move inputs and module there: x.to(torch_xla.device()))"
        )


def _target_of(example_inputs: list[Any]) -> torch.device:
    for value in example_inputs:
        if isinstance(value, torch.Tensor) and not on_host(value):
            return value.device
    from neurondev.xla.runtime import device

    return device()


def _inner_backend(inner: str | Callable | None, device: torch.device | None) -> Callable:
    if callable(inner):
        return inner
    if inner is None:
        if device is None or device.type == "xla":
            inner = "openxla"
        else:
            from neurondev.devices.drivers import driver_for

            return driver_for(device).program_backend()
    from neurondev._compat.dynamo import lookup_backend

    return lookup_backend(inner)
