"""Devices in FX graphs: the target device, the device arguments of a node (slots), and naming things."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import torch
import torch.fx

from neurondev._compat.fx_internals import ENTER_AUTOCAST, OpOverload, OpOverloadPacket, qualified_name
from neurondev.errors import InvalidSubjectError, InvalidTargetError

__all__ = [
    "Slot",
    "as_device",
    "describe_object",
    "device_format",
    "device_nodes",
    "device_slots",
    "function_name",
    "graph_module_of",
    "is_assertion",
    "is_output_transfer",
    "is_pin",
    "on_target",
    "parse_target",
    "rewritten_by",
    "slot_device",
]

_MOVE_METHODS = ("cpu", "cuda")
_TENSOR_TO = torch.Tensor.to
_ATEN_TO = torch.ops.aten.to
_ATEN_TO_COPY = torch.ops.aten._to_copy
_DEVICE = torch.device
_ENTER_AUTOCAST = ENTER_AUTOCAST  # read in the pass's hot loop: a module global, from _compat
_ASSERT_METADATA = getattr(torch.ops.aten, "_assert_tensor_metadata", None)


class Slot(NamedTuple):
    """One device argument of a node: what kind of place it sits in, its index there, and its value.

    ``kind`` is 'kwarg' (``device=``), 'arg' (positional, at ``position`` in the node's args),
    'kwarg[type]' (``torch.device(type=...)``), 'method' (``.cpu()`` / ``.cuda()``) or 'type'
    (a device type at ``position``: ``torch.autocast(device_type=...)``); ``location`` is how a
    table writes it: ``kwarg``, ``arg[1]``, ``kwarg[type]``, ``method``.
    """

    kind: str
    value: Any
    position: int = 0

    @property
    def location(self) -> str:
        return f"arg[{self.position}]" if self.kind in ("arg", "type") else self.kind


def parse_target(target: str | torch.device) -> torch.device:
    """The target device as a torch.device; InvalidTargetError unless it is a device name torch knows.

    An int is refused: torch reads it as a CUDA index, which is never what a target for XLA means.
    """
    if isinstance(target, torch.device):
        return target
    if isinstance(target, bool) or not isinstance(target, str):
        reason = " (torch would read an int as a CUDA index)" if isinstance(target, int) else ""
        raise InvalidTargetError(
            f"target must name a device, got {type(target).__name__} {target!r}{reason}; pass e.g. 'xla', 'xla:0' or torch.device('xla')"
        )
    try:
        return torch.device(target)
    except (RuntimeError, TypeError) as error:
        raise InvalidTargetError(
            f"target {target!r} is not a device torch knows; use e.g. 'xla', 'xla:0' or torch.device('xla')"
        ) from error


def on_target(device: torch.device, target: torch.device) -> bool:
    """Whether ``device`` is already the target: the whole device when the target names an index
    (``xla:1`` is not ``xla:0``, nor is a bare ``xla``), the type otherwise."""
    if target.index is not None:
        return device.type == target.type and device.index == target.index
    return device.type == target.type


def graph_module_of(subject: Any, *, purpose: str, also: str = "") -> torch.fx.GraphModule:
    """The GraphModule of a GraphModule or a ``torch.export.ExportedProgram``; a named error otherwise,
    saying what to pass (``also``: what else the caller accepts)."""
    if isinstance(subject, torch.fx.GraphModule):
        return subject
    if isinstance(subject, torch.export.ExportedProgram):
        return subject.graph_module
    raise InvalidSubjectError(f"{purpose} {describe_object(subject)}; " + _GRAPH_HINT + also)


_GRAPH_HINT = (
    "pass a torch.fx.GraphModule (e.g. neurondev.capture(fn, x).graphs[0], or torch.fx.symbolic_trace(fn)) "
    "or a torch.export.ExportedProgram"
)


def describe_object(value: Any) -> str:
    """How an error message names a wrong argument: 'the function f', 'a str ('hello')', 'None'."""
    if value is None:
        return "None"
    if isinstance(value, torch.fx.Graph):
        return "a torch.fx.Graph (gm.graph); its GraphModule is what runs"
    if isinstance(value, type):
        return f"the class {value.__name__} (not an instance)"
    if isinstance(value, torch.nn.Module):
        return f"an nn.Module ({type(value).__name__}), which is not a traced graph"
    if callable(value):
        return f"the function {getattr(value, '__qualname__', None) or type(value).__name__}, which is not a traced graph"
    text = repr(value)
    return f"a {type(value).__name__} ({text[:40] + '...' if len(text) > 40 else text})"


def as_device(value: Any) -> torch.device | None:
    """The device a device argument names, or None when it names none (None, a Node, a dtype, ...)."""
    if isinstance(value, torch.device):
        return value
    if isinstance(value, str):
        try:
            return torch.device(value)
        except RuntimeError:
            return None
    if isinstance(value, int) and not isinstance(value, bool):
        return torch.device("cuda", value)
    return None


def device_format(value: Any) -> str:
    """How a device is written: 'str', 'torch.device', 'int' or 'other'."""
    if isinstance(value, str):
        return "str"
    if isinstance(value, torch.device):
        return "torch.device"
    if isinstance(value, int) and not isinstance(value, bool):
        return "int"
    return "other"


def device_slots(node: torch.fx.Node, positional: bool = True) -> tuple[Slot, ...]:
    """Every device argument of ``node`` that names a device (None and graph values are skipped).

    With ``positional=False`` only the ``device`` kwarg is looked at: the documented algorithm.
    This runs once per node in every pass, so a node without devices returns after a few checks.
    """
    op = node.op
    if op != "call_function" and op != "call_method":
        return ()
    target, args, kwargs = node.target, node.args, node.kwargs
    device = kwargs.get("device") if kwargs else None
    if not positional:
        return _kwarg_slot(device)
    if op == "call_method":
        if target in _MOVE_METHODS:
            return (Slot("method", _moved_to(node)),)
        loose = target == "to"
    elif target is _DEVICE:
        return _device_call_slot(args, kwargs)
    elif target is _ENTER_AUTOCAST:
        return (Slot("type", args[0], 0),) if args and isinstance(args[0], str) and as_device(args[0]) is not None else ()
    else:
        loose = target is _TENSOR_TO or (target.__class__ is OpOverload and target.overloadpacket is _ATEN_TO)
    if device is None and not loose:
        for value in args:
            if value.__class__ is _DEVICE:
                break
        else:
            return ()
    return _kwarg_slot(device) + _positional_slots(args, loose)


def device_nodes(nodes: Iterable[torch.fx.Node], positional: bool = True) -> Iterator[tuple[torch.fx.Node, tuple[Slot, ...]]]:
    """``(node, device_slots(node, positional))`` for every node of ``nodes`` that has a device argument.

    What the pass and the pin finder walk a graph with. Most nodes have none: a call_function of an
    ordinary op with no ``device`` kwarg and no ``torch.device`` among its args is passed over in
    this loop, reading the node's fields directly (torch.fx's ``args`` / ``kwargs`` properties
    cost as much as the rest of the check; :mod:`neurondev._compat.fx_internals` names this private read).
    Every other node is asked of :func:`device_slots`, the one rule.
    """
    for node in nodes:
        op = node.op
        if op == "call_function":
            target = node.target
            ordinary = target is not _DEVICE and target is not _ENTER_AUTOCAST and target is not _TENSOR_TO
            if ordinary and target.__class__ is not OpOverload and "device" not in node._kwargs:
                if not positional:
                    continue
                for value in node._args:
                    if value.__class__ is _DEVICE:
                        break
                else:
                    continue
        elif op != "call_method":
            continue
        slots = device_slots(node, positional)
        if slots:
            yield node, slots


def _device_call_slot(args: tuple, kwargs: dict) -> tuple[Slot, ...]:
    """The device a ``torch.device(...)`` call builds: ``torch.device('cpu')`` or ``torch.device(type='cpu')``."""
    if args:
        return (Slot("arg", args[0], 0),) if as_device(args[0]) is not None else ()
    kind = kwargs.get("type") if kwargs else None
    return (Slot("kwarg[type]", kind),) if kind is not None and as_device(kind) is not None else ()


def _kwarg_slot(device: Any) -> tuple[Slot, ...]:
    return (Slot("kwarg", device),) if device is not None and as_device(device) is not None else ()


def _positional_slots(args: tuple, loose: bool) -> tuple[Slot, ...]:
    """Positional devices: any torch.device; in a ``Tensor.to`` call also a str or an int after self."""
    return tuple(
        Slot("arg", value, i)
        for i, value in enumerate(args)
        if isinstance(value, torch.device) or (loose and i > 0 and as_device(value) is not None)
    )


def _moved_to(node: torch.fx.Node) -> torch.device:
    """The device a ``.cpu()`` / ``.cuda(i)`` call moves to."""
    if node.target == "cpu":
        return torch.device("cpu")
    index = node.args[1] if len(node.args) > 1 else node.kwargs.get("device")
    device = as_device(index) if index is not None else None
    return device if device is not None else torch.device("cuda")


def slot_device(node: torch.fx.Node, slot: Slot) -> torch.device:
    """The device a slot names; for a ``torch.device('cuda', 1)`` call, the index is included."""
    device = as_device(slot.value)
    assert device is not None  # device_slots keeps only slots that name a device
    if node.target is torch.device:
        index = node.args[1] if len(node.args) > 1 else node.kwargs.get("index")
        if isinstance(index, int) and not isinstance(index, bool):
            return torch.device(device.type, index)
    return device


def is_pin(slot: Slot, device: torch.device, target: torch.device) -> bool:
    """Whether a device argument places a value elsewhere than ``target``: the one rule the pin finder
    and the pass share. A device *type* (``torch.autocast(device_type=...)``) has no index: it is a
    pin when its type is not the target's (``'xla'`` is right for ``xla:0``)."""
    if slot.kind == "type":
        return device.type != target.type
    return not on_target(device, target)


def rewritten_by(
    node: torch.fx.Node,
    slot: Slot,
    device: torch.device,
    target: torch.device,
    *,
    positional: bool,
    keep_host_outputs: bool,
    traced_on_meta: bool,
) -> bool:
    """Whether DeviceRewriterPass with these options rewrites this device argument.

    ``positional=False`` is the seed document's kwargs-only algorithm, exactly: every ``device=``
    kwarg that is not the target, ``meta`` and results handed back included. The default pass
    also rewrites positional devices, keeps a move to the host whose value only leaves the graph
    (``keep_host_outputs``), leaves ``meta`` alone unless the graph was traced on meta (a meta
    tensor in a CPU-traced graph is a shape-only value the user made on purpose; on XLA it stays one),
    and keeps an autocast region's device type where the target has no autocast (rewritten, the region
    would fail there; kept, it runs as it ran: a pin the table names).
    """
    if not is_pin(slot, device, target):
        return False
    if not positional:
        return slot.kind == "kwarg" or (slot.kind == "method" and "device" in node.kwargs)
    if keep_host_outputs and is_output_transfer(node, device):
        return False
    if slot.kind == "type" and not autocast_available(target.type):
        return False
    return device.type != "meta" or traced_on_meta


@functools.lru_cache(maxsize=32)
def _autocast_available(device_type: str) -> bool:
    return bool(torch.amp.is_autocast_available(device_type))


def autocast_available(device_type: str) -> bool:
    """Whether ``torch.autocast(device_type)`` can run here (XLA's, CUDA's, a PrivateUse1 backend that says which dtypes)."""
    try:
        return _autocast_available(device_type)
    except RuntimeError:  # a device type torch does not know here
        return False


def is_output_transfer(node: torch.fx.Node, device: torch.device) -> bool:
    """A move to the host whose value only leaves the graph: results handed back to the host on
    purpose (``return logits.cpu()``), not a value the rest of the graph waits for. Only moves
    (``.to``, ``.cpu()``) count: a constructor returned as it is was made for the model's device."""
    return device.type == "cpu" and _is_move(node) and bool(node.users) and all(user.op == "output" for user in node.users)


def _is_move(node: torch.fx.Node) -> bool:
    if node.op == "call_method":
        return node.target in ("to", "cpu")
    target = node.target
    return node.op == "call_function" and (
        target is _TENSOR_TO or (isinstance(target, OpOverload) and target.overloadpacket in (_ATEN_TO, _ATEN_TO_COPY))
    )


def is_assertion(node: torch.fx.Node) -> bool:
    """``aten._assert_tensor_metadata``: a check of a tensor's device (torch.export), not a placement."""
    return (
        _ASSERT_METADATA is not None
        and node.op == "call_function"
        and (node.target is _ASSERT_METADATA or getattr(node.target, "overloadpacket", None) is _ASSERT_METADATA)
    )


def function_name(node: torch.fx.Node) -> str:
    """What a node calls, as a user recognises it: 'torch.empty', 'Tensor.to', 'aten.empty.memory_format'."""
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    if node.op != "call_function":
        return str(node.target)
    if node.target is _ENTER_AUTOCAST:
        return "torch.autocast"
    if isinstance(node.target, (OpOverload, OpOverloadPacket)):
        return str(node.target)
    try:
        name = qualified_name(node.target)  # type: ignore[arg-type]
    except (RuntimeError, AttributeError):
        return getattr(node.target, "__name__", str(node.target))
    if name.startswith("torch.Tensor."):
        return name.removeprefix("torch.")
    return name.removeprefix("_") if name.startswith("_operator.") else name
