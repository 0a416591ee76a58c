"""A long loop on a device that counts by itself: its costs have their lines on the first steps, from a compile on, and
after a step whose costs changed; in between the device counts alone, the same totals as its own log."""

from __future__ import annotations

import pytest
import torch

import neurondev
from neurondev.devices.host.loader import extension
from neurondev.loops.attribution import SETTLE, Attribution
from neurondev.runs.counts import Counts


class Switch:
    """What Attribution switches: an accounting's ``attributing`` (here, that flag alone)."""

    attributing = True


def reading(fallbacks: int, syncs: int = 0) -> Counts:
    return Counts(fallbacks=(("aten::addmm.out", fallbacks),), syncs=syncs)


def test_lines_go_off_after_the_loop_repeats_itself_and_on_again_at_a_new_cost_or_a_compile():
    switch = Switch()
    attribution = Attribution(switch)
    states = []
    for step in range(1, 13):
        attribution.marked("step", None, reading(step, syncs=1 if step >= 9 else 0))  # step 9 syncs once more, then the same
        states.append(switch.attributing)
    assert states[: SETTLE - 1] == [True] * (SETTLE - 1) and states[SETTLE] is False
    assert states[8] is True  # after the step whose costs changed
    attribution.compiling()
    assert switch.attributing is True


@pytest.fixture
def device():
    yield neurondev.host_device(fallback=["aten::addmm"])
    neurondev.host_device()


def test_a_long_loop_has_lines_where_it_changes_and_the_devices_counts_everywhere(device):
    linear = torch.nn.Linear(8, 4).to(device)
    start = extension().event_count()
    with neurondev.watch() as watched:
        for i in range(20):
            y = linear(torch.randn(2, 8, device=device))
            if i == 14:
                y.sum().item()
            watched.step()
    logged = [e for e in extension().events(start) if e[0] == "fallback"]
    steps = watched.steps
    assert int(steps["fallbacks"].sum()) == len(logged) == 20 and int(steps["syncs"].sum()) == 1
    lined = list(steps["lined"][:20])
    assert lined[:2] == [True, True] and False in lined and lined[15:17] == [True, True]  # the step after the sync has lines again
    assert all(isinstance(text, str) for text, on in zip(steps["device_lines"][:20], lined) if on)
    assert "the device counted them without lines" in watched.summary()
