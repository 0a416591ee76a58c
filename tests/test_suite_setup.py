"""The suite's own setup does what tests/conftest.py says: the Pythons it starts load tests/site (their exit
hook and garbage collection, as the workers have); tests/browser/test_group.py checks the group of the tests
that share Chromium or the explained GPT-2."""

from __future__ import annotations

import gc
from pathlib import Path

from tests.conftest import _SLOWEST_FIRST, GC_THRESHOLD, SITE
from tests.helpers import run_python


def test_a_python_the_suite_starts_loads_the_suites_exit_hook():
    done = run_python("import gc, sys; print(sys.modules['sitecustomize'].__file__); print(gc.get_threshold())")
    assert done.returncode == 0, done.stderr
    site, threshold = done.stdout.splitlines()
    assert Path(site) == SITE / "sitecustomize.py"
    assert threshold == str(GC_THRESHOLD)


def test_the_workers_collect_garbage_as_the_pythons_they_start_do():
    assert gc.get_threshold() == GC_THRESHOLD != (700, 10, 10)


def test_the_slowest_modules_are_handed_out_first(request):
    """Notebooks, browser tests and the tests that start a Python of their own come before every other test, in
    _SLOWEST_FIRST's order, so that the two workers end together (with pytest's own order they did not)."""
    rank = [
        next((i for i, part in enumerate(_SLOWEST_FIRST) if part in item.nodeid), len(_SLOWEST_FIRST)) for item in request.session.items
    ]
    assert rank == sorted(rank)


def _pins(name: str) -> dict[str, str]:
    path = Path(__file__).resolve().parent.parent / "requirements" / name
    return dict(line.strip().lower().split("==", 1) for line in path.read_text().splitlines() if "==" in line and not line.startswith("#"))


def test_the_one_list_of_tested_versions_is_what_requirements_pins_and_doctor_reads():
    from neurondev._compat import CHECKED_WITH, TESTED_ALONE, TESTED_IPYTHON, TESTED_PAIR
    from neurondev.cli.doctor import pair_verdict

    pair, current = _pins("constraints.txt"), _pins("constraints-current.txt")
    assert (pair["torch"], pair["torch-xla"]) == TESTED_PAIR and "torch-xla" not in current
    assert (current["torch"],) == TESTED_ALONE and pair["ipython"] == current["ipython"] == TESTED_IPYTHON
    assert CHECKED_WITH["torch"] == (TESTED_PAIR[0], *TESTED_ALONE)
    assert pair_verdict(f"{TESTED_PAIR[0]}+cu128", TESTED_PAIR[1]) == (
        True,
        f"torch {TESTED_PAIR[0]} + torch-xla {TESTED_PAIR[1]}: the pair neurondev is tested with",
    )
