"""watch on a native device: dynamo's compiles, and per step the copies to the host, syncs and CPU fallbacks, counted
around compiled code on every torch (the dispatcher's observer, or the device's own log: no dispatch mode)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

import neurondev
from tests.helpers import run_python


@pytest.fixture
def device():
    yield neurondev.host_device(fallback=["aten::addmm"])
    neurondev.host_device()


@pytest.mark.parametrize("accounting", ["log", "observer"])
def test_each_step_counts_its_syncs_and_fallbacks(device, accounting, monkeypatch):
    """The device's own log and the dispatcher's observer see around compiled code on every torch (a dispatch mode
    made torch 2.9's dynamo compile again: it saw nothing there)."""
    monkeypatch.setenv("NEURONDEV_ACCOUNTING", accounting)
    torch._dynamo.reset()  # the lambda below is one code object for both cases: compiled afresh in each
    net = torch.nn.Linear(8, 4).to(device)
    step = torch.compile(lambda x: net(x).relu().sum(), backend=neurondev.backend)
    with neurondev.watch() as w:
        for _ in range(4):
            step(torch.randn(2, 8, device=device)).item()
    assert list(w.steps["dynamo_compiles"]) == [1, 0, 0, 0] and w.steady_state == 1
    assert list(w.steps["syncs"]) == [1, 1, 1, 1]  # .item() after each step
    assert list(w.steps["fallbacks"]) == [1, 1, 1, 1]  # aten::addmm, run on the host
    assert list(w.steps["copies_to_host"]) == [0, 0, 0, 0]
    assert "On the native device: 0 copy(ies) to the host, 0 to the device, 4 sync(s), 4 CPU fallback(s)" in w.summary()
    assert w.record.native_gap is None


SCRIPT = """
import torch
import neurondev

device = neurondev.host_device(fallback=("aten::index_select",))  # the script loads its device itself
embedding = torch.nn.Embedding(10, 4).to(device)
step = torch.compile(lambda ids: embedding(ids.to(device)).sum(), backend="neurondev")
for _ in range(3):
    print(step(torch.tensor([1, 2, 3])).item())
"""


def test_the_command_counts_a_device_the_script_loads_itself_each_cost_on_its_line(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    report = tmp_path / "watch.json"
    done = subprocess.run(
        [sys.executable, "-m", "neurondev", "watch", "--json", str(report), str(script)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(report.read_text())
    steps = record["steps"]
    numbered = SCRIPT.splitlines()
    at = {name: f"train.py:{next(i for i, text in enumerate(numbered, 1) if name in text)}" for name in ("lambda", ".item()")}
    assert [(s["fallbacks"], s["copies_to_device"], s["syncs"]) for s in steps[1:]] == [(1, 1, 1)] * 2  # the first: the model too
    last = steps[-1]["device_lines"]
    assert (
        f"1 x aten::index_select at {at['lambda']}" in last
        and f"to device at {at['lambda']}" in last
        and f"sync(s) at {at['.item()']}" in last
    )
    assert record["native_gap"] is None


def test_a_watched_function_on_a_native_device_has_its_calls_costs_in_the_native_columns(device):
    embedding = torch.nn.Embedding(10, 4).to(device)

    def forward(ids):
        return embedding(ids).sum()

    neurondev.host_device(fallback=("aten::index_select",))
    watched = neurondev.watch(forward)
    for _ in range(2):
        watched(torch.tensor([1, 2, 3]).to(device))
    calls = watched.calls
    assert {"copies_to_host", "copies_to_device", "syncs", "fallbacks", "device_lines"} <= set(calls.columns)
    assert list(calls.fallbacks) == [1, 1] and all("aten::index_select" in text for text in calls.device_lines)


def test_a_compiled_module_under_ddp_on_the_host_device_is_watched_to_its_end():
    """dynamo makes fake tensors of DDP's views; a dispatch mode then saw prim::device, an op the dispatcher does not
    have, and the watch raised it into the user's program: watched to its end, by the observer now."""
    result = run_python("""
        import torch, torch.distributed as dist, neurondev
        from torch.nn.parallel import DistributedDataParallel
        device = neurondev.host_device()
        dist.init_process_group(store=dist.HashStore(), rank=0, world_size=1)
        model = DistributedDataParallel(torch.compile(torch.nn.Linear(8, 1).to(device), backend="aot_eager"))
        with neurondev.watch() as watched:
            batch = torch.randn(4, 9).to(device)
            model(batch[:, :8]).sum().backward()
        print([(c.kind, c.step) for c in watched.record.compiles], watched.record.raised)
        dist.destroy_process_group()
    """)
    assert result.stdout.strip().splitlines()[-1] == "[('first', 1)] None", result.stderr[-3000:]
