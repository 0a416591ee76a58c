"""The seed's collective example on two XLA CPU devices through torch_xla's xmp.spawn, per rank."""

from __future__ import annotations

import dataclasses
import sys

import pytest
import torch

import neurondev
from neurondev.gallery.collective import expected_reduce_scatter, rank_input
from neurondev.xla.ranks import _result_from_json, check_world_size, run_on_ranks


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


def _fails_saying_how_it_began(rank, world_size):
    """A RankCase that fails in the rank, naming its process's main module: forked from the launcher, that
    is the launcher's ("__main__"); a spawned process, which imports torch_xla again, names it "__mp_main__"."""
    raise RuntimeError(f"rank {rank} failed; its main module: {sys.modules['__main__'].__name__}.")


@pytest.mark.xla
@pytest.mark.slow
def test_a_rank_that_fails_ends_in_a_named_error_with_the_ranks_own_output():
    case = "tests.xla.test_ranks:_fails_saying_how_it_began"
    with pytest.raises(
        neurondev.RankRunError, match=r"the 1-rank run of tests\.xla\.test_ranks:_fails_saying_how_it_began failed"
    ) as raised:
        run_on_ranks(case, world_size=1, timeout=300)
    # the rank's own traceback, not a bare exit code; the rank process was forked, not a Python importing torch_xla anew
    assert "RuntimeError: rank 0 failed; its main module: __main__." in str(raised.value)


def test_a_rank_result_read_back_from_its_worker_is_frozen_through():
    written = {
        "rank": 0,
        "world_size": 1,
        "device": "xla:0",
        "expected": [1.0],
        **{
            name: {
                "graph_breaks": ["copy_"],
                "executions": 1,
                "transfers_to_host": 1,
                "output_devices": ["cpu"],
                "values": [1.0],
                "matches_expected": True,
                "error": None,
            }
            for name in ("frozen", "rewritten")
        },
    }
    result = _result_from_json(written)
    assert result.expected == (1.0,) and result.frozen.graph_breaks == ("copy_",) and result.rewritten.values == (1.0,)
    for record in (result, result.frozen):
        assert not [f.name for f in dataclasses.fields(record) if isinstance(getattr(record, f.name), (list, dict, set))]
