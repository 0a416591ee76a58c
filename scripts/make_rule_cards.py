"""Run each rule's minimal example (docs/rules/examples/CODE.py) as a user would, by the call that reports it, and keep
what neurondev says about it in docs/rules/cards/CODE.txt, which the rule's page shows; run the code to use instead
too, which must report nothing of that rule. Real runs on this machine's devices (XLA and the host device here).

    .venv/bin/python scripts/make_rule_cards.py [ND101 ...]
"""

from __future__ import annotations

import concurrent.futures
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CARDS = ROOT / "docs" / "rules" / "cards"
sys.path.insert(0, str(ROOT))
from neurondev.rule_runs import card, codes, instead  # noqa: E402 - after the path


def main(only: list[str]) -> None:
    CARDS.mkdir(parents=True, exist_ok=True)
    chosen = codes(only)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # the machines have two cores
        said = dict(zip(chosen, pool.map(card, chosen)))
        wrong = {code: text for code, text in zip(chosen, pool.map(instead, chosen)) if text}
    for code, text in said.items():
        (CARDS / f"{code}.txt").write_text(text)
        print(f"{code}: {len(text.splitlines())} line(s)")
    for code, text in wrong.items():
        print(f"{code}: the code to use instead reports {code} or fails:\n{text}")
    if wrong:
        raise SystemExit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
