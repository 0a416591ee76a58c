"""run_on_xla never writes to what the caller holds, whatever the graph mutates; the reference is
computed from the original values."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import neurondev
from neurondev import xla

pytestmark = pytest.mark.xla


def add_(x, y):
    x.add_(1)
    return torch.zeros(4, device=x.device) + x + y


def copy_(x, y):
    x.copy_(y * 3)
    return x + 1


def index_put_(x, y):
    x[torch.tensor([0, 2])] = y[:2]
    return x * 2


def out_(x, y):
    torch.add(y, 5, out=x)
    return x - y


def both(x, y):
    x.mul_(2)
    y.sub_(1)
    return x + y


MUTATORS = {f.__name__: f for f in (add_, copy_, index_put_, out_, both)}


@pytest.fixture(scope="module")
def graphs():
    return {name: neurondev.capture(fn, torch.randn(4), torch.randn(4)).graphs[0] for name, fn in MUTATORS.items()}


@settings(max_examples=12, deadline=None)
@given(
    name=st.sampled_from(sorted(MUTATORS)),
    on_xla=st.booleans(),
    values=st.lists(st.floats(-100, 100, width=32), min_size=8, max_size=8),
)
def test_the_callers_tensors_are_bit_for_bit_unchanged_and_the_verdict_is_right(graphs, name, on_xla, values):
    x, y = torch.tensor(values[:4]), torch.tensor(values[4:])
    expected = MUTATORS[name](x.clone(), y.clone())
    if on_xla:
        x, y = x.to(xla.device()), y.to(xla.device())
    x_before, y_before = x.cpu().clone(), y.cpu().clone()
    for _ in range(2):
        record = neurondev.run_on_xla(graphs[name], x, y, repeat=2)
        assert record.error is None
        assert torch.equal(x.cpu(), x_before) and torch.equal(y.cpu(), y_before)
        assert record.matches_reference is True, record.mismatch
        torch.testing.assert_close(record.outputs[0].cpu(), expected)


def test_the_issues_example_stays_zero_after_two_runs():
    def f(x):
        x.add_(1)
        return torch.zeros(4, device=x.device) + x

    gm = neurondev.capture(f, torch.randn(4)).graphs[0]
    x = torch.zeros(4)
    neurondev.run_on_xla(gm, x)
    neurondev.run_on_xla(gm, x)
    assert torch.equal(x, torch.zeros(4))
