"""Dispatch-level accounting on a native device, against the device's own log (the host test device records
every copy and fallback it makes in C++): counts equal, each event on the program's line."""

from __future__ import annotations

import pytest
import torch

import neurondev
from neurondev.devices.host.loader import extension
from neurondev.native.accounting import Accounting
from tests.helpers import line_of


@pytest.fixture
def device():
    yield neurondev.host_device()
    neurondev.host_device()


def program(x, device):
    y = x.to(device)  # a copy to the device
    z = (y * 2).sum()
    scale = z.item()  # a sync
    table = torch.tensor([1.0, 2.0], device=device)  # built on the host, uploaded
    return (y * scale + table.sum()).cpu()  # a copy to the host


def test_copies_and_syncs_are_counted_as_the_device_made_them_each_on_its_line(device):
    start = extension().event_count()
    accounting = Accounting(device.type)
    with accounting:
        program(torch.randn(4), device)
    device_copies = [(direction, nbytes) for kind, _, direction, nbytes in extension().events(start) if kind == "copy"]
    counts = accounting.counts()
    assert counts.transfers_to_device == sum(d == "to_device" for d, _ in device_copies) == 2
    assert counts.transfers_to_host == sum(d == "to_host" for d, _ in device_copies) == 1
    assert counts.bytes_to_device == sum(n for d, n in device_copies if d == "to_device") == 16 + 8
    assert counts.syncs == 1 and [(event.bytes, event.called) for event in accounting.events if event.kind == "sync"] == [(0, None)]
    lines = [(event.kind, event.line) for event in accounting.events]
    assert lines == [
        ("copy to device", line_of(program, "x.to(device)")),
        ("sync", line_of(program, "z.item()")),
        ("copy to device", line_of(program, "torch.tensor([1.0")),
        ("copy to host", line_of(program, ".cpu()")),
    ]


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(x).relu()


def test_each_fallback_is_counted_with_the_bytes_the_device_copied_on_the_users_line_and_module(device):
    neurondev.host_device(fallback=("aten::addmm",))
    net = Net().to(device)
    x = torch.randn(2, 8, device=device)
    start = extension().event_count()
    accounting = Accounting(device.type, modules={id(m): name for name, m in net.named_modules()})
    with accounting:
        net(x)
    log = extension().events(start)
    counts = accounting.counts()
    assert counts.fallbacks == (("aten::addmm.out", 1),) and [op for kind, op, *_ in log if kind == "fallback"] == ["aten::addmm.out"]
    assert counts.fallback_bytes == sum(nbytes for kind, op, _, nbytes in log if kind == "copy" and op) == 272
    # a fallback's copies are the fallback's: no sync of the program's, no copy of its own (the device's log agrees)
    assert counts.syncs == sum(kind == "sync" for kind, *_ in log) == 0
    assert counts.transfers_to_host == sum(kind == "copy" and not op and direction == "to_host" for kind, op, direction, _ in log) == 0
    (event,) = accounting.events
    assert (event.op, event.called, event.line, event.module) == (
        "aten::addmm.out",
        "aten::addmm",
        line_of(Net.forward, "self.fc(x)"),
        "fc",
    )


def test_a_tiny_gpt2_with_addmm_falling_back_counts_what_the_device_counted(device, gpt2):
    neurondev.host_device(fallback=("aten::addmm",))
    model, args, kwargs = gpt2
    import copy

    moved = copy.deepcopy(model).to(device)
    start = extension().event_count()
    accounting = Accounting(device.type)
    with torch.no_grad(), accounting:
        moved(*[a.to(device) for a in args], **kwargs)
    log = extension().events(start)
    counts = accounting.counts()
    assert counts.fallback_calls == sum(kind == "fallback" for kind, *_ in log) == 8  # 4 Conv1D per layer, 2 layers
    assert counts.fallback_bytes == sum(nbytes for kind, op, _, nbytes in log if kind == "copy" and op)
    assert {event.file.rsplit("/", 1)[-1] for event in accounting.events if event.kind == "fallback"} == {"pytorch_utils.py"}


def test_host_ops_under_the_mode_run_with_their_keywords_and_cost_the_device_nothing_even_where_its_own_op_falls_back(device):
    neurondev.host_device(fallback=("aten::addmm",))
    start = extension().event_count()
    accounting = Accounting(device.type)
    with accounting:
        ramp = torch.arange(4, dtype=torch.float64)  # a host factory: its dtype is a keyword
        total = torch.sum(torch.ones(2, 3), dim=1, keepdim=True)
        product = torch.addmm(torch.zeros(2, 2), torch.ones(2, 3), torch.ones(3, 2))  # the host's addmm: not the device's
    assert ramp.dtype == torch.float64 and total.shape == (2, 1) and torch.equal(product, torch.full((2, 2), 3.0))
    assert accounting.events == [] and extension().events(start) == []


def test_a_copy_made_inside_a_collective_is_counted_with_its_name(device):
    from neurondev.native.marks import collective

    accounting = Accounting(device.type)
    with accounting:
        with collective("all_reduce"):
            moved = torch.ones(4).to(device)
        moved.cpu()
    assert [(event.kind, event.collective) for event in accounting.events] == [("copy to device", "all_reduce"), ("copy to host", None)]


def test_a_python_number_beside_a_tensor_of_an_op_that_falls_back_computes_exactly_as_on_the_cpu(device):
    """cpu_fallback hands the mode a wrapped number as a Python number; bound again as a 0-dim tensor of the op's
    common dtype, it computes what it did: in float64, 0.1 stays float64's 0.1 (not float32's); an out= tensor last."""
    neurondev.host_device(fallback=("aten::add", "aten::mul"))
    x = torch.randn(4, dtype=torch.float64)
    on = x.to(device)
    written = torch.empty(4, dtype=torch.float64).to(device)
    start = extension().event_count()
    with Accounting(device.type) as accounting:
        shifted = on + 0.1
        torch.mul(on, 0.1, out=written)
    assert torch.equal(shifted.cpu(), x + 0.1) and torch.equal(written.cpu(), x * 0.1)
    assert [event.op for event in accounting.events] == [op for kind, op, *_ in extension().events(start) if kind == "fallback"]
    assert [event.op for event in accounting.events] == ["aten::add.out", "aten::mul.out"]


def test_the_fallbacks_own_move_called_by_a_program_is_its_copy_to_the_host(device):
    on = torch.ones(2, 3).to(device)
    start = extension().event_count()
    with Accounting(device.type) as accounting:
        (host,) = torch._to_cpu([on])  # what cpu_fallback calls, called by the program itself
    logged = [(direction, nbytes) for kind, _, direction, nbytes in extension().events(start) if kind == "copy"]
    assert host.device.type == "cpu" and torch.equal(host, torch.ones(2, 3))
    assert [(event.kind, event.bytes, event.line) for event in accounting.events] == [
        ("copy to host", 24, line_of(test_the_fallbacks_own_move_called_by_a_program_is_its_copy_to_the_host, "torch._to_cpu"))
    ]
    assert logged == [("to_host", 24)]


def test_a_copy_that_stays_on_the_device_costs_no_transfer_as_the_device_logged_it(device):
    source, destination = torch.ones(4).to(device), torch.zeros(4).to(device)
    start = extension().event_count()
    with Accounting(device.type) as accounting:
        destination.copy_(source)
        duplicate = source.to(device, copy=True)
    logged = [(kind, direction) for kind, _, direction, _ in extension().events(start)]
    assert logged == [("copy", "on_device")] * 2 and accounting.events == []
    assert torch.equal(destination.cpu(), torch.ones(4)) and duplicate.device == device
