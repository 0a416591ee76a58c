"""The fixed spelling of each pinned statement: libcst keeps every comment and the formatting around it (golden files)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest
import torch

from neurondev.fx.pins import find_pins
from neurondev.report.fixes.edits import propose
from neurondev.trace.capture import capture

GOLDEN = Path(__file__).parent / "golden"
INPUTS = {
    "buffers": lambda: (torch.randn(3, 8),),
    "tables": lambda: (torch.randn(3, 4), torch.randn(2)),
    "through_a_name": lambda: (torch.randn(8),),
    "moves": lambda: (torch.randn(4, 4), torch.randn(4, 4)),
    "literal_and_unfixable": lambda: (torch.randn(3, 8),),
    "in_a_block": lambda: (torch.randn(3, 8),),
}


@pytest.fixture()
def user_module(tmp_path):
    path = tmp_path / "user_code.py"
    shutil.copy(GOLDEN / "user_code.py", path)
    name = f"user_code_{tmp_path.name}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(name, None)


def pins_of(module):
    """The pins of every golden function, each graph numbered apart, and those graphs (what explain hands propose)."""
    pins, graphs = [], {}
    for name, inputs in INPUTS.items():
        for gm in capture(getattr(module, name), *inputs()).graphs:
            graphs[len(graphs)] = gm
            pins += find_pins(gm, graph=len(graphs) - 1)
    return pins, graphs


def test_every_spelled_statement_matches_the_golden_file_and_nothing_else_changes(user_module):
    (edits,) = propose(*pins_of(user_module))
    fixed = edits.fixed_text()
    assert fixed == (GOLDEN / "user_code.fixed.py").read_text()
    original = (GOLDEN / "user_code.py").read_text().splitlines()
    changed = {line for edit in edits.spelled for line in range(edit.spelling.first, edit.spelling.last + 1)}
    kept = [text for number, text in enumerate(original, 1) if number not in changed]
    assert all(text in fixed.splitlines() for text in kept), "a line outside the fixed statements changed"


def test_statements_without_a_spelling_say_so_and_name_their_pins(user_module):
    (edits,) = propose(*pins_of(user_module))
    unspelled = {edit.before.strip(): edit.spelling for edit in edits.edits if edit.after is None}
    assert set(unspelled) == {"moved = (mask * 2).to(x.device)", "positions = torch.arange(x.shape[-1], device=x.device)"}
    for spelling in unspelled.values():
        assert spelling.advice == "compile through the neurondev backend"
        assert len(spelling.left) == 1 and spelling.removes == ()


def test_without_libcst_a_statement_gets_no_fixed_line_and_says_how_to_install_it(user_module, monkeypatch):
    import builtins

    from neurondev.report.fixes.spelling import spell

    pins, _ = pins_of(user_module)
    real_import = builtins.__import__

    def no_libcst(name, *args, **kwargs):
        if name == "libcst" or name.startswith("libcst."):
            raise ImportError("No module named 'libcst'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_libcst)
    spelled = spell((GOLDEN / "user_code.py").read_text(), pins[0].line, pins[:1])
    assert spelled.text is None and spelled.note.kind == "no libcst"
