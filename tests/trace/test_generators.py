"""A program's own torch.Generator is the user's state like the global RNG: found wherever the call reaches it,
left as it was by everything neurondev runs, and each run draws from it as the CPU reference did."""

from __future__ import annotations

import pytest
import torch

import neurondev
from neurondev.trace.generators import reachable_generators

NOISE = torch.Generator().manual_seed(5)
UNUSED = torch.Generator().manual_seed(6)


def noisy(x):
    noise = torch.rand(4, generator=NOISE).to(x.device)
    return x * 2 + noise


def closing_over(generator):
    def inner(x):
        return x + torch.rand(x.shape, generator=generator)

    return inner


class Dropper(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.lin.gen = torch.Generator().manual_seed(7)  # on a submodule

    def forward(self, x):
        return self.lin(x) + torch.rand(x.shape, generator=self.lin.gen)


def test_generators_are_found_in_globals_read_closures_arguments_and_submodules_and_no_others():
    assert reachable_generators(noisy, (torch.randn(4),)) == (NOISE,)  # UNUSED is a global it never reads
    own = torch.Generator()
    assert reachable_generators(closing_over(own), (torch.randn(4),)) == (own,)
    passed = torch.Generator()
    assert reachable_generators(lambda x, g: x, (torch.randn(4), passed)) == (passed,)
    model = Dropper()
    assert reachable_generators(model, (torch.randn(4),)) == (model.lin.gen,)


def test_capture_and_check_leave_the_programs_generator_where_it_was():
    model = Dropper()
    before = model.lin.gen.get_state().clone(), NOISE.get_state().clone()
    neurondev.capture(model, torch.randn(2, 4))
    neurondev.capture(noisy, torch.randn(4))
    neurondev.check(noisy, torch.randn(4), allow=("Tensor.to",))
    assert torch.equal(model.lin.gen.get_state(), before[0]) and torch.equal(NOISE.get_state(), before[1])


@pytest.mark.xla
def test_explain_leaves_the_generator_as_it_was_and_the_program_agrees_with_cpu():
    before = NOISE.get_state().clone()
    ex = neurondev.explain(noisy, torch.randn(4), quiet=True)
    assert torch.equal(NOISE.get_state(), before)
    assert {ex.program.as_written.comparison.status, ex.program.rewritten.comparison.status} <= {"equal", "within tolerance"}
