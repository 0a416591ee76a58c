"""torch_xla's own analysis of each compile, written by a real run and read back: cause, inputs, the line."""

from __future__ import annotations

import pytest

from neurondev.xla.analysis import AnalysisLog, enable, status
from tests.helpers import run_python

pytestmark = pytest.mark.xla

PROGRAM = """
import torch, torch_xla
d = torch_xla.device()
acc = torch.zeros(4, device=d)
for i in range(2):
    acc = acc + torch.ones(4, device=d) * i
print(acc.sum().item())  # a host read of a lazy value
torch_xla.sync()
"""


def test_a_host_read_and_a_sync_are_read_with_their_lines(tmp_path):
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    log = tmp_path / "analysis.txt"
    done = run_python(f"exec(open({str(program)!r}).read())", PT_XLA_DEBUG_LEVEL="2", PT_XLA_DEBUG_FILE=str(log), PJRT_DEVICE="CPU")
    assert done.returncode == 0, done.stderr[-1500:]
    records = AnalysisLog(log).between(0, log.stat().st_size)
    compiled = [r for r in records if r.phase == "compilation"]
    assert [r.kind for r in compiled] == ["host read", "user sync"]
    read, synced = compiled
    assert read.inputs is not None and read.graph_hash and any(line == 7 for _, line, _ in read.frames)  # print(acc.sum().item())
    assert any(line == 8 for _, line, _ in synced.frames) and synced.graph_hash != read.graph_hash


def test_it_can_only_be_turned_on_before_the_first_compile(tmp_path):
    done = run_python(
        f"""
import torch, torch_xla
from neurondev.xla.analysis import enable, status
(torch.ones(2, device=torch_xla.device()) * 2).sum().item()
print("enabled:", enable({str(tmp_path / "a.txt")!r}), status()[:2])
""",
        PJRT_DEVICE="CPU",
    )
    assert "enabled: False (False, 'off')" in done.stdout, done.stderr[-1500:]
    assert callable(enable) and callable(status)


WATCHED_SYNCS = """
import torch, torch_xla, neurondev
d = torch_xla.device()
with neurondev.watch(xla_analysis=True) as w:
    acc = torch.zeros(4, device=d)
    for i in range(3):
        acc = acc + torch.ones(4, device=d) * i
        torch_xla.sync()
programs = [program for step in w.record.steps for program in step.programs]
print("kinds:", sorted({program.kind for program in programs}))
print("lines:", sorted({program.line for program in programs}))
"""


def test_under_a_watch_the_users_own_sync_is_a_user_sync_on_its_line_not_a_host_read(tmp_path):
    program = tmp_path / "program.py"
    program.write_text(WATCHED_SYNCS)
    done = run_python(f"import runpy; runpy.run_path({str(program)!r})", PJRT_DEVICE="CPU")
    assert done.returncode == 0, done.stderr[-1500:]
    assert "kinds: ['user sync']" in done.stdout and "lines: [8]" in done.stdout, done.stdout
