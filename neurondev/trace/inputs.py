"""What each graph input is: the user's argument, a module's parameter or buffer, or a host value.

Dynamo lifts every tensor a function reads into a graph input. Arguments move with the user's
inputs and parameters and buffers with ``model.to(device)``; a tensor read from a module-level
global, a closure variable or a plain (non-buffer) attribute moves with neither: it stays on the
host when the model goes to XLA. Such inputs are host values. Dynamo names a lifted input by
where it came from (``L_args_0_``, ``G_<module>_TABLE``, ``L_fn_closure_0_cell_contents``,
``L_fn_table``); the readable name (``TABLE``, ``self.table``) is found by identity in the traced
function's globals, closure and attributes.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.fx

from neurondev._compat.fx_internals import lifted_input_kind
from neurondev.rulebook import Ruled
from neurondev.trace.source import Located, SourceLine, source_of

__all__ = ["on_host", "HostValue", "host_values", "is_host_value"]


@dataclasses.dataclass(frozen=True)
class HostValue(Located, Ruled):
    """A tensor the function reads from outside its arguments and its module's parameters and buffers.

    ``kind`` is 'global', 'closure' or 'attribute'; ``origin`` how the code names it (``TABLE``,
    ``self.table``); ``placeholder`` the graph input it became in graph ``graph``; ``source`` the
    first line of the user's code that uses it.
    """

    RECORD = "host value"

    graph: int
    placeholder: str
    index: int
    kind: str
    origin: str
    device: str
    shape: tuple[int, ...]
    source: SourceLine | None = None

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["source"] = self.source.to_dict() if self.source else None
        return {"rule": self.rule, **data, "where": self.where}


def on_host(value: Any) -> bool:
    """The one rule for where a tensor is: on the host when on the CPU, or on meta (a meta tensor stands for
    a host one in a graph traced without weights); every host check of the package reads it."""
    return isinstance(value, torch.Tensor) and value.device.type in ("cpu", "meta")


def is_host_value(value: Any) -> bool:
    """The one rule for a tensor that stays on the host when a graph runs on a device: on the host (``on_host``)
    with at least one dimension. A 0-dim CPU tensor is a scalar every device compiler takes as a
    value (torch.compile on XLA, the neurondev backend and a native device run it and match CPU)."""
    return on_host(value) and value.dim() > 0


def host_values(graph: int, gm: torch.fx.GraphModule, inputs: list[Any], fn: Callable[..., Any]) -> list[HostValue]:
    """The host values among the inputs of dynamo graph ``gm`` (traced from ``fn``, the traced copy)."""
    placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    found = []
    for index, (node, value) in enumerate(zip(placeholders, inputs)):
        kind = _kind(str(node.target))
        if kind is None or not is_host_value(value):
            continue
        origin = _origin(kind, value, fn) or str(node.target)
        user = next(iter(node.users), None)
        source = source_of(user) if user is not None else None
        found.append(HostValue(graph, node.name, index, kind, origin, str(value.device), tuple(value.shape), source))
    return found


def _kind(target: str) -> str | None:
    """'global', 'closure', 'attribute', or None for an argument, a parameter or a buffer."""
    kind = lifted_input_kind(target)
    return kind if kind in ("global", "closure", "attribute") else None


def _origin(kind: str, value: torch.Tensor, fn: Any) -> str | None:
    """How the user's code names ``value``: found by identity where a value of this kind lives."""
    places = {"global": _globals, "closure": _closure, "attribute": _attributes}[kind]
    return next((name for name, candidate in places(fn) if candidate is value), None)


def _code_owner(fn: Any) -> Any:
    """The Python function whose globals and closure the traced code uses."""
    if isinstance(fn, torch.nn.Module):
        return type(fn).forward
    if isinstance(fn, types.MethodType):
        return fn.__func__
    if isinstance(fn, types.FunctionType):
        return fn
    return type(fn).__call__


def _globals(fn: Any) -> Iterator[tuple[str, Any]]:
    owner = _code_owner(fn)
    for name, value in getattr(owner, "__globals__", {}).items():
        yield name, value
        if hasattr(value, "__dict__") and not isinstance(value, (types.ModuleType, type, types.FunctionType)):
            yield from ((f"{name}.{attr}", inner) for attr, inner in vars(value).items())


def _closure(fn: Any) -> Iterator[tuple[str, Any]]:
    owner = _code_owner(fn)
    names = getattr(getattr(owner, "__code__", None), "co_freevars", ())
    for name, cell in zip(names, getattr(owner, "__closure__", None) or ()):
        try:
            yield name, cell.cell_contents
        except ValueError:  # an empty cell
            continue


def _attributes(fn: Any) -> Iterator[tuple[str, Any]]:
    owners = fn.named_modules() if isinstance(fn, torch.nn.Module) else [("", getattr(fn, "__self__", fn))]
    for prefix, owner in owners:
        for name, value in vars(owner).items():
            if not name.startswith("_"):
                yield ".".join(part for part in ("self", prefix, name) if part), value
