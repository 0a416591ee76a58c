"""Test helpers: hand-built FX graphs, source line look-ups."""

import inspect

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


def line_of(fn, text):
    """The file line number in ``fn``'s source where ``text`` first appears."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)
