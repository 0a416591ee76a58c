"""The interpreting torch.compile backend of a native device: aot_autograd's graphs run node by node, each op on its node's line.

On a device without a compiler of its own (the host test device; inductor has no code generation for
it) a program is compiled through aot_autograd, and its forward and backward graphs run with a
``torch.fx.Interpreter`` that tells the accounting which node is running: every copy, sync and
fallback inside a compiled graph is attributed to the user's line in ``node.meta["stack_trace"]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch.fx

from neurondev._compat import aot_autograd
from neurondev.runs.interface import Driver

__all__ = ["interpreting_backend"]


class _AtEachNode(torch.fx.Interpreter):
    def __init__(self, gm: torch.fx.GraphModule, driver: Driver) -> None:
        super().__init__(gm)
        self.driver = driver

    def run_node(self, node: torch.fx.Node) -> Any:
        with self.driver.at_node(node):
            return super().run_node(node)


def interpreting_backend(driver: Driver) -> Callable[..., Any]:
    """A torch.compile backend: aot_autograd, with forward and backward graphs run node by node through ``driver``."""

    def compile_part(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        def run(args: list[Any]) -> Any:
            with driver.measuring():  # on already when it sees between graphs too; here for the graph alone otherwise
                return _AtEachNode(gm, driver).run(*args)

        run._boxed_call = True  # type: ignore[attr-defined]  # aot_autograd's convention: one list of arguments
        return run

    return aot_autograd(fw_compiler=compile_part, bw_compiler=compile_part)
