"""The suite's own setup does what tests/conftest.py says: the Pythons it starts load tests/site (their exit
hook); tests/browser/test_group.py checks the group of the tests that share Chromium or the explained GPT-2."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import run_python


def test_a_python_the_suite_starts_loads_the_suites_exit_hook():
    done = run_python("import sys; print(sys.modules['sitecustomize'].__file__)")
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == Path(__file__).parent / "site" / "sitecustomize.py"
