"""watch without any device, on whichever torch runs the suite (2.9 and 2.13 word dynamo's guards differently)."""

from __future__ import annotations

import torch

import neurondev
from tests.helpers import line_of

NET = torch.nn.Linear(4, 2)


def scaled(x, lr):
    return NET(x).sum() * lr


def test_a_float_rate_is_named_with_its_values_and_the_line_that_reads_it():
    step = torch.compile(scaled, backend="eager")
    with neurondev.watch() as w:
        for i in range(2):
            step(torch.randn(8, 4), 0.1 * 0.9**i)
    recompile = w.compiles.iloc[1]
    assert (recompile.kind, recompile.value, recompile.before, recompile.after) == ("recompile", "lr", "0.1", "0.09")
    assert recompile.read_at == f"test_watch_any_torch.py:{line_of(scaled, 'return NET(x)')}"
