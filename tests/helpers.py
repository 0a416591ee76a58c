"""Test helpers: hand-built FX graphs, source line look-ups, Python in a fresh process."""

import inspect
import os
import subprocess
import sys
import textwrap

import torch
import torch.fx


def build_graph(*calls):
    """A GraphModule with one placeholder ``x`` and one node per call, all gathered into one list
    that is returned (so no node is a result handed straight back to the host).

    Each call is ``(op, target, args, kwargs)``; the string "x" in args stands for the placeholder.
    """
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    outputs = []
    for op, target, args, kwargs in calls:
        args = tuple(x if a == "x" else a for a in args)
        outputs.append(graph.create_node(op, target, args, kwargs))
    graph.output(graph.call_function(list, (tuple(outputs),)))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def node_named(gm, name):
    return next(node for node in gm.graph.nodes if node.name == name)


def line_of(fn, text):
    """The file line number in ``fn``'s source where ``text`` first appears."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def run_python(code: str, **environ: str) -> subprocess.CompletedProcess:
    """``code`` in a fresh Python (nothing imported yet, no PJRT_DEVICE unless given)."""
    env = {k: v for k, v in os.environ.items() if k != "PJRT_DEVICE"} | environ
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=600)


# Prepended to run_python's code: torch_xla cannot be imported, as on a machine without it.
HIDE_TORCH_XLA = """
import sys
class HideTorchXla:
    def find_spec(self, name, path=None, target=None):
        if name == "torch_xla" or name.startswith("torch_xla."):
            raise ImportError("torch_xla hidden by the test")
sys.meta_path.insert(0, HideTorchXla())
"""
