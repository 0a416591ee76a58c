"""torch_xla's counters read, never cleared: the dynamo bridge's clearing is virtual inside keep_counters."""

from __future__ import annotations

import pytest
import torch

from neurondev import xla
from neurondev.xla.counters import counts, keep_counters, sync

pytestmark = pytest.mark.xla


def histogram_on_xla():
    values = torch.arange(16, dtype=torch.float32).to(xla.device())
    torch.histc(values, bins=4)  # XLA runs histc on the CPU: a fallback counter
    sync()


def test_inside_the_block_a_clear_is_virtual_the_users_counts_stay_and_new_fallbacks_still_show():
    import torch_xla.debug.metrics as metrics

    histogram_on_xla()
    before = int(metrics.counter_value("aten::histc"))
    with keep_counters():
        metrics.clear_counters()  # what the bridge does before each node it probes
        assert metrics.executed_fallback_ops() == []
        histogram_on_xla()
        assert metrics.executed_fallback_ops() == ["aten::histc"]
    assert int(metrics.counter_value("aten::histc")) == before + 1  # nothing was wiped, the new one counted


def test_counts_subtract_to_what_happened_in_between():
    start = counts()
    values = torch.ones(4).to(xla.device()) * 2
    values.cpu()  # one execution, one transfer to the host
    happened = counts() - start
    assert happened.executions == 1 and happened.transfers_to_host == 1 and happened.forced
    assert not (counts() - counts()).forced
