"""Random nodes: ops that draw from a random generator, whose values no two devices share."""

from __future__ import annotations

import torch
import torch.fx

from neurondev._compat.fx_internals import OpOverload, OpOverloadPacket

__all__ = ["random_nodes"]

_RANDOM_FUNCTIONS = {
    torch.rand,
    torch.randn,
    torch.randint,
    torch.randperm,
    torch.rand_like,
    torch.randn_like,
    torch.randint_like,
    torch.bernoulli,
    torch.multinomial,
    torch.normal,
    torch.poisson,
}
_RANDOM_METHODS = {
    "uniform_",
    "normal_",
    "bernoulli",
    "bernoulli_",
    "random_",
    "exponential_",
    "geometric_",
    "cauchy_",
    "log_normal_",
    "multinomial",
}
_DROPOUTS = {
    torch.nn.functional.dropout,
    torch.nn.functional.dropout1d,
    torch.nn.functional.dropout2d,
    torch.nn.functional.dropout3d,
    torch.nn.functional.alpha_dropout,
    torch.nn.functional.feature_alpha_dropout,
    torch.dropout,
    torch.alpha_dropout,
    torch.feature_dropout,
    torch.feature_alpha_dropout,
}


def random_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """Every node that draws random numbers: ``torch.rand``-like calls, in-place samplers
    (``uniform_``), dropout while training with p > 0, and ATen ops tagged ``nondeterministic_seeded``."""
    return [node for node in gm.graph.nodes if _draws(node)]


def _draws(node: torch.fx.Node) -> bool:
    if node.op == "call_method":
        return node.target in _RANDOM_METHODS
    if node.op != "call_function":
        return False
    target = node.target
    if isinstance(target, (OpOverload, OpOverloadPacket)):
        return torch.Tag.nondeterministic_seeded in getattr(target, "tags", ())
    if target in _DROPOUTS:
        return _dropout_draws(node)
    return target in _RANDOM_FUNCTIONS


def _dropout_draws(node: torch.fx.Node) -> bool:
    """``F.dropout(x, p=0.5, training=True)``: random only while training and with p > 0."""
    p = node.kwargs.get("p", node.args[1] if len(node.args) > 1 else 0.5)
    training = node.kwargs.get("training", node.args[2] if len(node.args) > 2 else True)
    return bool(training) and not (isinstance(p, (int, float)) and p == 0)
