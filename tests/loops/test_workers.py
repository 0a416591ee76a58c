"""A script that runs its loop in worker processes (torch.multiprocessing.spawn) under `neurondev watch`: the workers
are named, with the line that started them, as not watched, and the command exits 2 rather than pass a loop it never saw."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.todays_torch  # both torches pass it: make test runs it once, with today's torch

SCRIPT = """
import torch
import torch.multiprocessing as mp


def train(rank):
    step = torch.compile(lambda x, n: x * n, backend="eager")
    for n in range(3):
        step(torch.ones(2), n + 2)  # a Python number: a recompile in each worker, unseen by the watch


if __name__ == "__main__":
    mp.spawn(train, nprocs=2)
"""


def test_workers_started_with_spawn_are_named_as_not_watched_and_the_command_does_not_pass(tmp_path):
    script = tmp_path / "spawned.py"
    script.write_text(SCRIPT)
    command = [sys.executable, "-m", "neurondev", "watch", "--json", str(tmp_path / "w.json"), str(script)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "The script started 2 worker process(es) with torch.multiprocessing (spawn: train at spawned.py:13)" in done.stdout
    assert "nothing of it was watched" in done.stderr
    report = json.loads((tmp_path / "w.json").read_text())
    assert report["workers"] == [{"count": 2, "function": "train", "method": "spawn", "file": str(script), "line": 13}]
    assert report["compiles"] == []  # the workers' compiles happened in their own processes
