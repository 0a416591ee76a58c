"""neurondev fix: the diff of the verified fixes, or written into the user's files (a package of two files here),
which then trace to no pin and compute the same outputs; a file with uncommitted git changes is refused."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
import torch

import neurondev
from neurondev import cli

pytestmark = pytest.mark.xla

LAYERS = """
import torch


def causal_mask(x):
    n = x.shape[0]
    # the mask of attention, on x's device
    return torch.triu(torch.ones(n, n, device=x.device), diagonal=1).bool()


def scratch(x):
    buffer = torch.zeros(x.shape, device=str(x.device))  # a scratch buffer
    buffer.copy_(x * 2)
    return buffer
"""

MODEL = """
import torch

from . import layers
from .layers import causal_mask


def forward(x, mask):
    table = torch.tensor([1.0, 2.0, 3.0, 4.0], device=x.device)
    weights = (mask > 0).to(x.device, torch.float32)
    scores = (layers.scratch(x) @ x.T).masked_fill(causal_mask(x), float("-inf"))
    return scores.softmax(-1) * weights + table
"""


@pytest.fixture()
def package(tmp_path):
    """A user package of two files with four pins, under a name of its own (imports are cached by name)."""
    name = f"shop_{uuid.uuid4().hex[:8]}"
    folder = tmp_path / name
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "layers.py").write_text(LAYERS)
    (folder / "model.py").write_text(MODEL)
    return folder


def pins_and_result(package: Path) -> tuple[int, torch.Tensor]:
    """The package's model imported afresh from its files: its pins traced on CPU, and its output."""
    for name in [n for n in sys.modules if n == package.name or n.startswith(package.name + ".")]:
        del sys.modules[name]
    shutil.rmtree(package / "__pycache__", ignore_errors=True)
    importlib.invalidate_caches()
    sys.path.insert(0, str(package.parent))
    try:
        module = importlib.import_module(f"{package.name}.model")
    finally:
        sys.path.remove(str(package.parent))
    inputs = (torch.randn(4, 4, generator=torch.Generator().manual_seed(0)), torch.randn(4, 4, generator=torch.Generator().manual_seed(1)))
    captured = neurondev.capture(module.forward, *inputs)
    return sum(len(neurondev.find_pins(gm)) for gm in captured.graphs), module.forward(*inputs)


def fix(package: Path, *flags: str) -> int:
    return cli.main(["fix", f"{package / 'model.py'}:forward", "--input", "randn(4, 4)", "--input", "randn(4, 4)", *flags])


def test_fix_write_leaves_a_package_that_traces_to_no_pin_with_the_same_outputs(package, capsys):
    pins, expected = pins_and_result(package)
    assert pins == 4
    assert fix(package, "--write") == 0
    err = capsys.readouterr().err
    assert "4 of 4 statement(s) with a verified fix; 0 left" in err
    pins, result = pins_and_result(package)
    assert pins == 0
    torch.testing.assert_close(result, expected, rtol=0, atol=0)
    layers = (package / "layers.py").read_text()
    assert (
        "    # the mask of attention, on x's device\n    return torch.triu(x.new_ones(n, n, dtype=torch.get_default_dtype()), diagonal=1).bool()\n"
        in layers
    )
    assert "    buffer = x.new_zeros(x.shape, dtype=torch.get_default_dtype())  # a scratch buffer\n" in layers
    model = (package / "model.py").read_text()
    assert (
        "    table = x.new_tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.get_default_dtype())\n    weights = (mask > 0).to(torch.float32)\n"
        in model
    )
    assert (package / "model.py.neurondev-backup").read_text() == MODEL
    assert (package / "layers.py.neurondev-backup").read_text() == LAYERS


def test_fix_prints_a_diff_git_applies_and_leaves_the_files_alone(package, capsys, monkeypatch):
    monkeypatch.chdir(package.parent)  # the diff's paths are relative to the working folder
    assert fix(package) == 0
    diff = capsys.readouterr().out
    assert (package / "model.py").read_text() == MODEL and not list(package.glob("*.neurondev-backup"))
    assert f"--- a/{package.name}/model.py\n+++ b/{package.name}/model.py\n" in diff
    assert "\n-    table = torch.tensor([1.0, 2.0, 3.0, 4.0], device=x.device)\n" in diff
    assert "\n+    table = x.new_tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.get_default_dtype())\n" in diff
    applied = subprocess.run(["git", "apply", "-"], input=diff, text=True, cwd=package.parent, capture_output=True)
    assert applied.returncode == 0, applied.stderr
    assert "    buffer = x.new_zeros(x.shape, dtype=torch.get_default_dtype())  # a scratch buffer\n" in (package / "layers.py").read_text()


def test_fix_exits_1_when_a_line_has_no_spelling(tmp_path, capsys):
    source = tmp_path / f"positions_{uuid.uuid4().hex[:8]}.py"
    source.write_text(
        textwrap.dedent(
            """
            import torch

            def positions(x):
                out = torch.zeros(x.shape[-1], device=x.device)
                out.copy_(x.sum(0))
                return out + torch.arange(x.shape[-1], device=x.device)
            """
        )
    )
    assert cli.main(["fix", f"{source}:positions", "--input", "randn(3, 8)"]) == 1
    err = capsys.readouterr().err
    assert "no spelling: compile through the neurondev backend" in err
    assert "1 of 2 statement(s) with a verified fix; 1 left" in err


def test_fix_write_refuses_a_file_with_uncommitted_changes_unless_forced(package, capsys):
    git = lambda *args: subprocess.run(["git", *args], cwd=package, check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "start")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "the package")
    (package / "model.py").write_text(MODEL + "\n# work in progress\n")
    assert fix(package, "--write") == 2
    assert "model.py has uncommitted changes under git: commit or stash them first, or pass --force" in capsys.readouterr().err
    assert "torch.tensor([1.0" in (package / "model.py").read_text()
    assert fix(package, "--write", "--force") == 0
    assert "x.new_tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.get_default_dtype())" in (package / "model.py").read_text()


@pytest.mark.parametrize(
    "argv, phrase",
    [
        (["fix", "nowhere.py:f", "--input", "randn(3)"], "no file nowhere.py"),
        (["fix", "neurondev.gallery.patterns:seed_function"], "takes inputs (x): give one --input SPEC per argument"),
        (["fix", "neurondev.gallery.patterns:seed_function", "--input", "randn(64)", "--force"], "--force goes with --write"),
    ],
    ids=["no-file", "no-input", "force-without-write"],
)
def test_fix_misuse_exits_2_with_one_line(argv, phrase, capsys):
    assert cli.main(argv) == 2
    assert phrase in capsys.readouterr().err
