"""DeviceRewriterPass: the documented kwargs-only algorithm, positional pins, format preservation."""

from __future__ import annotations

import copy

import pytest
import torch
from torch.fx.passes.infra.pass_base import PassBase, PassResult

import neurondev
from neurondev import DeviceRewriterPass
from tests.helpers import build_graph, node_named


def empty_with(device):
    return build_graph(("call_function", torch.empty, (2,), {"dtype": torch.float32, "device": device}))


@pytest.mark.parametrize(
    "old, new",
    [
        ("cpu", "xla"),
        ("cuda:1", "xla"),
        (torch.device("cpu"), torch.device("xla")),
        (torch.device("cuda", 3), torch.device("xla")),
        (0, "xla"),
        (2, "xla"),
    ],
)
def test_kwarg_format_is_preserved_and_a_foreign_index_dropped(old, new):
    gm = empty_with(old)
    result = DeviceRewriterPass()(gm)
    assert isinstance(result, PassResult) and result.modified and result.graph_module is gm
    rewritten = node_named(gm, "empty").kwargs["device"]
    assert rewritten == new and type(rewritten) is type(new)
    assert node_named(gm, "empty").kwargs["dtype"] == torch.float32


@pytest.mark.parametrize("old", ["cpu", "cuda:1", torch.device("cuda", 1), 1, "xla:1", "xla", torch.device("xla", 3)])
def test_the_targets_own_index_decides_never_the_pins(old):
    gm = empty_with(old)
    DeviceRewriterPass(target="xla:0")(gm)
    new = node_named(gm, "empty").kwargs["device"]
    assert new == (torch.device("xla", 0) if isinstance(old, torch.device) else "xla:0")


def test_a_foreign_index_never_becomes_an_xla_device_that_does_not_exist():
    gm = build_graph(
        ("call_function", torch.device, ("cuda", 1), {}),
        ("call_method", "cuda", ("x", 1), {}),
        ("call_method", "to", ("x", "cuda:1"), {}),
    )
    DeviceRewriterPass(target="xla:0")(gm)
    assert node_named(gm, "device_1").args == ("xla:0",)
    assert node_named(gm, "cuda").args[1:] == ("xla:0",)
    assert node_named(gm, "to").args[1:] == ("xla:0",)
    assert "xla:1" not in gm.code and neurondev.find_pins(gm, target="xla:0") == []


def test_torch_device_in_keyword_form_is_found_and_rewritten():
    gm = build_graph(
        ("call_function", torch.device, (), {"type": "cpu"}),
        ("call_function", torch.device, (), {"type": "cuda", "index": 1}),
    )
    pins = neurondev.find_pins(gm)
    assert [(p.node, p.location, p.device) for p in pins] == [("device_1", "kwarg[type]", "cpu"), ("device_2", "kwarg[type]", "cuda")]
    DeviceRewriterPass(target="xla:0")(gm)
    assert node_named(gm, "device_1").kwargs == {"type": "xla", "index": 0}
    assert node_named(gm, "device_2").kwargs == {"type": "xla", "index": 0}
    assert [str(v) for v in gm(torch.zeros(1))] == ["xla:0", "xla:0"]


@pytest.mark.parametrize("device", [None, "meta", torch.device("meta"), "xla", "xla:1", torch.device("xla", 2)])
def test_none_meta_and_target_devices_are_left_alone_and_modified_is_false(device):
    gm = empty_with(device)
    code = gm.code
    result = DeviceRewriterPass()(gm)
    assert result.modified is False and result.rewrites == ()
    assert node_named(gm, "empty").kwargs["device"] == device
    assert gm.code == code


def positional_graph():
    return build_graph(
        ("call_method", "to", ("x", torch.device("cpu")), {}),
        ("call_method", "to", ("x", "cuda:1", torch.float16), {}),
        ("call_function", torch.device, ("cpu",), {}),
        ("call_function", torch.device, ("cuda", 1), {}),
        ("call_method", "cpu", ("x",), {}),
        ("call_method", "cuda", ("x",), {"non_blocking": True}),
        ("call_function", torch.empty, (2,), {"device": "cpu"}),
    )


def test_positional_pins_are_rewritten_by_default_in_their_format():
    gm = positional_graph()
    result = DeviceRewriterPass()(gm)
    assert result.modified
    assert node_named(gm, "to").args == (node_named(gm, "x"), torch.device("xla"))
    assert node_named(gm, "to_1").args[1:] == ("xla", torch.float16)
    assert node_named(gm, "device_1").args == ("xla",)
    assert node_named(gm, "device_2").args == ("xla",)
    cpu, cuda = node_named(gm, "cpu"), node_named(gm, "cuda")
    assert (cpu.target, cpu.args[1:], cpu.kwargs) == ("to", ("xla",), {})
    assert (cuda.target, cuda.args[1:], cuda.kwargs) == ("to", ("xla",), {"non_blocking": True})
    assert node_named(gm, "empty").kwargs["device"] == "xla"
    assert len(result.rewrites) == 7
    assert neurondev.find_pins(gm) == []


def test_kwargs_only_is_exactly_the_documented_algorithm():
    gm = positional_graph()
    before = {node.name: (node.target, node.args) for node in gm.graph.nodes}
    result = DeviceRewriterPass(rewrite_positional=False)(gm)
    assert result.modified
    assert [(r.node, r.location, r.old, r.new) for r in result.rewrites] == [("empty", "kwarg", "cpu", "xla")]
    assert {node.name: (node.target, node.args) for node in gm.graph.nodes} == before


def test_kwargs_only_rewrites_every_device_kwarg_including_to_and_new_calls():
    gm = build_graph(
        ("call_method", "to", ("x",), {"device": torch.device("cpu"), "dtype": torch.float16}),
        ("call_method", "new_zeros", ("x", (2,)), {"device": "cpu"}),
        ("call_function", torch.arange, (4,), {"device": torch.device("cuda", 0)}),
    )
    result = DeviceRewriterPass(rewrite_positional=False)(gm)
    assert [r.new for r in result.rewrites] == [torch.device("xla"), "xla", torch.device("xla")]


@pytest.mark.parametrize("device", ["meta", torch.device("meta")])
def test_kwargs_only_rewrites_meta_too_as_the_seed_algorithm_does_and_the_default_leaves_it(device):
    """The seed document rewrites every device that is not the target; the default pass leaves meta (a
    shape-only value made on purpose in a CPU-traced graph) unless the graph was traced on meta."""
    result = DeviceRewriterPass(rewrite_positional=False)(empty_with(device))
    assert [(r.old, r.new) for r in result.rewrites] == [(device, "xla" if isinstance(device, str) else torch.device("xla"))]
    assert DeviceRewriterPass()(empty_with(device)).modified is False
    (pin,) = neurondev.find_pins(empty_with(device))
    assert pin.kwargs_pass and not pin.default_pass
    traced_on_meta = DeviceRewriterPass(traced_on_meta=True)(empty_with(device))  # there meta is the frozen device
    assert [(r.old, r.new) for r in traced_on_meta.rewrites] == [(device, "xla" if isinstance(device, str) else torch.device("xla"))]


def test_second_application_reports_not_modified():
    gm = positional_graph()
    DeviceRewriterPass()(gm)
    code = gm.code
    again = DeviceRewriterPass()(gm)
    assert again.modified is False and again.rewrites == ()
    assert gm.code == code


def test_graph_is_recompiled_and_lints_clean():
    gm = positional_graph()
    DeviceRewriterPass()(gm)
    gm.graph.lint()
    for written in ("'cpu'", "'cuda", "type='cpu'", ".cpu(", ".cuda("):
        assert written not in gm.code
    assert "x.to('xla')" in gm.code and "device(type='xla')" in gm.code


def test_rewrite_copy_leaves_the_original_graph_untouched():
    gm = positional_graph()
    snapshot = copy.deepcopy(gm).code
    rewritten, rewrites = neurondev.rewrite_copy(gm)
    assert rewritten is not gm and len(rewrites) == 7
    assert gm.code == snapshot and len(neurondev.find_pins(gm)) == 7


def test_rewritten_seed_graph_runs_on_cpu_target_to_the_same_values(seed_capture):
    gm = seed_capture.graphs[0]
    cuda_pinned, _ = neurondev.rewrite_copy(gm, target="cuda")
    back, rewrites = neurondev.rewrite_copy(cuda_pinned, target="cpu")
    assert [r.new for r in rewrites] == [torch.device("cpu")]
    (x,) = seed_capture.example_inputs[0]
    torch.testing.assert_close(back(x)[0], gm(x)[0])


def test_it_is_a_torch_fx_pass():
    assert isinstance(DeviceRewriterPass(), PassBase)


def test_a_move_to_the_host_that_only_leaves_the_graph_is_kept_by_default_and_rewritten_by_the_documented_pass():
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    relu = graph.call_function(torch.relu, (x,))
    graph.output(graph.call_method("to", (relu,), {"device": "cpu"}))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    (pin,) = neurondev.find_pins(gm)
    assert pin.output_transfer and not pin.default_pass and pin.kwargs_pass
    assert DeviceRewriterPass()(copy.deepcopy(gm)).modified is False
    documented = DeviceRewriterPass(rewrite_positional=False)(copy.deepcopy(gm))
    assert documented.modified and [r.new for r in documented.rewrites] == ["xla"]
    assert DeviceRewriterPass(keep_host_outputs=False)(copy.deepcopy(gm)).modified


def test_autocast_of_the_traced_device_becomes_autocast_of_the_target_type():
    def mixed(x):
        with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
            return x @ x.T

    gm = neurondev.capture(mixed, torch.randn(4, 4)).graphs[0]
    (pin,) = neurondev.find_pins(gm)
    assert (pin.function, pin.location, pin.kind, pin.device) == ("torch.autocast", "arg[0]", "frozen", "cpu")
    assert pin.line == mixed.__code__.co_firstlineno + 1  # the with-statement, which dynamo gives no line
    result = DeviceRewriterPass(target="xla:0")(gm)
    assert [(r.old, r.new) for r in result.rewrites] == [("cpu", "xla")]  # a device type, never 'xla:0'


def test_autocast_is_kept_where_the_target_has_none_and_stays_a_pin_the_table_names():
    def mixed(x):
        with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
            return x @ x.T

    gm = neurondev.capture(mixed, torch.randn(4, 4)).graphs[0]
    assert not torch.amp.is_autocast_available("meta")  # a device with no autocast: a rewritten region would fail there
    result = DeviceRewriterPass(target="meta")(copy.deepcopy(gm))
    assert result.rewrites == () and result.modified is False
    (row,) = neurondev.diagnose(gm, target="meta").itertuples()
    assert (row.function, row.default_pass) == ("torch.autocast", False)
    assert [r.new for r in DeviceRewriterPass(target=neurondev.host_device())(copy.deepcopy(gm)).rewrites] == ["hostdev"]  # it has one


def test_autocast_on_the_target_type_is_no_pin_for_an_indexed_target_and_check_accepts_the_advice():
    """The advice for autocast is device_type='xla': with target 'xla:0' that is neither a pin nor rewritten."""

    def on_xla(x):
        with torch.autocast(device_type="xla", dtype=torch.bfloat16):
            return x @ x.T

    gm = build_graph(("call_function", torch.amp.autocast_mode._enter_autocast, ("xla", torch.bfloat16, True, None), {}))
    assert neurondev.find_pins(gm, target="xla:0") == []
    assert DeviceRewriterPass(target="xla:0")(gm).modified is False
    assert neurondev.check(on_xla, torch.randn(4, 4), target="xla:0", native=False).pins == ()


def test_the_result_carries_the_rewrites_so_a_pass_manager_running_it_again_reads_them():
    from torch.fx.passes.infra.pass_manager import PassManager

    gm = positional_graph()
    pass_ = DeviceRewriterPass()
    first = pass_(gm)
    assert len(first.rewrites) == 7 and isinstance(first, PassResult)
    assert PassManager([pass_], steps=2)(gm).modified is False  # a second step finds nothing: the first result is unchanged
    assert len(first.rewrites) == 7


def test_a_rewrite_result_is_a_value_like_torch_fx_pass_results():
    gm = positional_graph()
    result = DeviceRewriterPass()(gm)
    assert isinstance(result, PassResult) and isinstance(result, tuple) and len(result) == 4
    assert not hasattr(result, "__dict__")
    with pytest.raises(AttributeError):
        result.rewrites = ()
    replaced = result._replace(modified=False)
    assert replaced.rewrites == result.rewrites and replaced.meta_refreshed is result.meta_refreshed and replaced.modified is False
    assert result != replaced and result == result._replace()  # == compares every field, the rewrites too
    assert result != result._replace(rewrites=result.rewrites[:1])
    assert result._asdict()["rewrites"] == result.rewrites
    with pytest.raises(ValueError, match="no field"):
        result._replace(rewrite=())
    assert copy.copy(result) == result


def test_the_rewrites_survive_a_pass_manager_as_part_of_the_graph():
    from torch.fx.passes.infra.pass_manager import PassManager

    from neurondev.passes.device_rewriter import rewrites_of

    alone, managed = positional_graph(), positional_graph()
    direct = DeviceRewriterPass()(alone)
    through = PassManager([DeviceRewriterPass()])(managed)
    assert type(through) is PassResult and through.modified  # the manager's own result: two fields
    assert rewrites_of(through.graph_module) == direct.rewrites == rewrites_of(alone) and len(direct.rewrites) == 7
    assert rewrites_of(positional_graph()) == ()


def test_plan_is_pure_and_is_what_call_does():
    gm = positional_graph()
    code = gm.code
    pass_ = DeviceRewriterPass()
    planned = pass_.plan(gm)
    assert gm.code == code and pass_.plan(gm) == planned and len(planned) == 7  # the graph is untouched
    assert pass_(gm).rewrites == planned and pass_.plan(gm) == ()


def test_ensures_reads_the_graph_it_is_given_even_when_called_alone():
    from neurondev.errors import PassInvariantError

    pass_ = DeviceRewriterPass()
    pass_.ensures(torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph()))  # an empty graph holds nothing to rewrite
    with pytest.raises(PassInvariantError, match="left a device argument"):
        pass_.ensures(positional_graph())  # never rewritten: ensures alone finds its pins
    done = positional_graph()
    pass_(done)
    pass_.ensures(done)


@pytest.mark.parametrize(
    ("args", "kwargs", "target", "expected_args", "expected_kwargs"),
    [
        ((), {"type": "cpu", "index": 0}, "xla", (), {"type": "xla"}),  # the old index goes with the old type
        ((), {"type": "cpu", "index": 0}, "xla:1", (), {"type": "xla", "index": 1}),
        ((), {"type": "cpu"}, "xla:0", (), {"type": "xla", "index": 0}),
        (("cpu",), {"index": 0}, "xla", ("xla",), {}),  # written positionally: the keyword index goes too
    ],
)
def test_a_device_call_gets_the_targets_type_and_index_in_the_form_it_was_written(args, kwargs, target, expected_args, expected_kwargs):
    gm = build_graph(("call_function", torch.device, args, kwargs))
    (rewrite,) = DeviceRewriterPass(target=target)(gm).rewrites
    (node,) = [node for node in gm.graph.nodes if node.target is torch.device]
    assert (node.args, node.kwargs) == (expected_args, expected_kwargs)
    assert rewrite.node == node.name and gm.graph.lint() is None


def test_each_rewrite_records_its_node_where_the_device_sat_and_the_old_and_new_value():
    result = DeviceRewriterPass()(positional_graph())
    assert [(r.node, r.location, r.old, r.new) for r in result.rewrites] == [
        ("to", "arg[1]", torch.device("cpu"), torch.device("xla")),
        ("to_1", "arg[1]", "cuda:1", "xla"),
        ("device_1", "arg[0]", "cpu", "xla"),
        ("device_2", "arg[0]", "cuda", "xla"),
        ("cpu", "method", torch.device("cpu"), "xla"),
        ("cuda", "method", torch.device("cuda"), "xla"),
        ("empty", "kwarg", "cpu", "xla"),
    ]


def test_a_device_call_takes_the_targets_type_by_keyword_and_its_index_too_and_a_cuda_call_drops_its_device():
    gm = build_graph(
        ("call_function", torch.device, (), {"type": "cpu"}),
        ("call_function", torch.device, ("cpu",), {}),
        ("call_method", "cuda", ("x",), {"device": 0, "non_blocking": True}),
    )
    result = DeviceRewriterPass(target=torch.device("xla", 1))(gm)
    assert [(r.node, r.location, r.new) for r in result.rewrites] == [
        ("device_1", "kwarg[type]", "xla"),
        ("device_2", "arg[0]", "xla:1"),
        ("cuda", "method", "xla:1"),
    ]
    assert node_named(gm, "device_1").kwargs == {"type": "xla", "index": 1} and node_named(gm, "device_2").args == ("xla:1",)
    cuda = node_named(gm, "cuda")
    assert (cuda.target, cuda.args[1:], cuda.kwargs) == ("to", ("xla:1",), {"non_blocking": True})  # its device= gone


def host_output_graph():
    graph = torch.fx.Graph()
    relu = graph.call_function(torch.relu, (graph.placeholder("x"),))
    graph.output(graph.call_method("to", (relu,), {"device": "cpu"}))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


OPTIONS = [{}, {"rewrite_positional": False}, {"keep_host_outputs": False}, {"rewrite_positional": False, "keep_host_outputs": True}]


@pytest.mark.parametrize("options", [*OPTIONS, {"traced_on_meta": True}])
def test_rewrite_copy_rewrites_what_the_pass_with_the_same_options_rewrites(options):
    for graph in (positional_graph, host_output_graph, lambda: empty_with("meta")):
        _, rewrites = neurondev.rewrite_copy(graph(), **options)
        assert rewrites == DeviceRewriterPass(**options)(graph()).rewrites, (options, graph)


def test_the_options_rewrite_copy_passes_on_each_change_what_is_rewritten():
    """Not vacuous: each option above rewrites another set of pins in one of the graphs."""
    for graph in (positional_graph, host_output_graph):
        assert len({neurondev.rewrite_copy(graph(), **options)[1] for options in OPTIONS}) == 2, graph
    assert neurondev.rewrite_copy(empty_with("meta"))[1] == () and neurondev.rewrite_copy(empty_with("meta"), traced_on_meta=True)[1]


@pytest.mark.parametrize(
    "call, purpose",
    [
        (DeviceRewriterPass(), "DeviceRewriterPass rewrites a traced graph, got a str"),
        (neurondev.rewrite_copy, "rewrite_copy copies and rewrites a traced graph, got a str"),
    ],
)
def test_what_is_not_a_graph_is_refused_naming_the_call_and_what_to_pass(call, purpose):
    with pytest.raises(neurondev.InvalidSubjectError) as refused:
        call("def f(x): ...")
    assert str(refused.value).startswith(purpose) and "pass a torch.fx.GraphModule" in str(refused.value)


def test_a_pass_that_rewrites_nothing_refreshes_no_meta_and_one_that_rewrites_says_how_many_at_debug(caplog):
    assert DeviceRewriterPass()(empty_with("xla")).meta_refreshed is None  # nothing rewritten: nothing to refresh
    with caplog.at_level("DEBUG", logger="neurondev"):
        DeviceRewriterPass()(positional_graph())
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("DeviceRewriterPass rewrote")]
    assert said == ["DeviceRewriterPass rewrote 7 device argument(s) to xla"]


@pytest.mark.parametrize(
    "options, said",
    [
        ({"rewrite_positional": "yes"}, "rewrite_positional is True (also Tensor.to(dev), torch.device(...), .cpu()) or False "),
        ({"keep_host_outputs": 1}, "keep_host_outputs is True, False or None (as rewrite_positional), got 1"),
    ],
)
def test_an_option_that_is_not_a_bool_is_refused_saying_what_it_takes(options, said):
    with pytest.raises(neurondev.InvalidOptionError) as refused:
        DeviceRewriterPass(**options)
    assert str(refused.value).startswith(said)
