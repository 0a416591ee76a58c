"""Time the command's usage errors from the shell against the floor: a Python that starts and ends, and one that imports torch.

Each case is a mistake a user makes on the command line (an input spec cut short, a file that is not there, a verb's
option without its pair); the command says it in one line and exits 2. Goal: under 1 s each here, which means torch is
never imported before the command line is checked. Best of several runs, side by side in one run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

CASES = {
    "explain: input spec cut short": ["explain", "f.py:f", "--input", "randn(4,"],
    "explain: no such file": ["explain", "no_such_file.py:f", "--input", "randn(4)"],
    "check: no such file": ["check", "no_such_file.py:f"],
    "fix: --force without --write": ["fix", "no_such_file.py:f", "--force"],
    "watch: no such script": ["watch", "no_such_script.py"],
}
FLOORS = {"python -c pass": ["-c", "pass"], "python -c 'import torch'": ["-c", "import torch"]}


def best(arguments: list[str], repeats: int, *, code: int) -> float:
    """The fastest of ``repeats`` runs of ``python ARGUMENTS``, in seconds (its exit code checked)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, *arguments], capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode != code:
            raise SystemExit(f"{' '.join(arguments)} exited {done.returncode}, not {code}: {done.stderr[-500:]}")
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tiny", action="store_true", help="one run each (the test suite's smoke run)")
    repeats = 1 if parser.parse_args().tiny else 5
    floor = best(FLOORS["python -c pass"], repeats, code=0)
    torch_import = best(FLOORS["python -c 'import torch'"], repeats, code=0)
    print(f"{'case':34} {'seconds':>8} {'/python':>8} {'/torch':>7}")
    print(f"{'python -c pass':34} {floor:8.2f} {1:8.2f} {floor / torch_import:7.2f}")
    print(f"{'python -c import torch':34} {torch_import:8.2f} {torch_import / floor:8.2f} {1:7.2f}")
    for name, arguments in CASES.items():
        seconds = best(["-m", "neurondev", *arguments], repeats, code=2)
        print(f"{name:34} {seconds:8.2f} {seconds / floor:8.2f} {seconds / torch_import:7.2f}")


if __name__ == "__main__":
    main()
