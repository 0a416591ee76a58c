"""One rule for a tensor on the host (``trace.inputs.on_host``) and one for a host value (``is_host_value``): every
module that asks reads them, none keeps its own list of host device types."""

from __future__ import annotations

import ast
from pathlib import Path

import torch

from neurondev.trace.inputs import is_host_value, on_host

PACKAGE = Path(__file__).resolve().parents[2] / "neurondev"


def test_the_host_is_the_cpu_and_meta_and_a_host_value_has_a_dimension():
    assert on_host(torch.ones(2)) and on_host(torch.ones(2, device="meta")) and on_host(torch.tensor(1.0))
    assert not on_host(3) and not on_host(None)
    assert is_host_value(torch.ones(2)) and not is_host_value(torch.tensor(1.0))


def _host_lists(path: Path) -> list[int]:
    """Lines where a module spells the host's device types itself: a ("cpu", "meta") tuple, or a device type
    compared with "cpu" inside an isinstance(..., torch.Tensor) test."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Tuple) and [getattr(e, "value", None) for e in node.elts] == ["cpu", "meta"]:
            found.append(node.lineno)
        if isinstance(node, ast.BoolOp) and "isinstance" in ast.unparse(node) and '.device.type == "cpu"' in ast.unparse(node):
            found.append(node.lineno)
    return found


def test_no_module_but_the_rules_own_spells_which_devices_are_the_host():
    allowed = {PACKAGE / "trace" / "inputs.py", PACKAGE / "trace" / "capture.py"}  # capture: the default device's context
    spelled = {str(p.relative_to(PACKAGE)): lines for p in PACKAGE.rglob("*.py") if p not in allowed and (lines := _host_lists(p))}
    assert spelled == {}
