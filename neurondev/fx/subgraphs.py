"""The graphs inside a graph: bodies that higher-order ops call (autograd.Function, cond, checkpoint, wrap).

Dynamo traces a custom ``torch.autograd.Function`` as ``autograd_function_apply(fwd_body_0,
bwd_body_0, ...)``, ``torch.cond`` as ``cond(pred, cond_true_0, cond_false_0, ...)`` and activation
checkpointing as ``tag_activation_checkpoint(wrap_body_0, ...)``: each body is a GraphModule held
as an attribute of the outer graph and read by a ``get_attr`` node. A device pin inside one of
them is a pin of the program like any other; it is named ``fwd_body_0.lo`` (the body, then the node).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch.fx

__all__ = ["Subgraph", "node_named", "owner_of", "subgraphs"]


class Subgraph:
    """A body a higher-order op calls: its qualified name (``fwd_body_0``, ``cond_true_0.wrap_body_0``),
    the GraphModule, and the outer graph's nodes that call it."""

    def __init__(self, name: str, module: torch.fx.GraphModule, callers: tuple[str, ...]) -> None:
        self.name, self.module, self.callers = name, module, callers

    def qualified(self, node: torch.fx.Node) -> str:
        return f"{self.name}.{node.name}"


def subgraphs(gm: torch.fx.GraphModule, prefix: str = "") -> Iterator[Subgraph]:
    """Every body a node of ``gm`` reads with ``get_attr`` (and the bodies inside those), outermost first."""
    for node in gm.graph.find_nodes(op="get_attr"):  # looked up, not a walk over every node
        body = _attribute(gm, str(node.target))
        if not isinstance(body, torch.fx.GraphModule):
            continue
        name = f"{prefix}{node.target}"
        yield Subgraph(name, body, tuple(user.name for user in node.users))
        yield from subgraphs(body, prefix=f"{name}.")


def owner_of(gm: torch.fx.GraphModule, qualified: str) -> str | None:
    """The node of ``gm`` itself that calls the body a qualified node name (``fwd_body_0.lo``) is in."""
    if "." not in qualified:
        return qualified
    top = qualified.split(".", 1)[0]
    for node in gm.graph.nodes:
        if node.op == "get_attr" and str(node.target) == top:
            return next((user.name for user in node.users), None)
    return None


def node_named(gm: torch.fx.GraphModule, qualified: str) -> torch.fx.Node | None:
    """The node a (qualified) name stands for, in ``gm`` or in the body its name starts with."""
    body, _, name = qualified.rpartition(".")
    module = _attribute(gm, body) if body else gm
    if not isinstance(module, torch.fx.GraphModule):
        return None
    return next((node for node in module.graph.nodes if node.name == name), None)


def _attribute(gm: torch.nn.Module, name: str) -> object:
    value: object = gm
    for part in name.split("."):
        value = getattr(value, part, None)
        if value is None:
            return None
    return value
