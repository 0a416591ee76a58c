"""Real trainers under `neurondev watch`, each step checked against the runtime's own record: transformers' Trainer
(with accelerate) on a tiny GPT-2, an evaluation per epoch, on XLA (PJRT CPU) and on the host device."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TRAINERS = Path(__file__).parent / "trainers"


def watched(script: str, backend: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess, dict, dict]:
    """The script run as a user runs it under the command (a fresh process, TORCH_LOGS=recompiles on): what it
    printed, the watch's JSON report, and the runtime's counts the script wrote down before each compiled call."""
    report = tmp_path / "watch.json"
    command = [sys.executable, "-m", "neurondev", "watch", "--json", str(report), str(TRAINERS / script), backend]
    environ = {**os.environ, "TORCH_LOGS": "recompiles", "TRAINER_OUTPUT": str(tmp_path / "out")}
    # a native device where torch_xla is installed too: accelerate's own switch (else it would set XLA up)
    environ.update({"PJRT_DEVICE": "CPU"} if backend == "openxla" else {"USE_TORCH_XLA": "0"})
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=environ, cwd=tmp_path)
    assert done.stdout.count("runtime: ") == 1, (done.stdout[-2000:], done.stderr[-3000:])
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("runtime: ")]
    return done, json.loads(report.read_text()), json.loads(line.removeprefix("runtime: "))


def per_call(runtime: dict, key: str) -> list[int]:
    """The runtime's count of each compiled call's step: from its call to the next (the last: to the end)."""
    counts = [counts[key] for counts in runtime["before_each_call"]] + [runtime["after"][key]]
    return [after - before for before, after in zip(counts, counts[1:])]


def logged_recompiles(stderr: str) -> list[tuple[str, int]]:
    """Each 'Recompiling function F in FILE:LINE' dynamo logged (TORCH_LOGS=recompiles), as (file, line)."""
    return [(file, int(line)) for file, line in re.findall(r"Recompiling function \S+ in (\S+):(\d+)", stderr)]


def check_against_dynamo(done: subprocess.CompletedProcess, report: dict, runtime: dict) -> None:
    """Every step's graphs are dynamo's (its counters), each recompile row one dynamo logged, and the phases are the Trainer's: 3 training calls, then 2 evaluation calls, per epoch."""
    assert [step["graphs"] for step in report["steps"]] == per_call(runtime, "graphs")
    assert sum(compile["graphs"] for compile in report["compiles"]) == runtime["after"]["graphs"] == 4  # forward and loss, x2
    rows = {(c["file"], c["line"]) for c in report["compiles"] if c["kind"] == "recompile"}
    logged = set(logged_recompiles(done.stderr))
    assert rows and rows <= logged  # the others dynamo logged are transformers' decorators, traced into no graph
    assert all("/transformers/" in file for file, _ in logged - rows) and report["looked_at"]
    assert [step["phase"] for step in report["steps"]] == (["training"] * 3 + ["evaluation"] * 2) * 3
    assert all(c["cause"] == "other" and c["step"] == 4 for c in report["compiles"] if c["kind"] == "recompile")  # grad mode off


@pytest.mark.xla
@pytest.mark.slow
def test_transformers_trainer_on_xla_is_steady_as_torch_xla_counts_its_programs_step_by_step(tmp_path):
    """The Trainer marks a step after each optimizer step on XLA: torch_xla compiles programs in the first two
    training calls and the first evaluation call, none after: steady, exit 0, each step's programs torch_xla's own."""
    done, report, runtime = watched("hf_trainer.py", "openxla", tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    check_against_dynamo(done, report, runtime)
    programs = per_call(runtime, "xla_compiles")
    assert [step["xla_compiles"] for step in report["steps"]] == programs  # torch_xla's CompileTime, step by step
    last_new = max(i for i, count in enumerate(programs, 1) if count)
    assert report["verdict"] == "steady" and report["steady_state"] == last_new == 4  # the first evaluation call
    assert report["exit_code"] == 0 and report["phase"] == "evaluation"


@pytest.mark.slow
def test_transformers_trainer_on_the_host_device_is_steady_and_its_copies_are_the_devices_own(tmp_path):
    """accelerate picks the host device as it would TorchNeuron's: dynamo compiles in the first training and
    evaluation calls only; each step's copies to the device (the batch) and to the host are the device's log."""
    done, report, runtime = watched("hf_trainer.py", "aot_eager", tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    check_against_dynamo(done, report, runtime)
    assert [step["copies_to_device"] for step in report["steps"]] == per_call(runtime, "to_device")
    assert [step["copies_to_host"] for step in report["steps"]] == per_call(runtime, "to_host")
    assert report["verdict"] == "steady" and report["steady_state"] == 4 and report["exit_code"] == 0
    training = [step for step in report["steps"] if step["phase"] == "training"]
    assert all(step["syncs"] == 2 for step in training)  # logging_nan_inf_filter: torch.isnan(loss) or torch.isinf(loss)
    assert "sync(s) at trainer.py:" in report["summary"]
