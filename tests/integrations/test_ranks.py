"""neurondev check and the pytest marker under torchrun: the job fails when any rank fails, and the rank is named."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import textwrap

RANKED = textwrap.dedent("""
    import os

    import torch


    def step(x):
        if os.environ.get("RANK") == "1":  # this rank's code differs: it pins a value to the device it traced on
            return x + torch.ones(x.shape, device=x.device)
        return x + x.new_ones(x.shape)
""")


def torchrun(folder, *command: str) -> subprocess.CompletedProcess:
    run = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", *command]
    environ = {k: v for k, v in os.environ.items() if k not in ("PJRT_DEVICE", "PYTEST_XDIST_WORKER")} | {"OMP_NUM_THREADS": "1"}
    return subprocess.run(run, capture_output=True, text=True, timeout=600, env=environ, cwd=folder)


def test_neurondev_check_fails_the_job_naming_the_rank_that_failed(tmp_path):
    (tmp_path / "ranked.py").write_text(RANKED)
    done = torchrun(tmp_path, "-m", "neurondev", "check", "ranked.py:step", "--input", "randn(8)", "--target", "hostdev")
    assert done.returncode != 0
    assert "rank 0: ranked.py:step: passes: no finding of the rules checked" in done.stdout
    assert "rank 1: 1 device pin(s) frozen into the graph of step" in done.stdout and "[ND101]" in done.stdout
    assert "neurondev check: failed on rank(s) 1" in done.stdout


def test_a_rank_whose_import_fails_is_named_among_the_failed_ranks_with_its_error(tmp_path):
    (tmp_path / "broken.py").write_text(
        "import os\nif os.environ['RANK'] == '1':\n    raise ImportError('no module named fast_kernels on this rank')\n"
        "def step(x):\n    return x + 1\n"
    )
    done = torchrun(tmp_path, "-m", "neurondev", "check", "broken.py:step", "--input", "randn(8)", "--target", "hostdev")
    assert done.returncode != 0
    assert "rank 0: broken.py:step: passes" in done.stdout
    assert "rank 1: error: importing broken.py raised ImportError: no module named fast_kernels on this rank" in done.stdout
    assert "neurondev check: failed on rank(s) 1" in done.stdout


# docs/how-to/ranks.md's command, with the model.py its docs test makes: run here, on both torches, not there too.
DOCS_COMMAND = "torchrun --nproc-per-node 2 -m neurondev check model.py:step --input 'randn(8)' --target hostdev"


def test_a_clean_function_passes_on_every_rank(tmp_path):
    from tests.test_docs_blocks import YOURS

    (tmp_path / "model.py").write_text(YOURS["model.py"])
    launcher, arguments = shlex.split(DOCS_COMMAND)[:3], shlex.split(DOCS_COMMAND)[3:]
    assert launcher == ["torchrun", "--nproc-per-node", "2"]  # as torchrun() launches it
    done = torchrun(tmp_path, *arguments)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "rank 0: model.py:step: passes" in done.stdout and "rank 1: model.py:step: passes" in done.stdout
    assert "neurondev check: every rank is clean" in done.stdout


def test_the_pytest_marker_fails_on_the_rank_whose_code_pins_and_says_which(tmp_path):
    (tmp_path / "ranked.py").write_text(RANKED)
    (tmp_path / "test_step.py").write_text(
        textwrap.dedent("""
            import pytest
            import torch

            from ranked import step


            @pytest.mark.neurondev_check(step, torch.randn(8), target="hostdev")
            def test_step():
                pass
        """)
    )
    done = torchrun(tmp_path, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_step.py")
    assert done.returncode != 0
    assert "on rank 1 of 2 (torchrun): 1 device pin(s) frozen" in done.stdout
    assert "on rank 0 of 2" not in done.stdout and done.stdout.count("1 passed") == 1


def test_check_json_under_torchrun_gives_rank_0_every_ranks_findings_and_the_failed_ranks(tmp_path):
    import json

    (tmp_path / "ranked.py").write_text(RANKED)
    done = torchrun(tmp_path, "-m", "neurondev", "check", "ranked.py:step", "--input", "randn(8)", "--target", "hostdev", "--json")
    assert done.returncode != 0
    job = json.loads(done.stdout)  # rank 0 prints the job's one JSON; the other ranks print nothing
    assert (job["schema"], job["clean"], job["failed_ranks"]) == (3, False, [1])
    by_rank = {entry["rank"]: entry for entry in job["ranks"]}
    assert by_rank[0]["clean"] is True and by_rank[0]["findings"] == []
    (finding,) = by_rank[1]["findings"]
    assert (finding["rule"], finding["kind"], finding["line"], finding["found"]["device"]) == ("ND101", "pin", 9, "cpu")
