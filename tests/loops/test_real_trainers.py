"""Real trainers and decoders under `neurondev watch`, each step checked against the runtime's own record: transformers'
Trainer (with accelerate) on a tiny GPT-2, an evaluation per epoch, and nanoGPT's train.py in small, each on XLA (PJRT
CPU) and on the host device; greedy
decoding of a tiny Llama with generate() (a growing and a static cache) and with a loop of one's own, on XLA."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TRAINERS = Path(__file__).parent / "trainers"


def watched(
    script: str, tmp_path: Path, backend: str, *arguments: str, options: tuple[str, ...] = ()
) -> tuple[subprocess.CompletedProcess, dict, dict]:
    """The script run as a user runs it under the command (a fresh process, TORCH_LOGS=recompiles on): what it
    printed, the watch's JSON report, and the runtime's counts the script wrote down before each compiled call."""
    report = tmp_path / "watch.json"
    command = [sys.executable, "-m", "neurondev", "watch", *options, "--json", str(report), str(TRAINERS / script), backend, *arguments]
    environ = {**os.environ, "TORCH_LOGS": "recompiles", "OUT_DIR": str(tmp_path / "out")}
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


def check_seconds_against_the_runtime(report: dict, runtime: dict) -> None:
    """The report's seconds per line add up to the runtime's own totals (the script's whole run is watched): torch_xla's
    CompileTime and dynamo's compile_times, within 5%; the costliest line leads the summary."""
    costs = report["costs"]
    xla = sum(row["seconds"] for row in costs if row["cause"].startswith("XLA compile"))
    dynamo = sum(row["seconds"] for row in costs if row["clock"] == "dynamo")
    assert xla == pytest.approx(runtime["after"]["xla_compile_seconds"], rel=0.05)
    assert dynamo == pytest.approx(runtime["after"]["dynamo_seconds"], rel=0.05)
    top = costs[0]
    assert f"Where the time went (the runtime's own clocks): {top['cause']} at {top['where']}" in report["summary"]


def check_against_dynamo(done: subprocess.CompletedProcess, report: dict, runtime: dict) -> None:
    """Every step's graphs are dynamo's (its counters), each recompile row one dynamo logged, and the phases are the Trainer's: 3 training calls, then 2 evaluation calls, per epoch."""
    assert [step["graphs"] for step in report["steps"]] == per_call(runtime, "graphs")
    assert sum(compile["graphs"] for compile in report["compiles"]) == runtime["after"]["graphs"] == 4  # forward and loss, x2
    rows = {(c["file"], c["line"]) for c in report["compiles"] if c["kind"] == "recompile"}
    logged = set(logged_recompiles(done.stderr))
    assert rows and rows <= logged  # the others dynamo logged are transformers' decorators, traced into no graph
    assert all("/transformers/" in file for file, _ in logged - rows) and report["looked_at"]
    assert [step["phase"] for step in report["steps"]] == (["training"] * 3 + ["evaluation"] * 2) * 2
    assert all(c["cause"] == "flag" and c["step"] == 4 for c in report["compiles"] if c["kind"] == "recompile")  # grad mode off: ND402


@pytest.mark.xla
@pytest.mark.slow
def test_transformers_trainer_on_xla_is_steady_as_torch_xla_counts_its_programs_step_by_step(tmp_path):
    """The Trainer marks a step after each optimizer step on XLA: torch_xla compiles programs in the first two
    training calls and the first evaluation call, none after: steady, exit 0, each step's programs torch_xla's own."""
    done, report, runtime = watched("hf_trainer.py", tmp_path, "openxla")
    assert done.returncode == 0, done.stderr[-3000:]
    check_against_dynamo(done, report, runtime)
    programs = per_call(runtime, "xla_compiles")
    assert [step["xla_compiles"] for step in report["steps"]] == programs  # torch_xla's CompileTime, step by step
    last_new = max(i for i, count in enumerate(programs, 1) if count)
    assert report["verdict"] == "steady" and report["steady_state"] == last_new == 4  # the first evaluation call
    assert report["exit_code"] == 0 and report["phase"] == "evaluation"
    check_seconds_against_the_runtime(report, runtime)


@pytest.mark.todays_torch  # the host device's trainers run once, with today's torch (make test's second run)
@pytest.mark.slow
def test_transformers_trainer_on_the_host_device_is_steady_and_its_copies_are_the_devices_own(tmp_path):
    """accelerate picks the host device as it would TorchNeuron's: dynamo compiles in the first training and
    evaluation calls only; each step's copies to the device (the batch) and to the host are the device's log."""
    done, report, runtime = watched("hf_trainer.py", tmp_path, "aot_eager")
    assert done.returncode == 0, done.stderr[-3000:]
    check_against_dynamo(done, report, runtime)
    assert [step["copies_to_device"] for step in report["steps"]] == per_call(runtime, "to_device")
    assert [step["copies_to_host"] for step in report["steps"]] == per_call(runtime, "to_host")
    assert report["verdict"] == "steady" and report["steady_state"] == 4 and report["exit_code"] == 0
    training = [step for step in report["steps"] if step["phase"] == "training"]
    assert all(step["syncs"] == 2 for step in training)  # logging_nan_inf_filter: torch.isnan(loss) or torch.isinf(loss)
    assert "sync(s) at trainer.py:" in report["summary"]


NANOGPT_PHASES = (["evaluation"] * 4 + ["training"] * 8) * 2 + ["evaluation"] * 4  # estimate_loss every 4 iterations, 2 micro-steps


@pytest.mark.xla
@pytest.mark.slow
def test_nanogpts_train_py_on_xla_is_steady_as_torch_xla_counts_it_its_learning_rate_no_cause(tmp_path):
    """Gradient accumulation, get_lr(it) into each param group (a Python float every iteration: torch_xla passes it
    as data, no new program), autocast, estimate_loss() every 4 iterations, checkpoints, a sync per iteration: dynamo
    compiles the evaluation's graph and the training's, XLA its programs in the first iterations, nothing after."""
    done, report, runtime = watched("nanogpt_train.py", tmp_path, "openxla", options=("--no-verify",))
    assert done.returncode == 0 and report["verdict"] == "steady", done.stderr[-3000:]
    assert [step["phase"] for step in report["steps"]] == NANOGPT_PHASES
    assert [step["graphs"] for step in report["steps"]] == per_call(runtime, "graphs")
    programs = per_call(runtime, "xla_compiles")
    assert [step["xla_compiles"] for step in report["steps"]] == programs  # torch_xla's CompileTime, call by call
    assert report["steady_state"] == max(i for i, count in enumerate(programs, 1) if count) and report["phase"] == "training"
    recompiles = [c for c in report["compiles"] if c["kind"] == "recompile"]
    assert len(recompiles) == len(logged_recompiles(done.stderr)) == 1 and recompiles[0]["step"] == 5  # the first training call
    assert torch_load(tmp_path / "out" / "ckpt.pt")["iter_num"] in (0, 4, 8)  # the script's checkpoint, as without the watch
    check_seconds_against_the_runtime(report, runtime)


@pytest.mark.todays_torch  # the host device's trainers run once, with today's torch (make test's second run)
@pytest.mark.slow
def test_nanogpts_train_py_on_the_host_device_is_steady_and_its_checkpoints_copies_are_the_devices_own(tmp_path):
    """On the host device: each step's copies to the device (the batches) and to the host (torch.save's state dicts,
    after an evaluation) are the device's own log, call by call; dynamo compiles twice, the verdict is steady."""
    done, report, runtime = watched("nanogpt_train.py", tmp_path, "aot_eager", options=("--no-verify",))
    assert done.returncode == 0 and report["verdict"] == "steady", done.stderr[-3000:]
    assert [step["phase"] for step in report["steps"]] == NANOGPT_PHASES
    assert [step["graphs"] for step in report["steps"]] == per_call(runtime, "graphs")
    assert [step["copies_to_device"] for step in report["steps"]] == per_call(runtime, "to_device")
    to_host = per_call(runtime, "to_host")
    assert [step["copies_to_host"] for step in report["steps"]] == to_host and to_host[3] > 0  # the first checkpoint
    assert all(report["steps"][i]["phase"] == "evaluation" for i, count in enumerate(to_host) if count)


def torch_load(path: Path) -> dict:
    import torch

    return torch.load(path, map_location="cpu", weights_only=False)


def statement(line: int) -> str:
    return (TRAINERS / "llama_generate.py").read_text().splitlines()[line - 1]


@pytest.mark.xla
@pytest.mark.slow
def test_generate_on_xla_recompiles_with_its_growing_cache_and_compiles_programs_with_a_static_one_as_the_runtime_says(tmp_path):
    """generate() with transformers' growing cache: dynamo recompiles every token (each one TORCH_LOGS logged) and
    ND404 says use a static cache; with the static cache dynamo compiles twice (prompt, then decode) and XLA still
    compiles programs every token, as torch_xla counts them: generate's own ids grow (its stop check reads them)."""
    done, report, runtime = watched("llama_generate.py", tmp_path, "openxla", "dynamic", options=("--no-verify",))
    assert done.returncode == 1 and report["verdict"] == "keeps compiling", done.stderr[-3000:]
    assert [step["graphs"] for step in report["steps"]] == per_call(runtime, "graphs") == [1] * 8
    assert [step["xla_compiles"] for step in report["steps"]] == per_call(runtime, "xla_compiles")
    recompiles = [(c["file"], c["line"]) for c in report["compiles"] if c["kind"] == "recompile"]
    assert len(recompiles) == len(logged_recompiles(done.stderr)) == 7  # dynamo logs the forward's decorator, we its forward
    failed = r"\[0/(\d+)\] \[__recompiles\]\s+- 0/(\d+): tensor '(\S+)' size mismatch at index \d+\. expected (\d+), actual (\d+)"
    # each recompile's guard of the entry before it (dynamo lists every entry's): the size it had, the size it got
    grown = {
        (before, after) for new, old, name, before, after in re.findall(failed, done.stderr) if int(old) == int(new) - 1 and "keys" in name
    }
    assert {(c["before"], c["after"]) for c in report["compiles"] if c["cause"] == "cache growth"} == grown
    assert [c["cause"] for c in report["compiles"]][1:] == ["prompt to decode"] + ["cache growth"] * 6
    assert [advice["cause"] for advice in report["advice"]] == ["cache growth"]

    done, report, runtime = watched("llama_generate.py", tmp_path, "openxla", "static", options=("--no-verify",))
    assert done.returncode == 1 and report["verdict"] == "keeps compiling", done.stderr[-3000:]
    assert [step["graphs"] for step in report["steps"]] == per_call(runtime, "graphs") == [1, 1] + [0] * 6
    programs = per_call(runtime, "xla_compiles")
    assert [step["xla_compiles"] for step in report["steps"]] == programs and all(programs[2:])  # torch_xla's, every token
    found = {advice["cause"]: advice for advice in report["advice"]}
    assert set(found) == {"lazy state growing", "stop check"}  # no sync in generate: its lazy graph grows, read each token
    assert found["stop check"]["file"].endswith("transformers/generation/utils.py")


@pytest.mark.xla
@pytest.mark.slow
def test_a_decode_loop_of_ones_own_over_a_static_cache_is_steady_on_xla_as_torch_xla_counts_it(tmp_path):
    """The advice for generate followed: a loop of one's own over a static cache and a preallocated token buffer,
    its position a device tensor, a sync per token: torch_xla compiles nothing after the first decode step."""
    done, report, runtime = watched("llama_generate.py", tmp_path, "openxla", "own")
    assert done.returncode == 0 and report["verdict"] == "steady", done.stderr[-3000:]
    programs = per_call(runtime, "xla_compiles")
    assert [step["xla_compiles"] for step in report["steps"]] == programs and not any(programs[3:])
    assert report["steady_state"] == 3 and report["advice"] == []


@pytest.mark.xla
@pytest.mark.slow
def test_what_makes_xla_compile_every_token_is_named_at_its_line_and_a_sync_per_step_is_found_not_enough_in_a_fresh_process(tmp_path):
    """A Python int made into the position each token (torch.arange(cur, cur + 1)), and the tokens concatenated onto a
    growing tensor: torch_xla compiles new programs every token (its CompileTime), the user syncs already, so a sync
    per step, run in a fresh process, is not enough; torch_xla's own dump of the graphs names each line and its values."""
    done, report, runtime = watched("llama_generate.py", tmp_path, "openxla", "own-arange-cat")
    assert done.returncode == 1 and report["verdict"] == "keeps compiling", done.stderr[-3000:]
    programs = per_call(runtime, "xla_compiles")
    assert [step["xla_compiles"] for step in report["steps"]] == programs and all(programs[2:])
    named = {advice["cause"]: advice for advice in report["advice"]}
    assert set(named) == {"number in program", "size in program"} and not any(a["verified"] for a in report["advice"])
    assert named["number in program"]["value"] == "9 -> 10 -> 11 -> ... -> 13"
    assert "torch.arange(cur" in statement(named["number in program"]["line"])
    assert named["size in program"]["value"] == "[1,9] -> [1,10] -> [1,11] -> ... -> [1,13]"
    assert "torch.cat(" in statement(named["size in program"]["line"])
    (tried,) = report["tried"]
    assert tried["check"]["kind"] == "not enough"  # the sync check ran again, in a process of its own
