"""Which module of the user's model a node was traced in, read from dynamo's ``nn_module_stack``."""

from __future__ import annotations

import re

import torch.fx

__all__ = ["layer_of", "module_path"]

_LAYER = re.compile(r"^(?P<stack>.+?)\.(?P<index>\d+)(?:\.|$)")
_SOURCE_PREFIX = re.compile(r"^L\['(?:fn|self)'\]")
_MODULE_KEY = re.compile(r"\._modules\['([^']+)'\]")


def module_path(node: torch.fx.Node) -> str:
    """``model.layers.3.self_attn`` for a node dynamo traced inside that module ('' at the top)."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path, _ = list(stack.values())[-1]
    path = _MODULE_KEY.sub(r".\1", _SOURCE_PREFIX.sub("", str(path)))
    return path.lstrip(".")


def layer_of(node: torch.fx.Node) -> tuple[str, int] | None:
    """(``model.layers``, 3) for a node inside the fourth of a stack of repeated layers, else None."""
    match = _LAYER.match(module_path(node))
    return (match["stack"], int(match["index"])) if match else None
