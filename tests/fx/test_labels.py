"""A node's label for people: what it calls at which line, a weight by its dotted name, an input by its name."""

from __future__ import annotations

import torch

import neurondev
from neurondev.fx.labels import node_label
from tests.helpers import line_of


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.register_buffer("scale_factor", torch.ones(4))

    def forward(self, x):
        return self.proj(x) * self.scale_factor + torch.arange(4, device=x.device)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([Block(), Block()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def labels_of(capture):
    return {node.name: node_label(node) for node in capture.graphs[0].graph.nodes}


def test_weights_and_buffers_by_their_dotted_names_inputs_by_theirs_calls_by_function_and_line():
    capture = neurondev.capture(Net(), torch.randn(2, 4))
    labels = labels_of(capture)
    assert {"layers.0.proj.weight", "layers.1.proj.bias", "layers.0.scale_factor", "output"} <= set(labels.values())
    line = line_of(Block.forward, "torch.arange")
    arange = [label for label in labels.values() if label.startswith("torch.arange")]
    assert arange == [f"torch.arange at test_labels.py:{line}"] * 2
    assert [label for label in labels.values() if label.startswith("input")] == ["input args[0]"]


def test_a_plain_function_argument_is_its_name():
    def fn(values, *, scale):
        return values.cumsum(0) * scale

    labels = labels_of(neurondev.capture(fn, torch.randn(3), scale=torch.tensor(2.0)))
    assert sorted(label for label in labels.values() if label.startswith("input")) == ["input args[0]", "input scale"]
    assert f"Tensor.cumsum at test_labels.py:{line_of(fn, 'cumsum')}" in labels.values()
