"""Run each rule's minimal example (neurondev/rulebook.py) as a user would and keep what neurondev says about it in
docs/rules/cards/CODE.txt, which the rule's page shows. A real run on this machine's device (XLA here).

    .venv/bin/python scripts/make_rule_cards.py [ND101 ...]
"""

from __future__ import annotations

import concurrent.futures
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CARDS = ROOT / "docs" / "rules" / "cards"
# The example as a script named example.py, run from a folder of its own in a Python of its own (what one example
# loads, torch_xla say, changes what the next one is told), its check's failure printed as the user reads it.
WRAPPER = """
import neurondev, runpy
try:
    runpy.run_path("example.py", run_name="__main__")
except neurondev.DevicePinsError as error:
    print(error)
"""


def card(example: str) -> str:
    """What neurondev prints for ``example``, run in a Python of its own from a folder of its own."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "example.py").write_text(example)
        done = subprocess.run([sys.executable, "-c", WRAPPER], cwd=folder, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"the example failed:\n{done.stderr[-3000:]}")
    return done.stdout


def cards(examples: dict[str, str]) -> dict[str, str]:
    """What neurondev prints for each example (by rule code), two at a time (the machines have two cores)."""
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return dict(zip(examples, pool.map(card, examples.values())))


def examples(codes: list[str] = ()) -> dict[str, str]:
    """The rules' minimal examples by code (those named, or all)."""
    from neurondev.rulebook import RULES

    return {rule.code: rule.example for rule in RULES if rule.example and (not codes or rule.code in codes)}


def main(codes: list[str]) -> None:
    CARDS.mkdir(parents=True, exist_ok=True)
    for code, text in cards(examples(codes)).items():
        (CARDS / f"{code}.txt").write_text(text)
        print(f"{code}: {len(text.splitlines())} line(s)")


if __name__ == "__main__":
    main(sys.argv[1:])
