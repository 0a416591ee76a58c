"""``_compat`` is true to its docstring: no module of the package outside it reads a private torch or torch_xla name
(``torch._C...``, ``torch_xla._XLAC...``, ``from torch.utils._python_dispatch import ...``); each hook lives there,
feature-detected, failing with TorchInternalsError naming the versions it was checked with."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from neurondev._compat.out_of_tree import privateuse1_name
from neurondev.errors import TorchInternalsError

PACKAGE = Path(__file__).resolve().parent.parent / "neurondev"
ROOTS = ("torch", "torch_xla")


def _private(dotted: str) -> bool:
    """A private name of torch or torch_xla; ATen's ops (``torch.ops.aten._to_copy``) are the op registry, public."""
    parts = dotted.split(".")
    if parts[0] not in ROOTS or parts[:2] == ["torch", "ops"]:
        return False
    return any(p.startswith("_") and not p.startswith("__") for p in parts[1:])


def _dotted(node: ast.AST) -> str | None:
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(names)])
    return None


def private_reads(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and _private(node.module):
            found.append(f"{node.lineno}: from {node.module}")
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Load, ast.Store)):
            dotted = _dotted(node)
            if dotted and _private(dotted):
                found.append(f"{node.lineno}: {dotted}")
    return sorted(set(found))


def test_no_module_but_compat_reads_a_private_torch_or_torch_xla_name():
    read = {str(p.relative_to(PACKAGE)): private_reads(p) for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] != "_compat"}
    assert {name: lines for name, lines in read.items() if lines} == {}


def test_a_missing_hook_is_a_named_error_that_says_which_torch_it_was_checked_with(monkeypatch):
    monkeypatch.delattr(torch._C, "_get_privateuse1_backend_name")
    with pytest.raises(TorchInternalsError, match=r"PrivateUse1's backend name .* checked with torch 2\.9\.0 and 2\.13\.0"):
        privateuse1_name()
