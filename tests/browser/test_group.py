"""The tests that share Chromium or the explained GPT-2 are one xdist group (tests/conftest.py), named in their
node ids where pytest 9 reads them: one browser and one GPT-2 explain a run."""

from __future__ import annotations

import pytest

from tests.conftest import _SHARED_FIXTURES, SHARED_GROUP

pytestmark = pytest.mark.browser


def test_tests_sharing_chromium_or_gpt2_are_one_group_named_in_their_node_ids(request, browser):
    """This test shares Chromium itself (the ``browser`` fixture), so it is one of the group it checks."""
    grouped = bool(request.config.getoption("loadgroup", False))  # a worker of `--dist loadgroup` (pyproject.toml)
    sharing = [item for item in request.session.items if set(_SHARED_FIXTURES) & set(item.fixturenames)]
    assert request.node in sharing
    for item in sharing:
        assert SHARED_GROUP in [mark.args[0] for mark in item.iter_markers("xdist_group")], item.nodeid
        assert item.nodeid.endswith(f"@{SHARED_GROUP}") == grouped, item.nodeid
