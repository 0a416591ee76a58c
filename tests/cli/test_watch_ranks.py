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


@pytest.mark.ddp_teardown
def test_the_gallerys_ragged_job_names_the_rank_that_recompiles_alone_and_its_padded_fix_does_not_diverge(tmp_path):
    """The how-to's job (docs/how-to/ranks.md) as written: the last rank recompiles alone at the user's line, and
    --pad is the fix. Each rank's own record agrees with the divergence."""
    code, job, card = watched_job(2, tmp_path)
    assert code == 1 and job["diverges_in_compiles"] is True and job["missing"] == []
    (divergence,) = job["divergence"]
    assert (divergence["rule"], divergence["kind"], divergence["step"], divergence["function"], divergence["ranks"]) == (
        "ND412",
        "recompile",
        4,
        "Linear.forward",
        [1],
    )
    (cause,) = divergence["causes"]
    assert (cause["rank"], cause["rule"], cause["value"], cause["before"], cause["after"]) == (1, "ND405", "args[0]", "4", "3")
    assert cause["file"] == SCRIPT and isinstance(cause["line"], int)  # the user's call of the compiled model
    for data in job["ranks"]:
        assert [(row["kind"], row["step"]) for row in data["compiles"]] == (
            [("first", 1), ("recompile", 4)] if data["rank"] == 1 else [("first", 1)]
        )
    assert "rank 1 recompiled Linear.forward and rank 0 did not" in card and card.count("<th>rank ") == 2
    (tmp_path / "padded").mkdir()
    code, job, card = watched_job(2, tmp_path / "padded", "--pad")
    assert code == 0 and job["divergence"] == [] and "The ranks do not diverge." in card


@pytest.mark.ddp_teardown
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
    assert not list(tmp_path.glob(".neurondev-ranks-*"))  # they met in torchrun's store, not in files
