"""run_on_xla on the real XLA device: the graph break before the pass, none after, values equal."""

from __future__ import annotations

import copy

import pytest
import torch

import neurondev
import neurondev.trace.source
from neurondev import examples, xla
from neurondev.render.sentences import describe
from tests.helpers import line_of

pytestmark = pytest.mark.xla


def test_frozen_seed_graph_breaks_at_copy_and_lands_on_cpu(seed_capture):
    record = neurondev.run_on_xla(seed_capture.graphs[0], *seed_capture.example_inputs[0])
    assert record.error is None and record.matches_reference is True
    (brk,) = record.graph_breaks
    assert (brk.node, brk.function, brk.executions, brk.transfers_to_host) == ("copy_", "Tensor.copy_", 1, 1)
    assert brk.line == line_of(examples.seed_function, "out.copy_") and brk.code == "out.copy_(torch.relu(x) * 2)"
    assert (record.executions, record.transfers_to_host) == (1, 1)
    assert record.output_devices == ("cpu",)
    assert record.node_devices["out"] == "cpu" and record.node_devices["mul"] == "xla:0"
    assert [(c.source, c.node, c.from_device, c.to_device) for c in record.crossings] == [("mul", "copy_", "xla:0", "cpu")]
    assert not record.ok


def test_rewritten_seed_graph_has_no_break_no_transfer_and_equal_values(seed_capture):
    gm, _ = neurondev.rewrite_copy(seed_capture.graphs[0])
    record = neurondev.run_on_xla(gm, *seed_capture.example_inputs[0])
    assert record.graph_breaks == () and record.crossings == ()
    assert (record.executions, record.transfers_to_host, record.transfers_to_device) == (0, 0, 0)
    assert record.output_devices == ("xla:0",)
    assert record.matches_reference is True and record.ok and record.uploads == ()
    torch.testing.assert_close(record.outputs[0].cpu(), seed_capture.output)
    assert record.seconds is not None and record.seconds > 0


def test_collective_example_breaks_frozen_and_not_rewritten(collective_capture):
    (gm,) = collective_capture.graphs
    (x,) = collective_capture.example_inputs[0]
    frozen = neurondev.run_on_xla(gm, x)
    rewritten = neurondev.run_on_xla(neurondev.rewrite_copy(gm)[0], x)
    assert [b.node for b in frozen.graph_breaks] == ["copy_"] and frozen.output_devices == ("cpu",)
    assert rewritten.graph_breaks == () and rewritten.transfers_to_host == 0
    assert rewritten.output_devices == ("xla:0",)
    torch.testing.assert_close(rewritten.outputs[0].cpu(), x)  # world size 1: the sum over one rank
    assert frozen.matches_reference and rewritten.matches_reference


@pytest.mark.slow
def test_frozen_gpt2_fails_at_the_position_embedding_with_its_source_line(gpt2_capture):
    record = neurondev.run_on_xla(gpt2_capture.graphs[0], *gpt2_capture.example_inputs[0])
    assert record.error is not None
    assert record.error.node == "position_embeds"
    assert "Expected XLA tensor" in str(record.error.exception)
    assert record.error.file.endswith("modeling_gpt2.py") and "self.wpe(position_ids)" in record.error.code
    assert "failed on xla:0" in describe(record)


@pytest.mark.slow
def test_kwargs_only_gpt2_breaks_at_each_positional_to_on_every_call(gpt2_capture):
    (gm,) = gpt2_capture.graphs
    kwargs_only, _ = neurondev.rewrite_copy(gm, rewrite_positional=False)
    record = neurondev.run_on_xla(kwargs_only, *gpt2_capture.example_inputs[0], repeat=0)
    positional = neurondev.diagnose(kwargs_only)
    assert [b.node for b in record.graph_breaks] == list(positional.node)
    assert all(b.function == "Tensor.to" and b.transfers_to_host == 1 for b in record.graph_breaks)
    assert record.transfers_to_host == 3 and record.transfers_to_device == 3 and record.executions >= 3
    assert record.matches_reference is True


@pytest.mark.slow
def test_default_rewrite_gpt2_runs_with_no_break_and_equal_logits(gpt2_capture, gpt2):
    (gm,) = gpt2_capture.graphs
    record = neurondev.run_on_xla(neurondev.rewrite_copy(gm)[0], *gpt2_capture.example_inputs[0], repeat=0)
    assert record.graph_breaks == () and record.executions == 0
    assert record.transfers_to_host == 0 and record.transfers_to_device == 0
    assert record.matches_reference is True and record.ok
    model, (input_ids,), kwargs = gpt2
    with torch.no_grad():
        eager = model(input_ids, **kwargs).logits
    torch.testing.assert_close(record.outputs[0].cpu(), eager)


def test_users_graph_inputs_and_metrics_are_left_alone(seed_capture):
    gm = seed_capture.graphs[0]
    code, x = gm.code, seed_capture.example_inputs[0][0]
    x_before = x.clone()
    xla.device()
    before = xla.counts()
    neurondev.run_on_xla(gm, x)
    after = xla.counts()
    assert gm.code == code
    torch.testing.assert_close(x, x_before)
    assert after.executions > before.executions  # cumulative: never cleared under the user
    assert after.transfers_to_host > before.transfers_to_host


def test_graph_parameters_move_to_the_device_and_the_module_stays_on_cpu():
    model = torch.nn.Linear(4, 3)
    gm = torch.fx.symbolic_trace(model)
    x = torch.randn(2, 4)
    record = neurondev.run_on_xla(gm, x)
    assert record.ok and record.output_devices == ("xla:0",)
    assert gm.weight.device.type == "cpu"
    torch.testing.assert_close(record.outputs.cpu(), model(x).detach())


def test_wrong_reference_is_reported_as_a_mismatch(seed_capture):
    record = neurondev.run_on_xla(seed_capture.graphs[0], *seed_capture.example_inputs[0], reference=torch.zeros(64), repeat=0)
    assert record.matches_reference is False and "Mismatched elements" in record.mismatch
    (x,) = seed_capture.example_inputs[0]
    off = int((x > 0).sum())  # relu(x) * 2 is 0, as the wrong reference is, wherever x <= 0
    assert 0 < off < 64 and f"values DIFFER ({off} of 64 elements off" in describe(record)
    assert record.comparison.max_abs_error > 0


def test_a_node_that_fails_on_the_device_is_recorded_not_raised():
    def fn(x):
        return x.cuda() + 1

    graph = torch.fx.symbolic_trace(fn)
    record = neurondev.run_on_xla(copy.deepcopy(graph), torch.randn(2), repeat=0)
    assert record.error is not None and record.error.node == "cuda"


def test_an_op_without_an_xla_kernel_is_counted_as_a_cpu_fallback_at_its_node():
    def fn(x):
        return torch.histc(x * 2, bins=4) + 1

    captured = neurondev.capture(fn, torch.randn(16))
    record = neurondev.run_on_xla(captured.graphs[0], *captured.example_inputs[0], repeat=0)
    assert record.fallback_ops == {"aten::histc": 1}
    assert [b.node for b in record.graph_breaks] == ["histc"]
    assert record.matches_reference is True


def test_nan_in_both_outputs_is_a_match():
    def fn(x):
        out = torch.empty(4, device=x.device)
        out.copy_(x.log())
        return out

    captured = neurondev.capture(fn, torch.tensor([-1.0, 1.0, 2.0, -3.0]))
    record = neurondev.run_on_xla(neurondev.rewrite_copy(captured.graphs[0])[0], *captured.example_inputs[0], repeat=0)
    assert record.matches_reference is True and "DIFFER" not in describe(record)
    assert record.comparison.elements_off == 0


def long_chain(x):
    # 100 steps: XLA's fused float32 chain already differs from eager's step-by-step rounding here (254 of 256
    # elements, ~1e-5, measured); 500 steps gave the same verdicts in 5.6 s against 0.4 s.
    for _ in range(100):
        x = x * 1.0001 + 0.0001
    return x + torch.zeros(x.shape, device=x.device)


def test_a_fused_chain_keeps_its_error_figures_and_tolerances_are_the_users():
    captured = neurondev.capture(long_chain, torch.randn(256, generator=torch.Generator().manual_seed(0)))
    gm = neurondev.rewrite_copy(captured.graphs[0])[0]
    (x,) = captured.example_inputs[0]
    strict = neurondev.run_on_xla(gm, x, repeat=0, rtol=0.0, atol=0.0)
    loose = neurondev.run_on_xla(gm, x, repeat=0, rtol=1e-4, atol=1e-4)
    assert strict.ok and loose.ok  # on the device throughout: the values are a separate verdict
    assert loose.matches_reference is True
    assert strict.comparison.max_abs_error == loose.comparison.max_abs_error
    assert strict.comparison.elements == 256 and loose.comparison.rtol == 1e-4
    if strict.comparison.max_abs_error > 0:  # XLA fused what eager rounded step by step (measured here: 254 of 256)
        assert strict.matches_reference is False and strict.comparison.elements_off > 0
        assert "elements off" in describe(strict)
    else:  # a processor that rounds the chain as eager does: no element off, and the strict verdict says so
        assert strict.matches_reference is True and strict.comparison.elements_off == 0 and "DIFFER" not in describe(strict)


def uploads(x):
    table = torch.tensor([1.0, 2.0, 3.0, 4.0], device=x.device)
    noise = torch.rand(4, device=x.device)
    return x * table + noise * 0


def test_uploads_of_host_built_values_are_attributed_to_their_nodes_and_are_no_break():
    captured = neurondev.capture(uploads, torch.randn(4))
    record = neurondev.run_on_xla(neurondev.rewrite_copy(captured.graphs[0])[0], *captured.example_inputs[0], repeat=0)
    assert record.graph_breaks == () and record.transfers_to_host == 0
    assert record.ok
    names = [u.node for u in record.uploads]
    assert "table" in names and all(u.transfers_to_device >= 1 for u in record.uploads)
    (table,) = [u for u in record.uploads if u.node == "table"]
    assert table.line == line_of(uploads, "torch.tensor([1.0") and "torch.tensor" in table.code
    assert sum(u.transfers_to_device for u in record.uploads) == record.transfers_to_device
    assert "uploads of host data on every call" in describe(record) and "table" in describe(record)


def test_a_failure_at_an_input_says_input_i_not_a_line_inside_neurondev(seed_capture):
    gm = seed_capture.graphs[0]
    for node in gm.graph.nodes:
        assert node.op != "placeholder" or neurondev.trace.source.source_of(node) is None
    table = neurondev.diagnose(seed_capture)
    assert not any("neurondev/trace/" in str(file) for file in table.file)


def test_a_run_error_at_an_input_names_the_input_not_a_line():
    from neurondev.runs.run_records import RunError

    error = RunError("l_x_", "l_x_", RuntimeError("cannot place it"), None, input_index=1)
    assert str(error) == "RuntimeError at input 1 (l_x_): cannot place it"
    assert error.to_dict()["input_index"] == 1 and error.to_dict()["file"] is None


def test_the_bridge_clears_no_counter_and_later_fallbacks_still_count():
    """torch_xla's bridge clears the counters for every node it probes; inside neurondev that is virtual."""
    import torch_xla.debug.metrics as metrics

    def falls_back_on_xla(x):
        flags = (x > 0).float() if x.device.type == "cpu" else (x > 0).int()  # as transformers' MoE code picks
        return torch.histc(flags, bins=2, min=0, max=1)  # on XLA: the CPU has no int kernel, the bridge's probe fails

    program = neurondev.explain(falls_back_on_xla, torch.randn(8), quiet=True).program.as_written
    assert "histogram_cpu" in program.failure.message
    names = metrics.counter_names()
    assert len(names) == len(set(names))  # giving counters back by increment made a second one of the same name

    def histc(x):
        return torch.histc(x * 2, bins=4) + 1

    captured = neurondev.capture(histc, torch.randn(16))
    record = neurondev.run_on_xla(captured.graphs[0], *captured.example_inputs[0], repeat=0)
    assert record.fallback_ops == {"aten::histc": 1}
