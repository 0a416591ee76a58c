"""neurondev watch under torchrun: every rank watched, rank 0 writes one JSON and one card for the job, names the
rank that recompiled alone with its cause and line, and fails the job when the ranks compile differently."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from neurondev.gallery import ragged_ranks

SCRIPT = ragged_ranks.__file__


def watched_job(procs: int, folder, *arguments: str) -> tuple[int, dict, str]:
    """``torchrun --nproc-per-node procs -m neurondev watch --json --html ragged_ranks.py arguments``: its exit
    code, the job's JSON and the card."""
    report, card = folder / "ranks.json", folder / "ranks.html"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={procs}", "-m", "neurondev", "watch"]
    command += ["--json", str(report), "--html", str(card), SCRIPT, *arguments]
    environ = {k: v for k, v in os.environ.items() if k != "PJRT_DEVICE"} | {"OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=environ, cwd=folder)
    assert report.is_file(), done.stdout[-3000:] + done.stderr[-6000:]
    return done.returncode, json.loads(report.read_text()), card.read_text()


@pytest.mark.parametrize("procs", [2, 4])
def test_the_rank_that_recompiles_alone_is_named_with_its_cause_and_the_job_fails(tmp_path, procs):
    code, job, card = watched_job(procs, tmp_path)
    last = procs - 1
    assert code != 0 and job["diverges_in_compiles"] is True
    assert [data["rank"] for data in job["ranks"]] == list(range(procs)) and job["missing"] == []
    (divergence,) = job["divergence"]
    assert (divergence["rule"], divergence["kind"], divergence["step"], divergence["function"]) == (
        "ND412",
        "recompile",
        4,
        "Linear.forward",
    )
    assert divergence["ranks"] == [last] and divergence["others"] == list(range(last))
    (cause,) = divergence["causes"]
    assert (cause["rank"], cause["rule"], cause["value"], cause["before"], cause["after"]) == (last, "ND405", "args[0]", "4", "3")
    assert cause["file"].endswith("linear.py") and isinstance(cause["line"], int)
    # each rank's own record agrees: the last recompiled at step 4, the others compiled once
    for data in job["ranks"]:
        kinds = [(row["kind"], row["step"]) for row in data["compiles"]]
        assert kinds == ([("first", 1), ("recompile", 4)] if data["rank"] == last else [("first", 1)])
    assert f"rank {last} recompiled Linear.forward and" in card and "ND412" in card
    assert card.count("<th>rank ") == procs


def test_padded_ranks_do_not_diverge_and_the_job_exits_0(tmp_path):
    code, job, card = watched_job(4, tmp_path, "--pad")
    assert code == 0 and job["divergence"] == [] and job["diverges_in_compiles"] is False
    assert all([(row["kind"], row["step"]) for row in data["compiles"]] == [("first", 1)] for data in job["ranks"])
    assert "The ranks do not diverge." in card


def test_while_the_script_keeps_its_process_group_the_records_travel_through_it(tmp_path):
    code, job, _ = watched_job(2, tmp_path, "--keep-group")
    assert code != 0 and [d["ranks"] for d in job["divergence"]] == [[1]]
    assert not list(tmp_path.glob(".neurondev-ranks-*"))  # no files beside the output


def test_a_watch_block_inside_the_job_gathers_its_ranks_to_rank_0(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(
        "import sys\nimport neurondev\nfrom neurondev.gallery import ragged_ranks\n\n"
        "with neurondev.watch() as watched:\n    ragged_ranks.main([])\n"
        "job = watched.across_ranks(sys.argv[1])\n"
        "if job is not None:\n    open(sys.argv[1] + '/job.json', 'w').write(job.to_json())\n    print(job.summary())\n"
    )
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", str(script), str(tmp_path)]
    environ = {k: v for k, v in os.environ.items() if k != "PJRT_DEVICE"} | {"OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=environ, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-6000:]  # the program's own exit: the watch reports, it does not fail it
    job = json.loads((tmp_path / "job.json").read_text())
    assert [(d["kind"], d["ranks"], d["others"]) for d in job["divergence"]] == [("recompile", [1], [0])]
    assert "rank 1 recompiled Linear.forward and rank 0 did not" in done.stdout
    assert not list(tmp_path.glob(".neurondev-ranks-*"))  # the files it met through are removed
