"""A watch block inside a torchrun job gathers every rank's record to rank 0 through torchrun's store. The command
(``torchrun ... -m neurondev watch``) on the gallery's ragged job is run by notebook 08 (tests/test_notebooks.py: its
divergence, cause, line and each rank's compiles; --pad the fix), its faults by tests/cli/test_watch_faults.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


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
