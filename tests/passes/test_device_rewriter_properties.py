"""Property-based tests of DeviceRewriterPass on random FX graphs with devices in every format."""

from __future__ import annotations

import torch
import torch.fx
from hypothesis import given, settings
from hypothesis import strategies as st

import neurondev
from neurondev import DeviceRewriterPass
from neurondev.fx.devices import device_nodes, device_slots

DEVICES = [
    "cpu",
    "cuda",
    "cuda:1",
    "meta",
    "xla",
    "xla:1",
    torch.device("cpu"),
    torch.device("cuda", 1),
    torch.device("meta"),
    torch.device("xla"),
    torch.device("xla", 0),
    0,
    1,
]
FACTORIES = [torch.empty, torch.zeros, torch.ones, torch.arange]

devices = st.sampled_from(DEVICES)
kwarg_nodes = st.tuples(st.just("kwarg"), st.sampled_from(FACTORIES), st.one_of(st.none(), devices))
to_nodes = st.tuples(st.just("to"), devices, st.booleans())
to_kwarg_nodes = st.tuples(st.just("to_kwarg"), devices, st.booleans())
device_call_nodes = st.tuples(st.just("torch.device"), st.sampled_from(["cpu", "cuda", "xla", "meta"]), st.sampled_from([None, 0, 1]))
method_nodes = st.tuples(st.just("method"), st.sampled_from(["cpu", "cuda"]), st.booleans())
plain_nodes = st.tuples(st.just("plain"))
one_node = st.one_of(kwarg_nodes, to_nodes, to_kwarg_nodes, device_call_nodes, method_nodes, plain_nodes)
node_specs = st.lists(one_node, max_size=25)


def make_graph(specs) -> torch.fx.GraphModule:
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    made = []
    for spec in specs:
        made.append(_node(graph, x, spec))
    graph.output(graph.call_function(list, (tuple(made),)))  # every node is used: none is handed straight back
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def _node(graph, x, spec):
    kind = spec[0]
    if kind == "kwarg":
        return graph.call_function(spec[1], (4,), {"dtype": torch.float32, "device": spec[2]})
    if kind == "to":
        args = (x, spec[1], torch.float16) if spec[2] else (x, spec[1])
        return graph.call_method("to", args)
    if kind == "to_kwarg":
        return graph.call_method("to", (x,), {"device": spec[1], "copy": spec[2]})
    if kind == "torch.device":
        return graph.call_function(torch.device, (spec[1],) if spec[2] is None else (spec[1], spec[2]))
    if kind == "method":
        return graph.call_method(spec[1], (x,), {"non_blocking": True} if spec[2] else {})
    if kind == "autocast":
        return graph.call_function(torch.amp.autocast_mode._enter_autocast, (spec[1], torch.bfloat16, True, None))
    return graph.call_function(torch.relu, (x,))


def shape_without_devices(gm):
    """Each node's op and its arguments with every device argument masked out.

    A ``.cpu()`` / ``.cuda()`` node (named after its method) becomes ``.to(target)``: only its
    tensor and its non-device kwargs must stay.
    """
    shapes = []
    for node in gm.graph.nodes:
        if node.op == "call_method" and node.name.split("_")[0] in ("cpu", "cuda"):
            kwargs = {k: v for k, v in node.kwargs.items() if k != "device"}
            shapes.append((node.op, node.name, "move", str(node.args[0]), kwargs))
            continue
        if node.target is torch.device and device_slots(node):
            shapes.append((node.op, node.name, "torch.device", "<device>"))  # type and index both rewritten
            continue
        args, kwargs = list(node.args), dict(node.kwargs)
        for slot in device_slots(node):
            if slot.location == "kwarg":
                kwargs["device"] = "<device>"
            else:
                args[int(slot.location[4:-1])] = "<device>"
        shapes.append((node.op, node.name, str(node.target), [str(a) for a in args], kwargs))
    return shapes


def expected_type(old):
    return type(old) if isinstance(old, (str, torch.device)) else str


@settings(max_examples=300, deadline=None)
@given(node_specs, st.booleans())
def test_random_graphs_keep_their_shape_and_lose_every_rewritable_pin(specs, positional):
    gm = make_graph(specs)
    before_shape = shape_without_devices(gm)
    before_count = len(gm.graph.nodes)
    result = DeviceRewriterPass(rewrite_positional=positional)(gm)

    gm.graph.lint()
    assert len(gm.graph.nodes) == before_count
    assert shape_without_devices(gm) == before_shape
    assert result.modified == bool(result.rewrites)
    for rewrite in result.rewrites:
        assert torch.device(rewrite.new).type == "xla"
        expected = str if rewrite.location == "method" else expected_type(rewrite.old)
        assert type(rewrite.new) is expected

    left = neurondev.find_pins(gm)
    if positional:
        assert all(torch.device(pin.device).type == "meta" or pin.device == "meta" for pin in left)
    else:
        assert all(pin.location != "kwarg" for pin in left)  # the documented algorithm: every device= kwarg, meta included

    again = DeviceRewriterPass(rewrite_positional=positional)
    assert again(gm).modified is False


autocast_nodes = st.tuples(st.just("autocast"), st.sampled_from(["cpu", "cuda", "xla"]))
targets = st.sampled_from(["xla", "xla:0", torch.device("xla", 1), "cpu"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(one_node, autocast_nodes), max_size=20), targets, st.booleans())
def test_the_pin_table_and_the_pass_follow_one_rule(specs, target, positional):
    """modified == any(pin.default_pass) (or kwargs_pass, for the documented pass), for indexed targets and autocast too."""
    gm = make_graph(specs)
    pins = neurondev.find_pins(gm, target=target)
    expected = any(pin.default_pass if positional else pin.kwargs_pass for pin in pins)
    assert DeviceRewriterPass(target=target, rewrite_positional=positional)(gm).modified == expected


def documented_rewrite(current):
    """The seed document's rule, written as it stands there: every device that is not the target is
    rewritten, meta included, in its format (``torch.device(target)``: the old index is not carried over)."""
    device = torch.device("cuda", current) if isinstance(current, int) else torch.device(current)
    if device.type == "xla":
        return current
    target = "xla"
    if isinstance(current, str):
        return target
    elif hasattr(current, "type"):
        return torch.device(target)
    return target


@settings(max_examples=300, deadline=None)
@given(node_specs)
def test_kwargs_only_mode_is_the_documented_algorithm_node_by_node(specs):
    gm = make_graph(specs)
    expected = {
        node.name: {**node.kwargs, "device": documented_rewrite(node.kwargs["device"])}
        for node in gm.graph.nodes
        if node.kwargs.get("device") is not None
    }
    DeviceRewriterPass(rewrite_positional=False)(gm)
    for node in gm.graph.nodes:
        if node.name in expected:
            assert node.kwargs == expected[node.name]
            assert type(node.kwargs["device"]) is type(expected[node.name]["device"])


aten_nodes = st.tuples(st.just("aten"), devices)
positional_nodes = st.tuples(st.just("positional"), devices)
plain_kwarg_nodes = st.tuples(st.just("plain_kwargs"), st.sampled_from([{}, {"alpha": 2}, {"device": None}]))


def _extra_node(graph, x, spec):
    """Nodes the walk must not pass over: an ATen op with a device, a device as an ordinary function's
    positional argument, and ordinary ops with kwargs (``device=None`` among them)."""
    kind = spec[0]
    if kind == "aten":
        return graph.call_function(torch.ops.aten._to_copy.default, (x,), {"device": spec[1]})
    if kind == "positional":
        return graph.call_function(torch.empty, (4, spec[1]) if isinstance(spec[1], torch.device) else (4,))
    return graph.call_function(torch.add, (x, 1.0), spec[1])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(one_node, autocast_nodes, aten_nodes, positional_nodes, plain_kwarg_nodes), max_size=25), st.booleans())
def test_the_graph_walk_finds_exactly_the_nodes_device_slots_names(specs, positional):
    """device_nodes, the walk the pass and the pin finder use, skips a node only where device_slots is empty."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    made = [_extra_node(graph, x, spec) if spec[0] in ("aten", "positional", "plain_kwargs") else _node(graph, x, spec) for spec in specs]
    graph.output(graph.call_function(list, (tuple(made),)))
    walked = dict(device_nodes(graph.nodes, positional))
    assert walked == {node: device_slots(node, positional) for node in graph.nodes if device_slots(node, positional)}


def test_the_node_fields_the_walk_reads_are_what_torch_fx_properties_return():
    """device_nodes reads Node._args / Node._kwargs (named in neurondev._compat); a torch release that moves them fails here."""
    graph = torch.fx.Graph()
    node = graph.call_function(torch.add, (graph.placeholder("x"), 1.0), {"alpha": 2})
    assert node._args is node.args and node._kwargs is node.kwargs
