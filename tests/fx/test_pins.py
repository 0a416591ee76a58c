"""diagnose() and the pin finder: exactly the pins a user must see, with their source lines."""

from __future__ import annotations

import inspect

import pytest
import torch

import neurondev
from neurondev import examples
from neurondev.fx.pins import COLUMNS
from tests.helpers import build_graph, line_of


def test_seed_example_has_exactly_the_torch_empty_pin(seed_capture):
    table = neurondev.diagnose(seed_capture)
    assert list(table.columns) == list(COLUMNS)
    assert len(table) == 1
    pin = table.iloc[0]
    assert (pin.graph, pin.node, pin.op, pin.function) == (0, "out", "call_function", "torch.empty")
    assert pin.device == torch.device("cpu")
    assert (pin.format, pin.location, pin.kind) == ("torch.device", "kwarg", "frozen")
    assert pin.kwargs_pass and pin.default_pass
    assert pin.file == inspect.getsourcefile(examples.seed_function)
    assert pin.line == line_of(examples.seed_function, "torch.empty")
    assert pin.code == "out = torch.empty(64, dtype=torch.float32, device=x.device)"
    assert pin.users == ("copy_", "output")


def test_collective_example_matches_the_seed_documents_traced_graph(collective_capture):
    (gm,) = collective_capture.graphs
    targets = [str(node.target) for node in gm.graph.nodes if node.op == "call_function"]
    assert "_c10d_functional.reduce_scatter_tensor" in targets
    assert "_c10d_functional.wait_tensor" in targets
    table = neurondev.diagnose(collective_capture)
    assert len(table) == 1
    pin = table.iloc[0]
    assert (pin.function, pin.location, pin.kind) == ("torch.empty", "kwarg", "frozen")
    assert pin.device == torch.device("cpu")
    assert pin.line == line_of(examples.collective_function, "torch.empty")
    assert "copy_" in pin.users


def test_rewritten_seed_code_names_the_target_and_no_cpu(seed_capture):
    gm, rewrites = neurondev.rewrite_copy(seed_capture.graphs[0])
    assert "device(type='xla')" in gm.code
    assert "cpu" not in gm.code
    assert [(r.node, r.location, r.old, r.new) for r in rewrites] == [("out", "kwarg", torch.device("cpu"), torch.device("xla"))]
    assert "cpu" in seed_capture.graphs[0].code  # the captured graph itself is untouched
    assert neurondev.diagnose(gm).empty


@pytest.mark.slow
def test_tiny_gpt2_has_five_kwarg_pins_and_three_positional_to_pins(gpt2_capture):
    table = neurondev.diagnose(gpt2_capture)
    kwargs = table[table.location == "kwarg"]
    positional = table[table.location == "arg[1]"]
    assert len(table) == 8
    assert list(kwargs.function) == ["torch.arange"] * 5
    assert list(positional.function) == ["Tensor.to"] * 3
    assert all(device == torch.device("cpu") for device in table.device)
    assert kwargs.kwargs_pass.all() and not positional.kwargs_pass.any()
    assert table.default_pass.all()
    assert any("position_ids = torch.arange(" in code for code in kwargs.code)
    assert any("position_embeds.to(inputs_embeds.device)" in code for code in positional.code)
    assert all(file.endswith(".py") and line > 0 for file, line in zip(table.file, table.line))


@pytest.mark.slow
def test_tiny_gpt2_pins_are_all_rewritten_by_default_and_positional_ones_kept_by_kwargs_only(gpt2_capture):
    (gm,) = gpt2_capture.graphs
    default, default_rewrites = neurondev.rewrite_copy(gm)
    kwargs_only, kwargs_rewrites = neurondev.rewrite_copy(gm, rewrite_positional=False)
    assert len(default_rewrites) == 8 and neurondev.diagnose(default).empty
    assert len(kwargs_rewrites) == 5
    left = neurondev.diagnose(kwargs_only)
    assert list(left.location) == ["arg[1]"] * 3
    assert len(neurondev.diagnose(gm)) == 8  # the capture's graph is untouched


def test_none_target_type_and_graph_values_are_not_pins():
    gm = build_graph(
        ("call_function", torch.empty, (2,), {"device": None}),
        ("call_function", torch.empty, (2,), {"device": torch.device("xla", 1)}),
        ("call_function", torch.empty, (2,), {"device": "xla"}),
        ("call_method", "to", ("x", torch.float16), {}),
        ("call_method", "to", ("x", "x"), {}),
        ("call_function", torch.empty, (2,), {"device": "not a device"}),
    )
    assert neurondev.diagnose(gm).empty


def test_every_positional_form_is_found():
    gm = build_graph(
        ("call_method", "to", ("x", torch.device("cpu")), {}),
        ("call_method", "to", ("x", "cuda:1", torch.float16), {}),
        ("call_method", "to", ("x", 0), {}),
        ("call_function", torch.Tensor.to, ("x", "cpu"), {}),
        ("call_function", torch.device, ("cuda", 1), {}),
        ("call_method", "cpu", ("x",), {}),
        ("call_method", "cuda", ("x", 2), {}),
        ("call_function", torch.ops.aten.to.device, ("x", torch.device("cpu"), torch.float32), {}),
    )
    table = neurondev.diagnose(gm)
    assert list(zip(table.node, table.location, table.format)) == [
        ("to", "arg[1]", "torch.device"),
        ("to_1", "arg[1]", "str"),
        ("to_2", "arg[1]", "int"),
        ("to_3", "arg[1]", "str"),
        ("device_1", "arg[0]", "str"),
        ("cpu", "method", "other"),
        ("cuda", "method", "other"),
        ("to_device", "arg[1]", "torch.device"),
    ]
    assert list(table.function)[:6] == ["Tensor.to"] * 4 + ["torch.device", "Tensor.cpu"]
    assert table.device[4] == "cuda" and table.device[6] == torch.device("cuda", 2)
    assert not table.kwargs_pass.any() and table.default_pass.all()


def test_meta_is_reported_rewritten_by_the_documented_pass_and_left_by_the_default():
    gm = build_graph(("call_function", torch.empty, (2,), {"device": "meta"}))
    (pin,) = neurondev.find_pins(gm)
    assert pin.device == "meta" and pin.kwargs_pass and not pin.default_pass


def test_target_decides_what_is_a_pin():
    gm = build_graph(
        ("call_function", torch.empty, (2,), {"device": "cpu"}),
        ("call_function", torch.empty, (2,), {"device": "cuda"}),
    )
    assert list(neurondev.diagnose(gm, target="cuda").node) == ["empty"]
    assert list(neurondev.diagnose(gm, target="xla").node) == ["empty", "empty_1"]


def test_kind_tells_frozen_from_literal_from_variable():
    def fn(x):
        a = torch.zeros(2, device=x.device)
        b = torch.zeros(2, device="cpu")
        dev = x.device
        c = torch.zeros(2, device=dev)
        return a + b + c + x.to(torch.device("cpu"))

    table = neurondev.diagnose(neurondev.capture(fn, torch.randn(2)))
    assert dict(zip(table.node, table.kind)) == {"a": "frozen", "b": "literal", "c": "frozen", "to": "literal"}


def test_locations_are_short_and_notebook_cells_are_named_as_ipython_names_them():
    from neurondev.trace.source import short_location

    assert short_location("/home/me/project/model.py", 12) == "model.py:12"
    assert short_location("/tmp/ipykernel_4242/2476673081.py", 4) == "notebook cell:4"  # outside a kernel
    assert short_location(None, None) == "no source line"
