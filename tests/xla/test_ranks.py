"""The seed's collective example on two XLA CPU devices through torch_xla's xmp.spawn, per rank."""

from __future__ import annotations

import pytest
import torch

import neurondev
from neurondev.gallery.collective import expected_reduce_scatter, rank_input
from neurondev.xla.ranks import check_world_size


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


# The two-rank run itself is notebook 04's (tests/test_notebooks.py checks its facts rank by rank):
# running it here too would spawn the same two XLA devices twice per test run.
