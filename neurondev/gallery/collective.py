"""The seed's collective example on several ranks: each rank's input, the reduction it must get, the run."""

from __future__ import annotations

from collections.abc import Callable

import torch

from neurondev.gallery.patterns import collective_function
from neurondev.xla.ranks import RankResult
from neurondev.xla.ranks import run_on_ranks as _run_case

__all__ = ["collective_case", "expected_reduce_scatter", "rank_input", "run_on_ranks"]

_ELEMENTS_PER_RANK = 4


def rank_input(rank: int, world_size: int) -> torch.Tensor:
    """Rank ``rank``'s input: distinct per rank, so a wrong reduction cannot look right."""
    return torch.arange(_ELEMENTS_PER_RANK * world_size, dtype=torch.float32) + 100.0 * rank


def expected_reduce_scatter(rank: int, world_size: int) -> torch.Tensor:
    """What ``reduce_scatter_tensor(x, 'sum', world_size)`` gives rank ``rank``, computed directly."""
    total = torch.stack([rank_input(r, world_size) for r in range(world_size)]).sum(0)
    return total.chunk(world_size)[rank]


def collective_case(rank: int, world_size: int) -> tuple[Callable, tuple, torch.Tensor]:
    """What rank ``rank`` runs (a ``neurondev.xla.ranks.RankCase``): the collective, its input, its share."""
    fn = collective_function(world_size, "neurondev-ranks")
    return fn, (rank_input(rank, world_size),), expected_reduce_scatter(rank, world_size)


def run_on_ranks(*, world_size: int = 2, timeout: float = 600) -> list[RankResult]:
    """The collective example traced on CPU and run frozen and rewritten on ``world_size`` XLA devices.

    A fresh process through ``torch_xla``'s ``xmp.spawn`` (``neurondev.xla.ranks.run_on_ranks``): on
    PJRT CPU, ``world_size`` CPU devices (1 or 2 run here); on Neuron, the cores its runtime exposes.
    """
    return _run_case("neurondev.gallery.collective:collective_case", world_size=world_size, timeout=timeout)
