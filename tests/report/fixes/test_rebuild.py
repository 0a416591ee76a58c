"""The user's callable rebuilt from a fixed copy of their file: the fixed code runs, nothing at module level runs
again, and the user's module and function stay as they were."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from neurondev.report.fixes.rebuild import rebuilt

MODULE = """\
RUNS = []
RUNS.append("imported")


def helper(x):
    return x + 1


def entry(x):
    return helper(x) * 10
"""


@pytest.fixture()
def user_module(tmp_path):
    path = tmp_path / "user_code_for_rebuild.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("user_code_for_rebuild", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module, str(path)
    del sys.modules[spec.name]


def test_the_fixed_copy_runs_with_its_fixed_helper_and_the_users_code_is_untouched(user_module):
    module, path = user_module
    original_entry, original_code = module.entry, module.helper.__code__
    with rebuilt(module.entry, {path: MODULE.replace("x + 1", "x + 2")}) as (fixed, copies):
        assert fixed(1) == 30  # the helper it calls by name is the fixed one
        (copy_path,) = copies
        assert copies[copy_path] == path and copy_path != path and copy_path.endswith("user_code_for_rebuild.py")
    assert module.entry(1) == 20 and module.entry is original_entry and module.helper.__code__ is original_code
    assert module.RUNS == ["imported"]  # the fixed module was compiled, never run
