"""Files written back exactly: CRLF, a latin-1 cookie and a BOM keep their bytes but the fixed statement's;
the diff applies with git apply and patch -p1; code that lives in no file is shown, never patched."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import torch

import neurondev
from neurondev import cli
from neurondev.report.fixes.patch import unified_diff_bytes

pytestmark = pytest.mark.xla

GOLDEN = Path(__file__).parent / "golden"
CASES = {  # golden file -> (function, input spec, the fixed statement's line as it must read, in the file's encoding)
    "crlf_code.py": (
        "buffer",
        "randn(3, 4)",
        b"    out = x.new_zeros(x.shape, dtype=torch.get_default_dtype())  # frozen while tracing\r\n",
    ),
    "latin1_code.py": (
        "scaled",
        "randn(3, 4)",
        "    scale = x.new_full(x.shape, 0.5, dtype=torch.get_default_dtype())  # \xe9chelle\n".encode("latin-1"),
    ),
    "bom_code.py": ("ones_like_x", "randn(3, 4)", b"    w = x.new_ones(x.shape[-1], dtype=torch.get_default_dtype())\n"),
}


def copied(name: str, folder: Path) -> Path:
    path = folder / name
    shutil.copy(GOLDEN / name, path)
    return path


def imported(path: Path):
    name = f"golden_{path.stem}_{uuid.uuid4().hex[:6]}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def expected_bytes(name: str) -> bytes:
    """The golden file with only its pinned statement's line replaced."""
    function, _, fixed = CASES[name]
    original = (GOLDEN / name).read_bytes()
    lines = original.splitlines(keepends=True)
    (index,) = [i for i, line in enumerate(lines) if b"device=x.device" in line]
    return b"".join([*lines[:index], fixed, *lines[index + 1 :]])


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_fix_is_written_back_byte_for_byte_but_the_statement(name, tmp_path):
    path = copied(name, tmp_path)
    function, spec, _ = CASES[name]
    assert cli.main(["fix", f"{path}:{function}", "--input", spec, "--write", "--force"]) == 0
    assert path.read_bytes() == expected_bytes(name)
    assert (tmp_path / f"{name}.neurondev-backup").read_bytes() == (GOLDEN / name).read_bytes()
    assert cli.main(["fix", f"{path}:{function}", "--input", spec]) == 0  # nothing left to fix: an empty diff
    assert cli.main(["check", f"{path}:{function}", "--input", spec]) == 0


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_diff_applies_with_git_apply_and_patch(name, tmp_path):
    path = copied(name, tmp_path)
    function, _, _ = CASES[name]
    explanation = neurondev.explain(getattr(imported(path), function), torch.randn(3, 4), run=False, quiet=True)
    diff = unified_diff_bytes(explanation.fixes, root=tmp_path)
    assert diff and explanation.patch(root=tmp_path)
    (tmp_path / "fix.diff").write_bytes(diff)
    subprocess.run(["git", "apply", "--check", "fix.diff"], cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(["patch", "-p1", "-i", "fix.diff"], cwd=tmp_path, check=True, capture_output=True)
    assert path.read_bytes() == expected_bytes(name)


def test_a_function_from_an_ipython_input_is_fixed_on_the_card_and_left_out_of_the_patch():
    source = "import torch\ndef typed_in(x):\n    out = torch.zeros(x.shape, device=x.device)\n    return out + x\n"
    filename = "<ipython-input-3-0123456789ab>"
    import linecache

    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)  # as IPython registers its input
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)
    explanation = neurondev.explain(namespace["typed_in"], torch.randn(4), run=False, quiet=True)
    (fix,) = explanation.fixes
    assert fix.in_pseudo_file and fix.after == "out = x.new_zeros(x.shape, dtype=torch.get_default_dtype())"
    assert explanation.patch() == ""


def test_patching_a_file_deleted_since_it_was_traced_is_a_named_error(tmp_path):
    path = copied("crlf_code.py", tmp_path)
    explanation = neurondev.explain(imported(path).buffer, torch.randn(3, 4), run=False, quiet=True)
    path.unlink()
    with pytest.raises(neurondev.SourceChangedError, match="changed since it was traced"):
        explanation.patch()


def test_fix_write_of_a_file_that_changed_while_it_was_explained_writes_nothing_and_exits_2(tmp_path, capsys):
    """The module rewrites itself when imported (an editor saving it while neurondev reads it): the lines the trace
    names would be the new file's. Nothing is written, no backup is left, and the command says to run it again."""
    path = copied("crlf_code.py", tmp_path)
    original = path.read_bytes()
    path.write_bytes(
        original + b"from pathlib import Path\r\nPath(__file__).write_bytes(Path(__file__).read_bytes() + b'# saved\\r\\n')\r\n"
    )
    before = path.read_bytes()
    assert cli.main(["fix", f"{path}:buffer", "--input", "randn(3, 4)", "--write", "--force"]) == 2
    assert "changed since it was read: nothing was written; run neurondev fix again" in capsys.readouterr().err
    assert path.read_bytes() == before + b"# saved\r\n" and not list(tmp_path.glob("*.neurondev-backup"))
