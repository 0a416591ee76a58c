"""Keep node.meta's fake tensors true after a device rewrite: propagate again from the rewritten nodes."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any, cast

import torch
import torch.fx

from neurondev._compat.fx_internals import detect_fake_mode, tree_leaves, tree_map

__all__ = ["META_KEYS", "backend_loaded", "meta_value", "refresh_meta"]

META_KEYS = ("val", "example_value")


def meta_value(node: torch.fx.Node) -> Any:
    """The fake value a node carries (``meta['val']``, else ``meta['example_value']``), or None."""
    for key in META_KEYS:
        if key in node.meta:
            return node.meta[key]
    return None


def backend_loaded(device: torch.device) -> bool:
    """Whether values can be made on ``device`` in this process: its backend is loaded.

    A value on a device whose backend is not loaded (an XLA device before torch_xla is imported)
    can abort the whole process from inside autograd's C++ ("PyTorch is not linked with support
    for xla devices"), which no ``except`` catches. For XLA: only when torch_xla is loaded already
    (the pass never loads it: that would start a runtime as a side effect; explain starts XLA before
    it rewrites, and a backend on XLA inputs runs with it loaded); other devices are asked with a
    harmless empty tensor.
    """
    if device.type in ("cpu", "meta", "cuda"):
        return True
    if device.type == "xla":
        return "torch_xla" in sys.modules
    try:
        torch.empty(0, device=device)
    except RuntimeError:
        return False
    return True


def refresh_meta(gm: torch.fx.GraphModule, rewritten: Iterable[torch.fx.Node], target: torch.device) -> int | None:
    """Propagate fake values again through the rewritten nodes and everything downstream of them.

    Each such node is run on the fake values of its inputs (as FakeTensorProp would). Where that
    cannot decide, because an input still on the traced device meets a rewritten value (a graph
    traced on CPU, whose inputs will be on the target when it runs there), the node's old value is
    kept with its tensors moved to the target. Returns how many nodes got a new value; None when
    the target's backend is not loaded here (no fake value can be made there: node.meta stays as traced).
    """
    rewritten = list(rewritten)
    fake_mode = _fake_mode(rewritten)
    if fake_mode is None:
        return 0
    if not backend_loaded(target):
        return None
    dirty = set(rewritten)
    refreshed = 0
    for node in gm.graph.nodes:
        if node not in dirty and not any(source in dirty for source in node.all_input_nodes):
            continue
        old = meta_value(node)
        if old is None:
            continue
        new = _propagate(node, fake_mode)
        if new is None:
            new = _on_device(old, target, fake_mode)
        if _devices(new) != _devices(old):
            dirty.add(node)
            refreshed += 1
        for key in META_KEYS:
            if key in node.meta:
                node.meta[key] = new
    return refreshed


def _fake_mode(rewritten: list[torch.fx.Node]):
    """The fake mode of the rewritten nodes' values (a graph without fake values costs a few lookups)."""
    leaves = [leaf for node in rewritten for leaf in tree_leaves(meta_value(node))]
    try:
        return detect_fake_mode(leaves)
    except Exception:  # several fake modes in one graph: nothing we can trust to refresh with
        return None


def _propagate(node: torch.fx.Node, fake_mode) -> Any:
    """The node's value computed on its inputs' fake values, or None when it cannot be computed."""
    if node.op not in ("call_function", "call_method"):
        return None
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), meta_value)
    try:
        with fake_mode:
            if node.op == "call_method":
                return getattr(args[0], str(node.target))(*args[1:], **kwargs)
            return cast(Callable[..., Any], node.target)(*args, **kwargs)
    except Exception:
        return None


def _on_device(value: Any, target: torch.device, fake_mode) -> Any:
    def move(leaf: Any) -> Any:
        if not isinstance(leaf, torch.Tensor):
            return leaf
        with fake_mode:
            return torch.empty_strided(leaf.shape, leaf.stride(), dtype=leaf.dtype, device=target)

    return tree_map(move, value)


def _devices(value: Any) -> list[str]:
    return [str(leaf.device) for leaf in tree_leaves(value) if isinstance(leaf, torch.Tensor)]
