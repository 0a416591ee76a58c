"""Every Python block of the README runs, in order, as a user would paste it into a script."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
GUARD = README.parent / "docs" / "how-to" / "ci-guard.md"


def python_blocks() -> list[str]:
    """The README's Python blocks that a script can run (a pytest test function is left to pytest)."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    return [block for block in blocks if "def test_" not in block]


def test_the_readme_has_python_blocks():
    assert len(python_blocks()) >= 1


@pytest.mark.xla
def test_every_python_block_of_the_readme_runs(tmp_path):
    script = tmp_path / "readme_blocks.py"
    script.write_text("\n\n".join(python_blocks()))
    temporary = tmp_path / "temporary"
    temporary.mkdir()
    environ = {**os.environ, "TMPDIR": str(temporary)}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=environ)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not list(temporary.glob("neurondev-*"))  # Model Explorer's graphs went with the script's Python
    assert "1 frozen device pin(s) (torch.empty at readme_blocks.py:4) -> 1 graph break(s) on xla:0" in done.stdout
    assert "After DeviceRewriterPass: 0 breaks" in done.stdout
    assert "lr changed at 2 compiles (0.1 -> 0.2 -> 0.3): a Python number" in done.stdout  # the watch's summary
    assert "+    out = x.new_empty(64, dtype=torch.float32)   # frozen to cpu when traced\n" in done.stdout  # ex.patch()


def readme_guard() -> str:
    """The CI guard page's pytest example as a test file (with the model it names): tests/report/test_check.py
    runs it under pytest with the plugin, in the same pytest run as the plugin's own cases."""
    blocks = [b for b in re.findall(r"```python\n(.*?)```", GUARD.read_text(), flags=re.S) if "def test_" in b]
    assert blocks, "the CI guard's page shows the pytest guard"
    return "\n".join(blocks)  # a test file as written, with its model


def test_the_readme_is_a_front_page_with_both_commands_on_its_first_screen():
    text = README.read_text()
    assert len(text.split()) <= 1000
    first_screen = "\n".join(text.splitlines()[:20])
    assert "make demo" in first_screen and "make test" in first_screen
    tour = re.search(r"## A short tour\n\n```python\n(.*?)```", text, flags=re.S)
    assert tour is not None and len(tour.group(1).splitlines()) <= 25
