"""capture(): trace on CPU, record every graph and dynamo break, leave the user's objects alone."""

from __future__ import annotations

import copy

import pytest
import torch

import neurondev
from neurondev import examples
from neurondev.trace.capture import trace_only


def test_seed_capture_records_one_graph_with_its_cpu_inputs(seed_capture):
    _, (x,), _ = examples.get("seed").build()
    assert len(seed_capture.graphs) == 1
    assert seed_capture.dynamo_breaks == ()
    (example,) = seed_capture.example_inputs[0]
    assert example.device.type == "cpu"
    torch.testing.assert_close(example, x)
    torch.testing.assert_close(seed_capture.output, examples.seed_function(x))


def test_nested_inputs_and_non_tensor_values_are_traced():
    def fn(batch, scale):
        a, (b, bias) = batch["a"], batch["pair"]
        return torch.zeros(3, device=a.device) + a * scale + b + bias

    batch = {"a": torch.ones(3), "pair": [torch.full((3,), 2.0), 0.5]}
    result = neurondev.capture(fn, batch, scale=3)
    torch.testing.assert_close(result.output, torch.full((3,), 5.5))
    assert len(result.graphs) == 1
    assert result.moved_inputs == ()


def test_dynamo_graph_breaks_are_reported_with_their_source_line():
    def fn(x):
        y = torch.ones(4, device=x.device) * x
        torch._dynamo.graph_break()
        return y + 1

    result = neurondev.capture(fn, torch.randn(4))
    assert len(result.graphs) == 2
    (brk,) = result.dynamo_breaks
    assert "graph_break" in brk.reason
    assert brk.source.file == __file__
    assert brk.source.code == "torch._dynamo.graph_break()"
    assert brk.line == fn.__code__.co_firstlineno + 2


def test_inputs_mutated_by_the_function_are_left_untouched():
    def fn(x):
        x.add_(1)
        return x * 2

    x = torch.zeros(3)
    result = neurondev.capture(fn, x)
    torch.testing.assert_close(x, torch.zeros(3))
    torch.testing.assert_close(result.output, torch.full((3,), 2.0))


def test_module_parameters_buffers_and_training_flag_are_left_untouched():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)).train()
    before = copy.deepcopy(model.state_dict())
    weight = model[0].weight
    neurondev.capture(model, torch.randn(8, 4))
    assert model.training and model[1].training
    assert model[0].weight is weight
    for name, value in model.state_dict().items():
        torch.testing.assert_close(value, before[name], msg=name)  # BatchNorm running stats included


def test_dynamo_config_and_the_users_code_caches_are_left_as_they_were():
    def fn(x):
        y = x + 1
        torch._dynamo.graph_break()
        return y * 2

    config_before = torch._dynamo.config.get_config_copy()
    neurondev.capture(fn, torch.randn(2))
    assert torch._dynamo.config.get_config_copy() == config_before
    assert torch._dynamo.eval_frame._debug_get_cache_entry_list(fn.__code__) == []


def test_a_function_that_takes_no_inputs_is_traced():
    result = neurondev.capture(lambda: torch.ones(2, device="cpu") * 3)
    torch.testing.assert_close(result.output, torch.full((2,), 3.0))


@pytest.mark.xla
def test_inputs_and_module_state_on_another_device_are_copied_to_cpu_and_recorded():
    from neurondev import xla

    device = xla.device()
    model = torch.nn.Linear(3, 2).to(device)
    x = torch.randn(4, 3).to(device)
    result = neurondev.capture(model, x)
    assert [(m.path, m.device) for m in result.moved_inputs] == [
        ("module.weight", str(device)),
        ("module.bias", str(device)),
        ("args[0]", str(device)),
    ]
    assert all(t.device.type == "cpu" for t in result.example_inputs[0])
    assert model.weight.device == device and x.device == device
    torch.testing.assert_close(result.output, model(x).detach().cpu())


def test_trace_only_records_the_graph_without_running_the_function():
    # world size 2 and a group that does not exist: running it would need a peer that is not there
    fn = examples.collective_function(2, "no-such-group")
    result = trace_only(fn, torch.arange(8, dtype=torch.float32))
    assert result.output is None and len(result.graphs) == 1
    assert list(neurondev.diagnose(result).node) == ["output"]


def test_dimensions_the_user_marked_dynamic_stay_dynamic():
    def fn(x):
        return torch.zeros(x.shape[0], device=x.device) + x

    x = torch.randn(8)
    torch._dynamo.mark_dynamic(x, 0)
    captured = neurondev.capture(fn, x)
    (size, _) = [n for n in captured.graphs[0].graph.nodes if n.op == "placeholder"]
    assert isinstance(size.meta["example_value"], torch.SymInt)  # the graph stays dynamic
    assert captured.example_inputs[0][0] == 8 and type(captured.example_inputs[0][0]) is int  # runs get the size it had
    assert [(n.kind, n.path, n.dims) for n in captured.notes] == [("dynamic marks kept", "args[0]", (0,))]
    plain = neurondev.capture(fn, torch.randn(8))
    assert len(plain.example_inputs[0]) == 1 and plain.notes == ()


def test_a_failing_trace_prints_nothing_of_torchs_own_and_chains_the_users_error(capfd):
    def fn(x):
        return x @ torch.randn(5, 5)

    with pytest.raises(neurondev.TraceError) as caught:
        neurondev.capture(fn, torch.randn(3, 3))
    out, err = capfd.readouterr()
    assert "Traceback" not in err and "FakeTensor" not in err and out == ""
    assert caught.value.__cause__ is not None and "\n" not in str(caught.value)
    import logging

    assert logging.getLogger("torch._dynamo").level == logging.NOTSET  # given back


def test_a_lambda_is_named_by_where_it_is():
    captured = neurondev.capture(lambda x: torch.ones(2, device=x.device) + x, torch.randn(2))
    assert captured.name.startswith("<lambda at test_capture.py:")
