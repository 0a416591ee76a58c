"""neurondev's own traces leave dynamo's caches on the user's code as they found them."""

import torch

import neurondev
from neurondev._compat import cache_entry_ids


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
