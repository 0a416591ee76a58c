"""The seed's collective example on two XLA CPU devices through torch_xla's xmp.spawn, per rank."""

from __future__ import annotations

import pytest
import torch

import neurondev
from neurondev.gallery.ranks import check_world_size, expected_reduce_scatter, rank_input, run_on_ranks


def test_expected_reduction_is_the_sum_over_ranks_scattered():
    torch.testing.assert_close(expected_reduce_scatter(0, 2), torch.tensor([100.0, 102.0, 104.0, 106.0]))
    torch.testing.assert_close(expected_reduce_scatter(1, 2), torch.tensor([108.0, 110.0, 112.0, 114.0]))
    torch.testing.assert_close(expected_reduce_scatter(0, 1), rank_input(0, 1))


def test_world_sizes_the_runtime_can_run_are_decided_before_anything_starts():
    check_world_size(1, runtime="pjrt-cpu")
    check_world_size(2, runtime="pjrt-cpu")
    check_world_size(8, runtime="neuron")
    check_world_size(4, runtime="pjrt")
    for world_size in (3, 4, 16):
        with pytest.raises(neurondev.UnsupportedWorldSizeError, match=r"Use world_size=1 or 2 here"):
            check_world_size(world_size, runtime="pjrt-cpu")


@pytest.mark.xla
@pytest.mark.slow
def test_two_ranks_break_frozen_and_not_rewritten_with_the_expected_reduction():
    results = run_on_ranks(world_size=2)
    assert [r.rank for r in results] == [0, 1]
    assert [r.device for r in results] == ["xla:0", "xla:1"]
    for result in results:
        expected = expected_reduce_scatter(result.rank, 2).tolist()
        assert result.expected == expected
        frozen, rewritten = result.frozen, result.rewritten
        assert frozen.error is None and frozen.graph_breaks == ["copy_"] and frozen.output_devices == ["cpu"]
        assert frozen.transfers_to_host >= 1
        assert rewritten.error is None and rewritten.graph_breaks == []
        assert (rewritten.executions, rewritten.transfers_to_host) == (0, 0)
        assert rewritten.output_devices == [result.device]
        assert frozen.values == expected and rewritten.values == expected
        assert frozen.matches_expected and rewritten.matches_expected
