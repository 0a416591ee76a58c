"""ATen level: aot_autograd's forward and backward graphs, their pins, and a training step on XLA."""

from __future__ import annotations

import copy

import pytest
import torch

import neurondev
from neurondev.render.fix_words import CPU_KERNEL_FIX
from tests.helpers import line_of


class Regressor(torch.nn.Module):
    """A small module with a loss: a device-pinned mask in the forward, a where() whose backward
    builds scalar_tensor(device=cpu) nodes."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 4)

    def forward(self, x, y):
        h = self.lin(x)
        keep = torch.arange(h.shape[-1], device=x.device) < 3
        h = h.masked_fill(~keep, 0.0)
        h = torch.where(h > 0, h, 0.1 * h)
        return ((h - y) ** 2).mean()


@pytest.fixture(scope="module")
def step():
    torch.manual_seed(0)
    return Regressor(), torch.randn(5, 8), torch.randn(5, 4)


def test_capture_at_aten_level_records_forward_and_backward_with_pins_and_lines(step):
    model, x, y = step
    captured = neurondev.capture(model, x, y, level="aten")
    assert [(g.dynamo_graph, g.part) for g in captured.aten_graphs] == [(0, "forward"), (0, "backward")]
    forward, backward = captured.aten_graphs
    (pin,) = neurondev.find_pins(forward.graph_module)
    assert (pin.function, pin.kind, pin.line) == ("aten.arange.default", "frozen", line_of(Regressor.forward, "torch.arange"))
    backward_pins = neurondev.find_pins(backward.graph_module)
    assert {p.function for p in backward_pins} == {"aten.scalar_tensor.default"}
    assert all(p.line == line_of(Regressor.forward, "torch.where") for p in backward_pins)
    assert len(forward.inputs) == 4 and all(isinstance(t, torch.Tensor) for t in forward.inputs)
    assert model.lin.weight.grad is None  # the user's module never ran a backward


@pytest.mark.xla
def test_a_training_step_runs_rewritten_on_xla_forward_and_backward_with_cpu_equal_gradients(step):
    model, x, y = step
    explanation = neurondev.explain(model, x, y, level="aten", quiet=True)
    assert [s.label for s in explanation.sections] == ["graph 0 forward", "graph 0 backward"]
    forward, backward = explanation.sections
    assert forward.before.error is not None and forward.before.error.node == "masked_fill"
    for section in explanation.sections:
        after = section.after
        assert after.error is None and after.graph_breaks == () and after.transfers_to_host == 0 and after.ok
    reference = copy.deepcopy(model)
    loss = reference(x, y)
    loss.backward()
    torch.testing.assert_close(forward.after.outputs[0].cpu(), loss.detach())
    weight_grad, bias_grad = backward.after.outputs[:2]
    torch.testing.assert_close(weight_grad.cpu(), reference.lin.weight.grad)
    torch.testing.assert_close(bias_grad.cpu(), reference.lin.bias.grad)
    card = explanation._repr_html_()
    assert "Graph 0 forward" in card and "Graph 0 backward" in card and "aten.scalar_tensor.default" in card


@pytest.mark.xla
def test_rerun_of_an_aten_explanation_keeps_its_forward_and_backward(step):
    model, x, y = step
    explanation = neurondev.explain(model, x, y, level="aten", run=False, quiet=True)
    again = explanation.rerun(target="xla:0")
    assert [s.label for s in again.sections] == ["graph 0 forward", "graph 0 backward"]
    assert all(s.after.ok for s in again.sections) and str(again.target) == "xla:0"
    assert explanation.before == () and str(explanation.target) == "xla"  # the first one is as it was


@pytest.mark.xla
def test_a_training_step_that_back_propagates_itself_is_explained_at_aten_level(step):
    model, x, y = step

    def train_step(model, x, y):
        loss = model(x, y)
        loss.backward()
        return loss

    explanation = neurondev.explain(train_step, model, x, y, level="aten", quiet=True)
    assert {s.key.part for s in explanation.sections} >= {"forward", "backward"}
    assert all(s.after is not None and s.after.error is None for s in explanation.sections)
    assert model.lin.weight.grad is None  # the user's module never ran a backward


class Attention(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(8, 24)

    def forward(self, x):
        q, k, v = self.qkv(x).view(1, 4, 3, 2, 4).unbind(2)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).sum()


@pytest.mark.xla
def test_cpu_kernels_an_aten_trace_picks_are_named_with_the_users_line_and_why():
    torch.manual_seed(0)
    explanation = neurondev.explain(Attention(), torch.randn(1, 4, 8), level="aten", quiet=True)
    kernels = explanation.cpu_kernels
    assert kernels and all("_for_cpu" in k.function for k in kernels)
    assert kernels[0].source.line == line_of(Attention.forward, "scaled_dot_product_attention")
    assert "no device rewrite" in CPU_KERNEL_FIX and "compare_traces" in CPU_KERNEL_FIX  # what a card says of each
    assert "CPU kernel(s) chosen while tracing on CPU" in explanation._repr_html_()
    with pytest.raises(neurondev.DevicePinsError, match="CPU kernel"):
        neurondev.check(Attention(), torch.randn(1, 4, 8), level="aten", native=False)
