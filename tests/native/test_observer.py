"""The dispatcher's observer on a native device, against the device's own log (the host test device records every copy,
sync and fallback it makes in C++) and torch.profiler: counts equal, each event on the program's line, and no value
changed by watching (it reads PyTorch's record of each op and dispatches nothing)."""

from __future__ import annotations

import pytest
import torch

import neurondev
from neurondev.devices.host.loader import extension
from neurondev.native.logged import LoggedAccounting
from neurondev.native.observer import observer_for
from tests.helpers import line_of, run_python


@pytest.fixture
def device():
    yield neurondev.host_device()
    neurondev.host_device()


def observed(device, **modules) -> LoggedAccounting:
    return LoggedAccounting(device.type, observer_for(device.type), **modules)


def program(x, device):
    y = x.to(device)  # a copy to the device
    z = (y * 2).sum()
    scale = z.item()  # a sync
    table = torch.tensor([1.0, 2.0], device=device)  # built on the host, uploaded
    return (y * scale + table.sum()).cpu()  # a copy to the host


def test_copies_and_syncs_are_counted_as_the_device_made_them_each_on_its_line(device):
    start = extension().event_count()
    with observed(device) as accounting:
        program(torch.randn(4), device)
    device_copies = [(direction, nbytes) for kind, _, direction, nbytes in extension().events(start) if kind == "copy"]
    counts = accounting.counts()
    assert counts.transfers_to_device == sum(d == "to_device" for d, _ in device_copies) == 2
    assert counts.transfers_to_host == sum(d == "to_host" for d, _ in device_copies) == 1
    assert counts.bytes_to_device == sum(n for d, n in device_copies if d == "to_device") == 16 + 8
    assert counts.syncs == 1 and [(e.op, e.called) for e in accounting.events if e.kind == "sync"] == [
        ("aten::_local_scalar_dense", "aten::item")
    ]
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
    with observed(device, modules={id(m): name for name, m in net.named_modules()}) as accounting:
        net(x)
    log = extension().events(start)
    counts = accounting.counts()
    assert counts.fallbacks == (("aten::addmm.out", 1),) and [op for kind, op, *_ in log if kind == "fallback"] == ["aten::addmm.out"]
    assert (
        counts.fallback_bytes
        == sum(nbytes for kind, op, direction, nbytes in log if kind == "copy" and op and direction != "on_device")
        == 272
    )
    # a fallback's copies are the fallback's: no sync of the program's, no copy of its own (the device's log agrees)
    assert counts.syncs == sum(kind == "sync" for kind, *_ in log) == 0
    assert counts.transfers_to_host == sum(kind == "copy" and not op and direction == "to_host" for kind, op, direction, _ in log) == 0
    (event,) = accounting.events
    # the op the program called: the outermost ATen op above the fallback (a dispatch mode saw only addmm beneath it)
    assert (event.op, event.called, event.line, event.module) == (
        "aten::addmm.out",
        "aten::linear",
        line_of(Net.forward, "self.fc(x)"),
        "fc",
    )


class Block(torch.nn.Module):
    """A ResNet basic block with its downsampling path: three convolutions forward."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.Conv2d(8, 8, 3, padding=1)
        self.down = torch.nn.Conv2d(3, 8, 1, stride=2)

    def forward(self, x):
        return torch.relu(self.conv2(torch.relu(self.conv1(x))) + self.down(x))


def test_a_blocks_convolutions_falling_back_forward_and_backward_are_each_counted_as_the_device_and_the_profiler_count_them(device):
    """A device's own fallback path for an op with no CPU kernel to reach (convolution_overrideable) moves its inputs
    with aten::_to_cpu as cpu_fallback does: a dispatch mode saw 1 of 7 per call."""
    neurondev.host_device(fallback=("aten::convolution_overrideable", "aten::convolution_backward_overrideable"))
    block = Block().to(device)
    x = torch.randn(2, 3, 8, 8, device=device)
    start = extension().event_count()
    with torch.profiler.profile() as profile, observed(device) as accounting:
        block(x).sum().backward()
    logged = [(op, nbytes) for kind, op, _, nbytes in extension().events(start) if kind == "fallback"]
    moved = {id(event.cpu_parent) for event in profile.events() if event.name == "aten::_to_cpu"}  # each op that moved its inputs
    fell = [(event.op, event.bytes) for event in accounting.events if event.kind == "fallback"]
    assert sorted(fell) == sorted(logged) and len(fell) == len(moved) == 3 + 3  # three convolutions, and their backward
    assert {event.line for event in accounting.events if event.kind == "fallback" and "backward" not in event.op} == {
        line_of(Block.forward, "return torch.relu")
    }


def test_a_backward_on_the_devices_autograd_thread_is_on_the_line_that_asked_for_it_and_says_nothing_on_stderr():
    """Autograd runs a device's backward on a thread of its own, whose Python stack is the callback's alone: its events
    were attributed nowhere, and 'call stack is not deep enough' was printed once per event."""
    result = run_python("""
        import torch, neurondev
        from neurondev.native.logged import LoggedAccounting
        from neurondev.native.observer import observer_for
        device = neurondev.host_device(fallback=("aten::mm",))
        w = torch.randn(4, 4, requires_grad=True).to(device)
        accounting = LoggedAccounting(device.type, observer_for(device.type))
        with accounting:
            loss = (torch.randn(3, 4).to(device) @ w).sum()
            loss.backward()
        print(sorted({(e.kind, e.line) for e in accounting.events if e.kind == "fallback"}))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[('fallback', 9), ('fallback', 10)]", result.stdout  # forward's @, backward's line
    assert "Exception ignored" not in result.stderr and "not deep enough" not in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("name", "run"),
    [
        ("deg2rad", lambda x: torch.deg2rad(x)),
        ("erfc backward", lambda x: torch.autograd.grad(torch.erfc(x).sum(), x)[0]),
        ("softmax", lambda x: torch.softmax(x, dim=0)),
    ],
)
def test_watching_changes_no_bfloat16_value_forward_or_backward(device, name, run):
    """A dispatch mode that ran each op's kernel again beneath itself changed bf16 results (deg2rad in 2 of 64
    elements, erfc's backward in 35 of 64): the observer dispatches nothing."""
    torch.manual_seed(0)
    x = (torch.randn(64) * 3).to(torch.bfloat16).to(device).requires_grad_(True)
    plain = run(x)
    with observed(device):
        watched = run(x)
    assert torch.equal(plain.cpu().view(torch.int16), watched.cpu().view(torch.int16)), name


def test_host_ops_cost_the_device_nothing_even_where_its_own_op_falls_back(device):
    neurondev.host_device(fallback=("aten::addmm",))
    start = extension().event_count()
    with observed(device) as accounting:
        ramp = torch.arange(4, dtype=torch.float64)  # a host factory: its dtype is a keyword
        total = torch.sum(torch.ones(2, 3), dim=1, keepdim=True)
        product = torch.addmm(torch.zeros(2, 2), torch.ones(2, 3), torch.ones(3, 2))  # the host's addmm: not the device's
    assert ramp.dtype == torch.float64 and total.shape == (2, 1) and torch.equal(product, torch.full((2, 2), 3.0))
    assert accounting.events == [] and extension().events(start) == []


def test_a_copy_made_inside_a_collective_is_counted_with_its_name(device):
    from neurondev.native.marks import collective

    with observed(device) as accounting:
        with collective("all_reduce"):
            moved = torch.ones(4).to(device)
        moved.cpu()
    assert [(event.kind, event.collective) for event in accounting.events] == [("copy to device", "all_reduce"), ("copy to host", None)]
    assert accounting.counts().collective_copies == 1


def test_a_python_number_beside_a_tensor_of_an_op_that_falls_back_computes_exactly_as_on_the_cpu(device):
    neurondev.host_device(fallback=("aten::add", "aten::mul"))
    x = torch.randn(4, dtype=torch.float64)
    on = x.to(device)
    written = torch.empty(4, dtype=torch.float64).to(device)
    start = extension().event_count()
    with observed(device) as accounting:
        shifted = on + 0.1
        torch.mul(on, 0.1, out=written)
    assert torch.equal(shifted.cpu(), x + 0.1) and torch.equal(written.cpu(), x * 0.1)
    assert [event.op for event in accounting.events] == [op for kind, op, *_ in extension().events(start) if kind == "fallback"]
    assert [event.op for event in accounting.events] == ["aten::add.out", "aten::mul.out"]


def test_the_fallbacks_own_move_called_by_a_program_is_its_copy_to_the_host(device):
    on = torch.ones(2, 3).to(device)
    start = extension().event_count()
    with observed(device) as accounting:
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
    with observed(device) as accounting:
        destination.copy_(source)
        duplicate = source.to(device, copy=True)
    logged = [(kind, direction) for kind, _, direction, _ in extension().events(start)]
    assert logged == [("copy", "on_device")] * 2 and accounting.events == []
    assert torch.equal(destination.cpu(), torch.ones(4)) and duplicate.device == device


def test_the_observer_counts_only_the_device_it_watches(device):
    """CPU tensors cost nothing, and a fake tensor dynamo traces with says it is on the device: nothing runs there."""
    from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: TID251 - dynamo's own fake tensors, the case itself

    with observed(device) as accounting:
        with FakeTensorMode() as fake:
            fake.from_tensor(torch.ones(4).to(device)).cpu()  # no copy: nothing ran on the device
        torch.ones(4).nonzero()  # the host's own sync: not the device's
    assert accounting.events == [] and accounting.counts() == type(accounting.counts())()
