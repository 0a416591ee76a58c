"""The watch command over a script killed by a signal: the steps recorded up to its last are written, with how it
ended, and nothing of neurondev's is left in the temporary directory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

KILLED_AT_STEP = """
import os, signal, sys, time
import torch

@torch.compile(backend="eager")
def step(x, n):
    return x * n + 1

x = torch.randn(4)
for i in range(8):
    x = step(x, i % 3 + 1)  # three values of n: dynamo compiles once, recompiles once (then dynamic)
    time.sleep(0.5)  # a step of a real loop's length: the record kept at each
    if i == 5:
        print("unique_graphs", torch._dynamo.utils.counters["stats"]["unique_graphs"], flush=True)
        os.kill(os.getpid(), signal.{signal})
"""


def watched(tmp_path: Path, kill: str) -> tuple[subprocess.CompletedProcess, dict, Path]:
    script = tmp_path / "train.py"
    script.write_text(KILLED_AT_STEP.format(signal=kill))
    temporary = tmp_path / "temporary"
    temporary.mkdir()
    environ = {**os.environ, "TMPDIR": str(temporary)}
    command = [sys.executable, "-m", "neurondev", "watch", "--json", "w.json", "--html", "w.html", str(script)]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=environ)
    return done, json.loads((tmp_path / "w.json").read_text()), temporary


@pytest.mark.todays_torch  # no device: both torches alike, run once (make test's second run)
def test_a_script_killed_by_sigkill_leaves_its_steps_and_how_it_ended_in_the_json_and_the_card(tmp_path):
    done, report, temporary = watched(tmp_path, "SIGKILL")
    assert done.returncode == 128 + signal.SIGKILL, done.stderr[-2000:]
    assert report["raised"]["exception"] == "SIGKILL" and report["raised"]["signal"] == signal.SIGKILL
    assert len(report["steps"]) == 6  # every step up to the one that killed the process
    dynamo_graphs = int(done.stdout.split("unique_graphs")[-1].split()[0])  # dynamo's own count, printed by the script
    assert sum(step["dynamo_compiles"] for step in report["steps"]) == dynamo_graphs == 2
    card = (tmp_path / "w.html").read_text()
    assert "killed by SIGKILL (signal 9) after 6 step(s)" in card
    assert "killed by SIGKILL (signal 9): the record above is up to its step 6" in done.stderr
    assert not list(temporary.glob("neurondev-*"))  # the journal's folder and torch_xla's analysis went with the run
