"""Trace twice: device-specialised code found line by line, graphs in one trace only, the native yardstick."""

from __future__ import annotations

import pytest
import torch

import neurondev
from neurondev.render.sentences import describe
from tests.helpers import line_of

pytestmark = pytest.mark.xla


def issue_example(x):
    flags = (x > 0).float() if x.device.type == "cpu" else (x > 0).int()
    counts = torch.histc(flags, bins=2, min=0, max=1)
    return x * torch.arange(x.shape[0], device=x.device) + counts.sum()


def test_the_issue_example_differs_on_one_line_and_the_native_run_fails_at_histc():
    comparison = neurondev.compare_traces(issue_example, torch.randn(8))
    (difference,) = comparison.differences
    assert difference.line == line_of(issue_example, "flags =")
    assert difference.cpu_ops == ("operator.gt", "Tensor.float") and difference.xla_ops == ("operator.gt", "Tensor.int")
    assert comparison.rewritten_is_native == (False,) and not comparison.agree
    assert "histogram_cpu" in comparison.native_error
    failure = comparison.native_failure
    assert failure.node == "counts" and failure.line == line_of(issue_example, "torch.histc")
    data = comparison.to_dict()
    assert data["differences"][0]["xla_ops"] == ["operator.gt", "Tensor.int"] and data["agree"] is False


class PicksByDevice(torch.nn.Module):
    """Picks an implementation by device type, as model libraries do for kernels a CPU lacks."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        if h.device.type == "cpu":
            return torch.nn.functional.gelu(h, approximate="none")
        return torch.nn.functional.gelu(h, approximate="tanh")


def test_a_module_that_picks_an_implementation_by_device_is_found_with_the_modules_state_on_xla():
    module = PicksByDevice()
    weight = module.proj.weight
    comparison = neurondev.compare_traces(module, torch.randn(2, 8))
    cpu_only, xla_only = comparison.differences  # each branch is a line of its own
    assert (cpu_only.code, cpu_only.xla_ops) == ('return torch.nn.functional.gelu(h, approximate="none")', ())
    assert (xla_only.code, xla_only.cpu_ops) == ('return torch.nn.functional.gelu(h, approximate="tanh")', ())
    assert cpu_only.cpu_ops == xla_only.xla_ops == ("torch._C._nn.gelu",)
    assert comparison.native_error is None and module.proj.weight is weight and weight.device.type == "cpu"


def graph_count_differs(x):
    y = torch.zeros(4, device=x.device) + x
    if x.device.type == "cpu":
        print("on the host")  # a graph break, only when traced on CPU
    return y * 2


def test_a_function_whose_graph_count_differs_between_the_traces():
    comparison = neurondev.compare_traces(graph_count_differs, torch.randn(4))
    assert len(comparison.cpu.graphs) == 2 and len(comparison.native.graphs) == 1
    assert comparison.only_in_cpu == (1,) and comparison.only_in_xla == ()
    assert "graphs 2 on CPU vs 1 on XLA" in describe(comparison)


def only_device_arguments(x):
    out = torch.empty(x.shape[0], device=x.device)
    out.copy_(torch.relu(x) * 2 + torch.arange(x.shape[0], device=x.device))
    return out


def test_where_only_device_arguments_differ_the_rewritten_graph_is_the_native_one():
    comparison = neurondev.compare_traces(only_device_arguments, torch.randn(8))
    assert comparison.differences == () and comparison.rewritten_is_native == (True,) and comparison.agree


def test_explain_native_shows_the_section_and_the_measured_ratio():
    explanation = neurondev.explain(only_device_arguments, torch.randn(8), native=True, quiet=True)
    (section,) = explanation.sections
    assert explanation.traces.agree and section.native is not None and section.native.ratio > 0
    card = explanation._repr_html_()
    assert "Traced natively on XLA" in card and "rewritten/native" in card
    data = explanation.to_dict()
    assert data["native"]["agree"] is True and data["graphs"][0]["native_ratio"] == pytest.approx(section.native.ratio)


def test_explain_native_shows_device_specialised_lines_in_the_card():
    explanation = neurondev.explain(issue_example, torch.randn(8), native=True, quiet=True)
    card = explanation._repr_html_()
    assert "Tensor.float" in card and "Tensor.int" in card and "fails on XLA" in card
    assert explanation.sections[0].native is None  # no yardstick where the traces differ


class Decoder(torch.nn.Module):
    """A module that appends to a KV cache it is given, as a decoder step does."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x, cache):
        cache.append(self.proj(x))
        return torch.cat(cache) * torch.ones(1, 4, device=x.device)


def test_module_and_cache_arguments_go_to_xla_for_the_native_trace_and_stay_the_users():
    model, cache = Decoder(), [torch.zeros(1, 4)]

    def step(model, x, cache):
        return model(x, cache)

    comparison = neurondev.compare_traces(step, model, torch.randn(1, 4), cache)
    assert comparison.native_error is None and comparison.native.graphs
    assert len(cache) == 1 and model.proj.weight.device.type == "cpu"
    with pytest.raises(neurondev.DevicePinsError):  # never a TraceError from the second trace
        neurondev.check(step, model, torch.randn(1, 4), cache)
    ex = neurondev.explain(step, model, torch.randn(1, 4), cache, native=True, quiet=True)
    assert ex.traces is not None and ex.traces.native_error is None and len(cache) == 1
