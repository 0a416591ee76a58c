"""make mutate: mutmut over the modules that decide what a user is told ([tool.mutmut] in pyproject.toml), then the
score of each module: mutants killed (a test failed, or ran past its time) of those tested, with the survivors that
docs/mutation-equivalents.toml explains (an equivalent mutant: no test can tell it from the original; or one mutmut cannot switch on, code run at import) left out.

    .venv/bin/python scripts/mutate.py            # run mutmut (resumes: mutants already judged are kept), then the scores
    .venv/bin/python scripts/mutate.py --scores   # the scores of the last run only
    .venv/bin/python scripts/mutate.py --again    # survivors and uncovered ones judged again (after new tests), then the scores
    .venv/bin/python scripts/mutate.py "neurondev.loops.verdict*"   # one module's mutants, then the scores
"""

from __future__ import annotations

import collections
import fnmatch
import json
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENTS = ROOT / "docs" / "mutation-equivalents.toml"
# mutmut's exit codes of a mutant's test run: 1 a test failed (killed), 0 all passed (survived), 33 no test covers it,
# a timeout or a signal (killed: the tests noticed), None not run yet.
KILLED_BY_TIMEOUT = {24, -24, 36, 152, 255}


VERDICTS = ("killed", "survived", "untested", "not run")


def modules() -> list[str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]["only_mutate"]


def equivalents() -> dict[str, str]:
    """Mutant name -> why it is equivalent."""
    if not EQUIVALENTS.exists():
        return {}
    return {name: entry["why"] for name, entry in tomllib.loads(EQUIVALENTS.read_text()).items()}


def verdicts(module: str) -> dict[str, str]:
    """Each mutant of ``module`` (mutmut's name) and its verdict: killed, survived, untested (no test covers it), not run."""
    meta = ROOT / "mutants" / f"{module}.meta"
    if not meta.exists():
        return {}
    codes = json.loads(meta.read_text()).get("exit_code_by_key", {})
    return {name: _verdict(code) for name, code in codes.items()}


def _verdict(code: int | None) -> str:
    if code is None:
        return "not run"
    if code == 0:
        return "survived"
    if code == 33:
        return "untested"
    return "killed"  # 1 (a test failed), a timeout, a crash


def scores() -> list[dict]:
    explained = equivalents()
    rows = []
    for module in modules():
        counted = collections.Counter(verdicts(module).values())
        survivors = [name for name, verdict in verdicts(module).items() if verdict == "survived"]
        equivalent = sum(name in explained for name in survivors)
        judged = counted["killed"] + counted["survived"] + counted["untested"] - equivalent
        score = 100.0 * counted["killed"] / judged if judged else None  # nothing judged yet: no score
        rows.append({"module": module, **{key: counted.get(key, 0) for key in VERDICTS}, "equivalent": equivalent, "score": score})
    return rows


def judge_survivors_again(only: list[str]) -> int:
    """Forget the verdict of each survivor and of each mutant no test covered (of the mutants ``only`` names, as
    mutmut's patterns: all when empty), so that the next run judges them against today's tests; how many."""
    forgotten = 0
    for module in modules():
        meta = ROOT / "mutants" / f"{module}.meta"
        if not meta.exists():
            continue
        data = json.loads(meta.read_text())
        codes = data.get("exit_code_by_key", {})
        for name, code in codes.items():
            if code in (0, 33) and (not only or any(fnmatch.fnmatch(name, pattern) for pattern in only)):
                codes[name] = None
                forgotten += 1
        meta.write_text(json.dumps(data, indent=4))
    return forgotten


def copy_what_mutmut_does_not() -> list[str]:
    """Copy each file of the package that mutmut does not mutate into its copy of the checkout where it differs (mutmut
    copies them once: a changed C++ source of the host device, or a changed module the tests import, would otherwise
    be the old one under the mutants); the files copied."""
    mutated = {ROOT / path for path in modules()}
    copied = []
    for source in (ROOT / "neurondev").rglob("*"):
        there = ROOT / "mutants" / source.relative_to(ROOT)
        copies = source.is_file() and source not in mutated and source.suffix != ".pyc" and there.parent.exists()
        if copies and (not there.exists() or there.read_bytes() != source.read_bytes()):
            there.write_bytes(source.read_bytes())
            copied.append(str(source.relative_to(ROOT)))
    return copied


def main(argv: list[str]) -> int:
    for name in copy_what_mutmut_does_not():
        print(f"copied into mutants/: {name}")
    only = [arg for arg in argv if not arg.startswith("--")]  # mutant names or patterns: "neurondev.loops.verdict*"
    if "--again" in argv:
        print(f"{judge_survivors_again(only)} survivor(s) to judge again")
    if "--scores" not in argv:
        subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", "2", *only], cwd=ROOT, check=False)
    print(f"{'module':40} {'killed':>7} {'survived':>9} {'untested':>9} {'explained':>11} {'not run':>8} {'score':>7}")
    for row in scores():
        print(
            f"{row['module']:40} {row['killed']:7} {row['survived']:9} {row['untested']:9} {row['equivalent']:11} "
            f"{row['not run']:8} " + ("     —" if row["score"] is None else f"{row['score']:6.1f}%")
        )
    print("survivors: .venv/bin/mutmut results; one: .venv/bin/mutmut show NAME")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
