"""The first node where XLA differs from CPU: the graph run node by node on both, the earliest differing node named."""

from __future__ import annotations

import pytest
import torch

import neurondev
from neurondev.render.sentences import describe
from neurondev.runs.first_difference import first_difference
from neurondev.xla.driver import XlaDriver

pytestmark = pytest.mark.xla


def noisy(x):
    scaled = x * 2
    noise = torch.rand(4, device=x.device)  # XLA's generator is not CPU's: the values part here
    return (scaled + noise).sum()


def steady(x):
    return (x * 2 + 1).cumsum(0)


def graphs_of(fn, *inputs):
    gm = neurondev.capture(fn, *inputs).graphs[0]
    result = neurondev.DeviceRewriterPass(target="xla")(gm)
    return gm, result.graph_module


def test_the_first_differing_node_is_named_with_its_function_and_line_not_the_ones_after_it():
    x = torch.randn(4)
    cpu_graph, xla_graph = graphs_of(noisy, x)
    difference = first_difference(cpu_graph, xla_graph, (x,), driver=XlaDriver(), seed=0)
    assert difference is not None and difference.function == "torch.rand" and difference.node == "noise"
    assert difference.source is not None and "torch.rand(4, device=x.device)" in difference.source.code
    assert not difference.comparison.matches and "torch.rand" in describe(difference)


def test_a_graph_that_agrees_node_by_node_has_no_first_difference_and_its_inputs_are_untouched():
    x = torch.randn(4)
    kept = x.clone()
    cpu_graph, xla_graph = graphs_of(steady, x)
    assert first_difference(cpu_graph, xla_graph, (x,), driver=XlaDriver()) is None
    torch.testing.assert_close(x, kept, rtol=0, atol=0)
    assert x.device.type == "cpu"
