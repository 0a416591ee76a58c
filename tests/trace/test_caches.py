"""neurondev's own traces leave dynamo's caches on the user's code as they found them."""

import torch

import neurondev
from neurondev._compat.dynamo import cache_entry_ids


def helper_with_a_break(x):
    y = x + 1
    print("", end="")  # a dynamo break inside a function the entry calls: dynamo compiles this frame itself
    return y * 2


def calls_the_helper(x):
    return helper_with_a_break(x)


def test_a_ninth_capture_still_records_every_graph_and_the_users_frame_holds_no_entry_of_ours():
    counts = [len(neurondev.capture(calls_the_helper, torch.randn(3)).graphs) for _ in range(10)]
    assert counts == [2] * 10  # dynamo's recompile limit is 8: without the clean-up the ninth records none
    assert cache_entry_ids(helper_with_a_break.__code__) == set()


def test_the_users_own_compile_of_that_frame_compiles_once_after_explains():
    for _ in range(3):
        neurondev.explain(calls_the_helper, torch.randn(3), quiet=True, run=False)
    seen = []

    def counting(gm, example_inputs):
        seen.append(gm)
        return gm.forward

    compiled = torch.compile(calls_the_helper, backend=counting)
    try:
        compiled(torch.randn(3))
        compiled(torch.randn(3))
    finally:
        torch._dynamo.reset()
    assert len(seen) == 2  # the two graphs, compiled once: none of neurondev's entries stood in the way


def _is_dynamic(gm) -> bool:
    """A graph dynamo traced with symbolic sizes (a SymInt input, or a tensor whose sizes are symbols)."""
    values = [node.meta.get("example_value") for node in gm.graph.nodes if node.op == "placeholder"]
    return any(
        isinstance(v, torch.SymInt) or (isinstance(v, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in v.shape)) for v in values
    )


def sized_helper(x):
    y = x + 1
    print("", end="")  # a break: dynamo compiles this frame (and its resume) itself
    return y * 2


def calls_the_sized_helper(x):  # used by the test below only: no other test compiles it first
    return sized_helper(x)


def test_the_program_run_after_one_of_another_shape_is_static_and_the_users_next_compile_is_too():
    """dynamo remembers which sizes changed per (file, line, name), not per code object: neurondev's program
    runs (torch.compile as the user calls it) must neither inherit that memory from earlier ones nor leave
    it to the user's own torch.compile."""
    device = neurondev.host_device()
    first = neurondev.explain(calls_the_sized_helper, torch.randn(3), target=device, quiet=True)
    second = neurondev.explain(calls_the_sized_helper, torch.randn(5), target=device, quiet=True)
    for ex in (first, second):
        assert ex.program.rewritten.ok and [call.graphs for call in ex.program.rewritten.calls] == [2, 0]
    graphs = []

    def recording(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch.compile(calls_the_sized_helper, backend=recording)(torch.randn(7))  # the user's own, after neurondev's
    assert len(graphs) == 2 and not any(_is_dynamic(gm) for gm in graphs)
