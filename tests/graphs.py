"""Hand-built FX graphs for tests."""

import torch
import torch.fx


def build_graph(*calls):
    """A GraphModule with one placeholder ``x`` and one node per call, all returned.

    Each call is ``(op, target, args, kwargs)``; the string "x" in args stands for the placeholder.
    """
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    outputs = []
    for op, target, args, kwargs in calls:
        args = tuple(x if a == "x" else a for a in args)
        outputs.append(graph.create_node(op, target, args, kwargs))
    graph.output(tuple(outputs))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def node_named(gm, name):
    return next(node for node in gm.graph.nodes if node.name == name)
