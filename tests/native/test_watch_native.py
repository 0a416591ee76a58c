"""watch on a native device: dynamo's compiles, and per step the copies to the host, syncs and CPU fallbacks
(counted where the accounting can stay on around compiled code: torch 2.13 on; said otherwise)."""

from __future__ import annotations

import pytest
import torch

import neurondev
from neurondev._compat import dispatch_mode_keeps_compiled_code


@pytest.fixture
def device():
    yield neurondev.host_device(fallback=["aten::addmm"])
    neurondev.host_device()


def test_each_step_counts_its_syncs_and_fallbacks_or_says_why_not(device):
    net = torch.nn.Linear(8, 4).to(device)
    step = torch.compile(lambda x: net(x).relu().sum(), backend=neurondev.backend)
    with neurondev.watch() as w:
        for _ in range(4):
            step(torch.randn(2, 8, device=device)).item()
    assert list(w.steps["dynamo_compiles"]) == [1, 0, 0, 0] and w.steady_state == 1
    if dispatch_mode_keeps_compiled_code():
        assert list(w.steps["syncs"]) == [1, 1, 1, 1]  # .item() after each step
        assert list(w.steps["fallbacks"]) == [1, 1, 1, 1]  # aten::addmm, run on the host
        assert list(w.steps["copies_to_host"]) == [0, 0, 0, 0]
        assert "On the native device: 0 copy(ies) to the host, 4 sync(s), 4 CPU fallback(s)" in w.summary()
    else:
        assert set(w.steps["syncs"]) == {None} and "counted from torch 2.13" in w.record.native_note
