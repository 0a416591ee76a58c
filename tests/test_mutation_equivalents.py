"""docs/mutation-equivalents.toml, which make mutate reads to leave equivalent mutants out of a module's score: it
parses (a name listed twice is an error), each entry says why, and each names a mutant of a module mutmut mutates."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent


def test_each_equivalent_mutant_is_of_a_mutated_module_and_says_why():
    listed = tomllib.loads((ROOT / "docs" / "mutation-equivalents.toml").read_text())
    mutated = {
        path.removesuffix(".py").replace("/", ".")
        for path in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]["only_mutate"]
    }
    assert len(listed) >= 50
    for name, entry in listed.items():
        module = re.match(r"(.+?)\.x[_ǁ]", name)
        assert module is not None and module[1] in mutated, name
        assert re.search(r"__mutmut_\d+$", name) and len(entry["why"]) > 5, name
