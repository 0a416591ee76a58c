"""After DeviceRewriterPass, node.meta agrees with a fresh fake propagation; exported programs work."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.utils._pytree as pytree
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

import neurondev
from neurondev.passes.fake_meta import meta_value
from tests.helpers import build_graph, line_of
from tests.runs.test_program import pins_inside_cond  # a pin in each branch of torch.cond


def devices(value):
    return [str(t.device) for t in pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]


def mixed(x):
    pos = torch.arange(x.shape[0], device="cpu")
    scale = torch.ones(x.shape, device="cpu") * 2
    return x + pos.to(x.device) + scale.to(x.device) + torch.zeros(4, device="cpu").sum()


def record_graph(fn, *inputs):
    seen = []

    def recorder(gm, example_inputs):
        seen.append((gm, example_inputs))
        return gm.forward

    torch.compile(fn, backend=recorder)(*inputs)
    torch._dynamo.reset()
    return seen[0]


@pytest.mark.xla
def test_meta_of_a_rewritten_graph_with_xla_inputs_equals_a_fresh_fake_tensor_prop():
    from neurondev import xla

    gm, inputs = record_graph(mixed, torch.randn(4).to(xla.device()))
    before = {node.name: devices(meta_value(node)) for node in gm.graph.nodes}
    assert before["pos"] == ["cpu"] and before["scale"] == ["cpu"]
    neurondev.DeviceRewriterPass(target="xla:0")(gm)
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    fresh = copy.deepcopy(gm)
    FakeTensorProp(fresh, mode).propagate(*[mode.from_tensor(t) for t in inputs])
    for ours, theirs in zip(gm.graph.nodes, fresh.graph.nodes):
        if ours.op == "output":
            continue
        assert devices(meta_value(ours)) == devices(theirs.meta.get("val")), ours.name
        if isinstance(meta_value(ours), torch.Tensor):
            assert meta_value(ours).shape == theirs.meta["val"].shape
    assert {name for name, devs in before.items() if devs == ["cpu"]} <= {
        node.name for node in gm.graph.nodes if devices(meta_value(node)) == ["xla:0"]
    }


@pytest.mark.xla
def test_a_graph_traced_on_cpu_gets_the_target_on_the_rewritten_node_and_what_aliases_it(seed_capture):
    gm, _ = neurondev.rewrite_copy(seed_capture.graphs[0], target="xla:0")
    meta = {node.name: devices(meta_value(node)) for node in gm.graph.nodes}
    assert meta["out"] == ["xla:0"] and meta["copy_"] == ["xla:0"]  # copy_ returns its destination
    assert meta["l_args_0_"] == ["cpu"]  # the graph's input stays what it was traced with
    original = {node.name: devices(meta_value(node)) for node in seed_capture.graphs[0].graph.nodes}
    assert original["out"] == ["cpu"]  # the capture's own graph is untouched


class Exported(torch.nn.Module):
    def forward(self, x):
        y = x.to("cpu") * 2
        return torch.zeros(4, device=x.device) + y


@pytest.fixture(scope="module")
def exported():
    return torch.export.export(Exported(), (torch.randn(4),))


def test_an_exported_program_is_diagnosed_with_its_assertion_as_its_own_kind(exported):
    table = neurondev.diagnose(exported)
    assert list(zip(table.node, table.function, table.kind)) == [
        ("_assert_tensor_metadata_default", "aten._assert_tensor_metadata.default", "assertion"),
        ("to", "aten.to.dtype_layout", "literal"),
        ("zeros", "aten.zeros.default", "frozen"),
    ]
    assert list(table.line) == [line_of(Exported.forward, 'x.to("cpu")')] * 2 + [line_of(Exported.forward, "torch.zeros")]
    assert "ExportedProgram" in table.attrs["notes"][0]
    assert len(neurondev.find_pins(exported)) == 3


@pytest.mark.xla
def test_an_exported_program_is_rewritten_consistently_and_runs_on_xla(exported):
    code = exported.graph_module.code
    gm, rewrites = neurondev.rewrite_copy(exported)
    assert exported.graph_module.code == code
    assert [r.node for r in rewrites] == ["_assert_tensor_metadata_default", "to", "zeros"]
    x = torch.randn(4)
    record = neurondev.run_on_xla(gm, x, repeat=0)
    assert record.ok and record.output_devices == ("xla:0",) and record.matches_reference
    torch.testing.assert_close(record.outputs[0].cpu(), Exported()(x))
    in_place = copy.deepcopy(exported)
    result = neurondev.DeviceRewriterPass()(in_place)
    assert result.modified and result.graph_module is in_place.graph_module


def test_with_an_indexed_target_another_index_is_a_pin():
    gm = build_graph(
        ("call_function", torch.empty, (2,), {"device": "xla:1"}),
        ("call_function", torch.empty, (2,), {"device": "xla"}),
        ("call_function", torch.empty, (2,), {"device": torch.device("xla", 0)}),
    )
    assert list(neurondev.diagnose(gm, target="xla:0").node) == ["empty", "empty_1"]
    assert neurondev.diagnose(gm, target="xla").empty


def test_a_pass_result_prints_as_a_graph_module_in_python_and_ipython(seed_capture):
    from IPython.lib.pretty import pretty

    gm, _ = neurondev.rewrite_copy(seed_capture.graphs[0])
    gm = copy.deepcopy(gm)  # a copy of a copy still deep-copies (torch finds its base class by name)
    result = neurondev.DeviceRewriterPass(target="cpu")(gm)
    assert repr(result) == pretty(result) == "RewriteResult(graph_module=GraphModule(), modified=True, rewrites=1)"


class _Pins(torch.nn.Module):
    """The seed's buffer, a positional .to(device) and a torch.device(...) made from a tensor's device."""

    def forward(self, x):
        out = torch.empty(8, dtype=torch.float32, device=x.device)
        out.copy_(x.relu())
        where = torch.device(x.device.type)
        return out + torch.arange(8).to(x.device) + torch.ones(8, device=where)


@pytest.mark.xla
@pytest.mark.parametrize("build", ["pins", "gpt2"])
def test_on_an_exported_program_the_pass_moves_every_device_as_torch_exports_own_pass_does(build, gpt2):
    import copy

    from torch.export.passes import move_to_device_pass

    if build == "pins":
        program = torch.export.export(_Pins(), (torch.randn(8),))
    else:
        model, args, kwargs = gpt2
        program = torch.export.export(model, tuple(args), kwargs)
    assert not neurondev.diagnose(program).empty
    theirs = move_to_device_pass(copy.deepcopy(program), "xla")  # torch's own: every device, as strings
    ours = copy.deepcopy(program)
    result = neurondev.DeviceRewriterPass(target="xla")(ours)
    assert neurondev.diagnose(theirs).empty and neurondev.diagnose(ours).empty and result.modified
    kept = {type(rewrite.new) for rewrite in result.rewrites}
    assert kept <= {str, torch.device}  # each in the format it was written in (torch's pass writes strings)


@pytest.mark.xla
def test_each_body_a_higher_order_op_calls_gets_the_target_in_its_own_nodes_meta_and_so_does_its_caller():
    from neurondev import xla
    from neurondev.fx.subgraphs import subgraphs

    xla.device()  # the target's backend loaded: fake values can be made there
    gm, _ = record_graph(pins_inside_cond, torch.randn(4))
    bodies = {body.name: body.module for body in subgraphs(gm)}
    pinned = {
        name: [n.name for n in body.graph.nodes if devices(meta_value(n)) == ["cpu"] and n.op == "call_function"]
        for name, body in bodies.items()
    }
    assert set(bodies) == {"cond_true_0", "cond_false_0"} and all(pinned.values())
    result = neurondev.DeviceRewriterPass(target="xla:0")(gm)
    assert {r.node.split(".")[0] for r in result.rewrites} == set(bodies) and result.meta_refreshed is True
    for name, body in bodies.items():  # the pin, and what reads it, in each body: not only the first body's
        now = {n.name: devices(meta_value(n)) for n in body.graph.nodes}
        assert [now[node] for node in pinned[name]] == [["xla:0"]] * len(pinned[name]), name
    (cond,) = [n for n in gm.graph.nodes if n.op == "call_function" and "cond" in str(n.target)]
    assert devices(meta_value(cond)) == ["xla:0"]
    (x,) = [n for n in gm.graph.nodes if n.op == "placeholder"]
    assert devices(meta_value(x)) == ["cpu"]  # the graph's input keeps what it was traced with: the pass moves pins


def test_a_target_whose_backend_is_not_loaded_leaves_node_meta_as_traced_and_says_so(caplog):
    gm, _ = record_graph(mixed, torch.randn(4))
    assert not torch.backends.mps.is_available()  # no MPS backend on these machines: no value can be made there
    with caplog.at_level("INFO", logger="neurondev"):
        result = neurondev.DeviceRewriterPass(target="mps")(gm)
    assert result.modified and result.meta_refreshed is False
    assert devices(meta_value(next(n for n in gm.graph.nodes if n.name == "pos"))) == ["cpu"]
    said = [r.getMessage() for r in caplog.records if "DeviceRewriterPass" in r.getMessage()]
    assert said == ["DeviceRewriterPass: mps is not loaded here, node.meta keeps the traced devices"]


@pytest.mark.xla
def test_a_target_whose_backend_is_loaded_gets_its_meta_refreshed_without_a_word(caplog):
    from neurondev import xla

    xla.device()
    gm, _ = record_graph(mixed, torch.randn(4))
    with caplog.at_level("INFO", logger="neurondev"):
        result = neurondev.DeviceRewriterPass(target="xla:0")(gm)
    assert result.modified and result.meta_refreshed is True
    assert devices(meta_value(next(n for n in gm.graph.nodes if n.name == "pos"))) == ["xla:0"]
    assert not [r for r in caplog.records if "DeviceRewriterPass" in r.getMessage()]
