"""transfer_table(): every copy between host and device per call, by scenario, direction and line; copies into a
host tensor and uploads are counted in the program's figures and said in the summary; a fix that keeps an upload
is not verified."""

from __future__ import annotations

import pytest
import torch

import neurondev
from neurondev.devices.host.loader import extension
from tests.helpers import line_of


def written_out(x):
    out = torch.empty(64, dtype=torch.float32, device="cpu")  # the host, written out: the program keeps it there
    out.copy_(torch.relu(x) * 2)
    return out, torch.arange(64).to(x.device) + x


@pytest.fixture
def device():
    yield neurondev.host_device()
    neurondev.host_device()


def rows(table, scenario, direction):
    return [(r.calls, r.bytes, r.line) for r in table.itertuples() if r.scenario == scenario and r.direction == direction]


def test_a_copy_into_a_host_tensor_and_an_upload_are_counted_per_call_with_their_lines_on_a_native_device(device):
    ex = neurondev.explain(written_out, torch.randn(64), target=device, quiet=True)
    copy, upload = line_of(written_out, "out.copy_"), line_of(written_out, "torch.arange")
    table = ex.transfer_table()
    assert rows(table, "your program as written", "to host") == [(1, 256, copy)]  # aot's functional copy into the host tensor
    assert rows(table, "your program as written", "to device") == [(1, 512, upload)]
    (before,) = ex.before  # traced on CPU, torch.arange(64).to(cpu) meets the device's values: refused, as a real device does
    assert before.error is not None and "same device" in str(before.error) and before.error.line == upload
    assert rows(table, "graph traced on CPU, before the pass", "to host") == []  # a run that failed copies nothing
    assert rows(table, "graph traced on CPU, after the pass", "to device") == [(1, 512, upload)]
    call = ex.program.as_written.calls[-1]
    assert (call.transfers_to_host, call.bytes_to_host, call.transfers_to_device, call.bytes_to_device) == (1, 256, 1, 512)
    summary = ex.summary()
    assert f"1 copy(ies) to the host (test_transfers.py:{copy}), 1 to the device (test_transfers.py:{upload})" in summary


def test_the_program_counts_the_copies_the_device_made(device):
    start = extension().event_count()
    ex = neurondev.explain(written_out, torch.randn(64), target=device, quiet=True)
    assert extension().event_count() > start
    call = ex.program.as_written.calls[-1]
    assert call.host_copies[0].function == "aten::copy" and call.uploads[0].function == "aten::_to_copy"


@pytest.mark.xla
def test_on_xla_the_graph_breaks_and_uploads_are_copy_sites_with_their_lines_and_the_program_has_none(seed_explained):
    table = seed_explained.transfer_table()
    assert rows(table, "graph traced on CPU, before the pass", "to host") == [
        (1, None, line_of(neurondev.examples.seed_function, "out.copy_"))
    ]
    assert rows(table, "graph traced on CPU, after the pass", "to host") == []
    assert set(table.direction) <= {"to host", "to device"} and list(table.columns) == [
        "scenario",
        "direction",
        "calls",
        "bytes",
        "file",
        "line",
        "code",
        "module",
        "what",
    ]


def literal_scale(x):
    return x * torch.tensor([1.0, 2.0, 3.0, 4.0], device=x.device)


OLD_AOT = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2]) < (2, 13)


def test_a_fix_that_keeps_an_upload_on_every_call_is_not_verified(device):
    ex = neurondev.explain(literal_scale, torch.randn(4), target=device, quiet=True)
    (fix,) = ex.fixes
    line = line_of(literal_scale, "torch.tensor")
    if OLD_AOT:  # torch 2.9's aot_autograd leaves the constant on the host and uploads it on every call (PyTorch issue 178019)
        assert [(u.line, u.transfers_to_device) for u in ex.program.as_written.uploads] == [(line, 1)]
        assert fix.status != "verified" and fix.check.kind == "uploads" and fix.check.count >= 1
    else:  # torch 2.13 puts the constant on the device once: no upload to keep
        assert ex.program.as_written.uploads == () and fix.check.kind != "uploads"
