"""The suite's own setup does what tests/conftest.py says: the Pythons it starts load tests/site, and the tests
that share Chromium or the explained GPT-2 are one xdist group, named where pytest reads node ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SHARED_GROUP
from tests.helpers import run_python


def test_a_python_the_suite_starts_loads_the_suites_exit_hook():
    done = run_python("import sys; print(sys.modules['sitecustomize'].__file__)")
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == Path(__file__).parent / "site" / "sitecustomize.py"


@pytest.mark.xdist_group("suite-setup")
def test_tests_sharing_chromium_or_gpt2_are_one_group_named_in_their_node_ids(request):
    grouped = request.config.getoption("loadgroup", False)  # a worker of `--dist loadgroup` (pyproject.toml)
    assert request.node.nodeid.endswith("@suite-setup") == bool(grouped)
    sharing = [item for item in request.session.items if {"browser", "gpt2_explained"} & set(item.fixturenames)]
    assert sharing, "the browser and GPT-2 tests were collected with this one"
    for item in sharing:
        assert SHARED_GROUP in [mark.args[0] for mark in item.iter_markers("xdist_group")], item.nodeid
        assert item.nodeid.endswith(f"@{SHARED_GROUP}") == bool(grouped), item.nodeid
