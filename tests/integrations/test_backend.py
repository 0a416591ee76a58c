"""The "neurondev" torch.compile backend, and what it fixes compared with openxla's own constructor mover."""

from __future__ import annotations

import copy
import logging

import pytest
import torch

import neurondev
from neurondev import examples, xla
from neurondev import testing as bridge


def test_backend_rewrites_before_handing_over_to_the_inner_backend(seed_capture):
    received = []

    def inner(gm, example_inputs):
        received.append(gm)
        return gm.forward

    gm = copy.deepcopy(seed_capture.graphs[0])
    neurondev.backend(gm, seed_capture.example_inputs[0], inner=inner, target="xla:0")
    (handed,) = received
    assert handed is gm and neurondev.diagnose(handed).empty
    assert "device(type='xla', index=0)" in handed.code


def test_torch_compile_options_reach_the_backend(seed_capture):
    received = []
    gm = copy.deepcopy(seed_capture.graphs[0])
    options = {"inner": lambda g, _: received.append(g) or g.forward, "target": "xla:0", "rewrite_positional": False}
    neurondev.backend(gm, seed_capture.example_inputs[0], options=options)
    assert received and neurondev.diagnose(received[0]).empty


@pytest.mark.xla
def test_torch_compile_backend_by_name_keeps_the_output_on_xla_and_logs_rewrites(caplog):
    device = xla.device()
    x = torch.randn(64)
    caplog.set_level(logging.INFO, logger="neurondev")
    compiled = torch.compile(examples.seed_function, backend="neurondev")
    out = compiled(x.to(device))
    assert out.device.type == "xla"
    torch.testing.assert_close(out.cpu(), examples.seed_function(x))
    torch._dynamo.reset()


@pytest.mark.xla
def test_backend_on_a_graph_traced_on_cpu_logs_each_rewrite(seed_capture, caplog):
    caplog.set_level(logging.INFO, logger="neurondev")
    report = bridge.bridge_report(seed_capture.graphs[0], *seed_capture.example_inputs[0], rewrite=True)
    assert report.error is None
    assert "neurondev backend: out kwarg: device(type='cpu') -> device(type='xla', index=0)" in caplog.text


@pytest.mark.xla
def test_openxla_mover_leaves_the_seed_on_cpu_and_neurondev_does_not(seed_capture):
    (x,) = seed_capture.example_inputs[0]
    openxla = bridge.bridge_report(seed_capture.graphs[0], x, rewrite=False)
    ours = bridge.bridge_report(seed_capture.graphs[0], x, rewrite=True)
    assert (openxla.partitions, openxla.fallback_nodes, openxla.output_devices) == (1, ["empty", "copy"], ["cpu"])
    assert (ours.partitions, ours.fallback_nodes, ours.output_devices) == (1, [], ["xla:0"])
    torch.testing.assert_close(ours.outputs[0].cpu(), seed_capture.output)
    torch.testing.assert_close(openxla.outputs[0], seed_capture.output)


@pytest.mark.xla
def test_same_comparison_for_the_collective_example(collective_capture):
    (x,) = collective_capture.example_inputs[0]
    openxla = bridge.bridge_report(collective_capture.graphs[0], x, rewrite=False)
    ours = bridge.bridge_report(collective_capture.graphs[0], x, rewrite=True)
    assert openxla.output_devices == ["cpu"] and openxla.fallback_nodes
    assert (ours.partitions, ours.fallback_nodes, ours.output_devices) == (1, [], ["xla:0"])


@pytest.mark.xla
@pytest.mark.slow
def test_openxla_cannot_compile_the_frozen_gpt2_and_neurondev_makes_one_partition(gpt2_capture, gpt2):
    inputs = gpt2_capture.example_inputs[0]
    openxla = bridge.bridge_report(gpt2_capture.graphs[0], *inputs, rewrite=False)
    ours = bridge.bridge_report(gpt2_capture.graphs[0], *inputs, rewrite=True)
    assert "FakeTensor Device Propagation" in openxla.error and "xla:0, cpu" in openxla.error
    assert ours.error is None and (ours.partitions, ours.fallback_nodes) == (1, [])
    model, (input_ids,), kwargs = gpt2
    with torch.no_grad():
        torch.testing.assert_close(ours.outputs[0].cpu(), model(input_ids, **kwargs).logits)


@pytest.mark.xla
def test_the_users_torch_xla_counters_survive_the_bridge_clearing_them(seed_capture):
    import torch_xla
    import torch_xla.debug.metrics as metrics

    xla.device()
    torch_xla._XLAC._xla_increment_counter("NeurondevUserCounter", 5)
    bridge.bridge_report(seed_capture.graphs[0], *seed_capture.example_inputs[0], rewrite=False)
    assert metrics.counter_value("NeurondevUserCounter") == 5


@pytest.mark.xla
def test_bridge_report_names_an_input_that_cannot_move(seed_capture):
    with pytest.raises(neurondev.XlaInputError, match=r"input\[0\] .*meta"):
        bridge.bridge_report(seed_capture.graphs[0], torch.empty(64, device="meta"), rewrite=True)


def model_code(x):
    """Ordinary model code: a causal mask, rotary positions, a cache written in place, a loss target."""
    n = x.shape[0]
    mask = torch.triu(torch.ones(n, n, device=x.device), diagonal=1).bool()
    positions = torch.arange(n, device=x.device)
    cache = torch.zeros(n, n, device=x.device)
    cache[positions] = x.masked_fill(mask, 0.0)
    return (cache + positions).sum() - torch.tensor(0.0, device=x.device)


@pytest.mark.xla
def test_host_inputs_run_unchanged_through_the_inner_backend_and_say_so_once(caplog):
    caplog.set_level(logging.INFO, logger="neurondev")
    x = torch.randn(6, 6)
    compiled = torch.compile(model_code, backend="neurondev")
    try:
        out = compiled(x)
    finally:
        torch._dynamo.reset()
    assert out.device.type == "cpu"
    torch.testing.assert_close(out, model_code(x))
    assert "graph runs unchanged" in caplog.text
    assert "graph runs unchanged" not in caplog.text.split("graph runs unchanged", 1)[1]


@pytest.mark.xla
def test_inputs_are_placed_on_the_host_or_on_xla_and_a_0_dim_host_tensor_mixes_with_either():
    from neurondev.integrations.backend import input_placement

    gm = torch.fx.symbolic_trace(lambda a, b, s: a + b + s)
    assert input_placement(gm, [torch.randn(2), torch.randn(2), 3]).on_host_only
    both = input_placement(gm, [_on_xla(), _on_xla(), torch.tensor(1.0)])
    assert both.on_xla == (0, 1) and both.host == ()
    mixed = input_placement(gm, [_on_xla(), torch.randn(2), 3])
    assert mixed.on_xla == (0,) and mixed.host == (1,) and mixed.host_names == ("b (cpu)",)


TABLE = torch.arange(6, dtype=torch.float32)  # a host tensor in a global: dynamo lifts it into a graph input


def reads_a_host_table(x):
    return x * 2 + TABLE.to(x.device)


@pytest.mark.xla
def test_a_host_tensor_a_graph_on_xla_reads_is_uploaded_on_every_call_and_named_once(caplog):
    import torch_xla

    from neurondev.xla import counters

    caplog.set_level(logging.INFO, logger="neurondev")
    x = torch.randn(6)
    compiled = torch.compile(reads_a_host_table, backend="neurondev")
    try:
        out = compiled(x.to(xla.device()))  # compiles
        counters.sync()
        before = counters.counts()
        again = compiled(x.to(xla.device()))
        torch_xla.sync()
        counters.settle()
        delta = counters.counts() - before
    finally:
        torch._dynamo.reset()
    torch.testing.assert_close(out.cpu(), reads_a_host_table(x))
    torch.testing.assert_close(again.cpu(), reads_a_host_table(x))
    assert out.device.type == "xla"
    assert "are host tensors read by a graph on" in caplog.text and "(cpu)" in caplog.text
    assert delta.transfers_to_device == 2  # x, moved by the test, and TABLE, moved by the backend
    assert delta.transfers_to_host == 0


def _on_xla():
    return torch.randn(2).to(xla.device())


COUNT = torch.zeros(1)  # a host counter the program increments


def counted(x):
    COUNT.add_(1)
    return x * 2


class Tally(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.last = torch.zeros(())  # a plain host attribute, assigned from the graph's output

    def forward(self, x):
        self.last = self.lin(x).sum().detach().cpu()
        return self.lin(x)


@pytest.mark.xla
def test_a_programs_writes_into_host_tensors_stay_with_the_backend_and_host_results_stay_on_the_host(caplog):
    from neurondev._compat.dynamo import graphs_made

    caplog.set_level(logging.WARNING, logger="neurondev")
    device = xla.device()
    start = COUNT.clone()
    compiled = torch.compile(counted, backend="neurondev")
    try:
        for _ in range(3):
            compiled(torch.randn(4).to(device))
        assert COUNT.item() == start.item() + 3  # every write kept, as openxla and eager torch_xla keep them
        assert "COUNT (cpu) are host tensors read by a graph on xla:0" in caplog.text and "copied back after it" in caplog.text
        model = Tally().to(device)
        model.last = torch.zeros(())
        tally = torch.compile(model, backend="neurondev")
        made = graphs_made()
        for _ in range(3):
            tally(torch.randn(2, 3).to(device))
        assert model.last.device.type == "cpu" and graphs_made() - made == 1  # the host attribute stayed there: no recompile
    finally:
        torch._dynamo.reset()


def handed_to_the_host(x):
    return (x + 1).cpu() * 2


def made_on_the_host(x):
    return x.new_zeros((2, 3), device="cpu"), x * 2


@pytest.mark.parametrize("fn", [handed_to_the_host, made_on_the_host])
def test_swapping_in_the_neurondev_backend_changes_no_results_device_nor_value_on_the_host_device(fn):
    device = neurondev.host_device()
    x = torch.randn(4).to(device)
    results = {}
    for name in ("aot_eager", "neurondev"):
        torch._dynamo.reset()
        out = torch.compile(fn, backend=name)(x)
        results[name] = out if isinstance(out, tuple) else (out,)
    assert [t.device for t in results["neurondev"]] == [t.device for t in results["aot_eager"]] and results["aot_eager"][
        0
    ].device.type == "cpu"
    for mine, theirs in zip(results["neurondev"], results["aot_eager"]):
        torch.testing.assert_close(mine.cpu(), theirs.cpu())


@pytest.mark.xla
@pytest.mark.parametrize("fn", [handed_to_the_host, made_on_the_host])
def test_swapping_in_the_neurondev_backend_changes_no_results_device_nor_value_on_xla(fn):
    x = torch.randn(4).to(xla.device())
    results = {}
    for name in ("openxla", "neurondev"):
        torch._dynamo.reset()
        out = torch.compile(fn, backend=name)(x)
        results[name] = out if isinstance(out, tuple) else (out,)
    assert (
        [t.device.type for t in results["neurondev"]]
        == [t.device.type for t in results["openxla"]]
        == (["cpu"] if fn is handed_to_the_host else ["cpu", "xla"])
    )
    for mine, theirs in zip(results["neurondev"], results["openxla"]):
        torch.testing.assert_close(mine.cpu(), theirs.cpu())
