"""The suite's own setup does what tests/conftest.py says: the Pythons it starts load tests/site (their exit
hook); tests/browser/test_group.py checks the group of the tests that share Chromium or the explained GPT-2."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import _SLOWEST_FIRST
from tests.helpers import run_python


def test_a_python_the_suite_starts_loads_the_suites_exit_hook():
    done = run_python("import sys; print(sys.modules['sitecustomize'].__file__)")
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == Path(__file__).parent / "site" / "sitecustomize.py"


def test_the_slowest_modules_are_handed_out_first(request):
    """Notebooks, browser tests and the tests that start a Python of their own come before every other test, in
    _SLOWEST_FIRST's order, so that the two workers end together (with pytest's own order they did not)."""
    rank = [
        next((i for i, part in enumerate(_SLOWEST_FIRST) if part in item.nodeid), len(_SLOWEST_FIRST)) for item in request.session.items
    ]
    assert rank == sorted(rank)
