"""How torch 2.13's DDP-over-gloo jobs end, plain and under ``neurondev watch``: each case run N times each way, with a
hard timeout, the exit codes and the hangs counted (docs/where.md keeps the figures).

    .venv-current/bin/python scripts/ddp_teardown_runs.py --runs 20
    .venv-current/bin/python scripts/ddp_teardown_runs.py --runs 10 --case ragged --timeout 60
"""

from __future__ import annotations

import argparse
import collections
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FAULTS = Path(__file__).resolve().parent.parent / "tests" / "cli" / "ranks" / "faults.py"
CASES = ("one-destroys", "ragged")
HARD_TIMEOUT = 120


def run(case: str, watched: bool, folder: Path, timeout: float = HARD_TIMEOUT) -> tuple[str, float]:
    """One 2-rank job: ('exit N' or 'hung'), and its seconds."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    command += ["-m", "neurondev", "watch", "--json", str(folder / f"{case}.json")] if watched else []
    command += [str(FAULTS), case]
    environ = {k: v for k, v in os.environ.items() if k != "PJRT_DEVICE"} | {"OMP_NUM_THREADS": "1"}
    start = time.monotonic()
    job = subprocess.Popen(command, cwd=folder, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        code = job.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
        return "hung", time.monotonic() - start
    return f"exit {code}", time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--case", choices=CASES, action="append", help="the cases to run (default: all)")
    parser.add_argument("--timeout", type=float, default=HARD_TIMEOUT, help="seconds after which a job has hung")
    options = parser.parse_args()
    import torch

    print(f"torch {torch.__version__}: {options.runs} runs of each 2-rank case, plain and watched (hard timeout {options.timeout} s)")
    with tempfile.TemporaryDirectory() as folder:
        for case in options.case or CASES:
            for watched in (False, True):
                ends, took = collections.Counter(), []
                for _ in range(options.runs):
                    end, seconds = run(case, watched, Path(folder), options.timeout)
                    ends[end] += 1
                    took.append(seconds)
                shown = ", ".join(f"{end}: {n}" for end, n in sorted(ends.items()))
                print(f"{case:>13} {'watched' if watched else 'plain':>8}: {shown}; {min(took):.1f}-{max(took):.1f} s", flush=True)


if __name__ == "__main__":
    main()
