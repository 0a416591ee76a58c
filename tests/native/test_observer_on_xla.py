"""The dispatcher's observer on a device nobody here wrote: torch_xla's XLA device (PJRT's CPU device here), its CPU
fallbacks and copies against torch_xla's own record (its ``aten::`` fallback counters and TransferFromDeviceTime), and
its values unchanged by watching."""

from __future__ import annotations

import pytest
import torch

from neurondev import xla
from neurondev.native.logged import LoggedAccounting
from neurondev.native.observer import observer_for
from tests.helpers import line_of

pytestmark = pytest.mark.xla


def fallbacks_and_transfers() -> tuple[dict[str, int], int]:
    """torch_xla's own record now: its count of each op that fell back to the CPU, and of transfers to the host."""
    import torch_xla.debug.metrics as metrics

    fell = {name: int(metrics.counter_value(name)) for name in metrics.counter_names() if name.startswith("aten::")}
    transfers = metrics.metric_data("TransferFromDeviceTime")
    return fell, int(transfers[0]) if transfers else 0


def program(x):
    values = torch.linalg.eigvals(x)  # no XLA lowering: torch_xla runs it on the CPU
    histogram = torch.histc(x, bins=4)  # the same
    host = (x * 2).cpu()  # a copy to the host
    return values, histogram, host


def test_each_cpu_fallback_and_copy_to_the_host_is_counted_as_torch_xla_counted_it_on_its_line():
    x = torch.randn(8, 8).to(xla.device())
    xla.sync()
    fell_before, transfers_before = fallbacks_and_transfers()
    with LoggedAccounting("xla", observer_for("xla")) as accounting:
        program(x)
    fell_after, transfers_after = fallbacks_and_transfers()
    fell = {name: count - fell_before.get(name, 0) for name, count in fell_after.items() if count != fell_before.get(name, 0)}
    counts = accounting.counts()
    assert dict(counts.fallbacks) == fell == {"aten::linalg_eig": 1, "aten::histc": 1}
    # each fallback moves its input to the host once, and the copy once: torch_xla's transfers
    assert counts.transfers_to_host + sum(fell.values()) == transfers_after - transfers_before == 3
    assert [(event.kind, event.line) for event in accounting.events] == [
        ("fallback", line_of(program, "torch.linalg.eigvals")),
        ("fallback", line_of(program, "torch.histc")),
        ("copy to host", line_of(program, ".cpu()")),
    ]
    assert [event.called for event in accounting.events if event.kind == "fallback"] == ["aten::linalg_eigvals", "aten::histc"]


def test_watching_an_xla_program_changes_no_value():
    torch.manual_seed(0)
    x = torch.randn(8, 8).to(xla.device())
    plain = [t.cpu() for t in program(x)]
    with LoggedAccounting("xla", observer_for("xla")):
        watched = [t.cpu() for t in program(x)]
    assert all(torch.equal(a, b) for a, b in zip(plain, watched))
