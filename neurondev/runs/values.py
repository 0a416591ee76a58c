"""Compare two outputs (nested tensors) and keep the figures: max abs/rel error, elements off, NaN-aware."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch

from neurondev._compat import default_tolerances, tree_leaves, tree_map
from neurondev.errors import InvalidOptionError

__all__ = ["Comparison", "check_tolerances", "compare_outputs"]


@dataclasses.dataclass(frozen=True)
class Comparison:
    """How far ``actual`` is from ``expected``. NaN in the same place on both sides is equal, and so
    are equal infinities; complex values are compared in both parts.

    ``matches`` uses ``torch.testing.assert_close`` with ``rtol``/``atol`` (None: its defaults
    for the dtype). ``max_abs_error``/``max_rel_error``/``elements_off`` are measured over every
    tensor leaf of the same shape, whatever the verdict; ``detail`` is assert_close's message when
    they differ. ``structure`` names a difference before any value: a shape, a dtype or the number
    of outputs (then the figures say nothing about values).
    """

    matches: bool
    max_abs_error: float
    max_rel_error: float
    elements_off: int
    elements: int
    rtol: float | None
    atol: float | None
    detail: str | None = None
    structure: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def describe(self) -> str:
        """'equal', 'equal within tolerance (max abs 5e-05, ...)', 'DIFFER (3 of 64 elements off, ...)',
        or 'shapes DIFFER: ...' when the outputs are not even alike."""
        figures = f"max abs {self.max_abs_error:.3g}, max rel {self.max_rel_error:.3g}"
        if self.structure is not None:
            return self.structure
        if self.matches and self.max_abs_error == 0:
            return "equal"
        if self.matches:
            return f"equal within tolerance ({figures})"
        return f"DIFFER ({self.elements_off} of {self.elements} elements off; {figures})"


def check_tolerances(rtol: Any, atol: Any) -> None:
    """InvalidOptionError unless both are None (the dtype's defaults) or both are numbers >= 0:
    assert_close takes the pair or neither, and one alone would read as a mismatch."""
    for name, value in (("rtol", rtol), ("atol", atol)):
        bad = value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0)
        if bad or (isinstance(value, float) and math.isinf(value)):
            raise InvalidOptionError(f"{name} is a tolerance, a finite number >= 0 (or None for torch's default), got {value!r}")
    if (rtol is None) != (atol is None):
        given = "rtol" if atol is None else "atol"
        raise InvalidOptionError(f"{given} was given alone: pass rtol and atol together (e.g. rtol=1e-4, atol=1e-5), or neither")


def compare_outputs(actual: Any, expected: Any, *, rtol: float | None = None, atol: float | None = None) -> Comparison:
    """Compare two (nested) outputs on CPU; a one-element sequence is compared with a bare tensor."""
    actual, expected = _on_cpu(actual), _on_cpu(expected)
    if isinstance(actual, (tuple, list)) and len(actual) == 1 and not isinstance(expected, (tuple, list)):
        actual = actual[0]
    detail = None
    try:
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    except (AssertionError, TypeError, ValueError) as mismatch:
        detail = str(mismatch)
    abs_error, rel_error, off, total = _figures(actual, expected, rtol, atol)
    structure = _structure(actual, expected) if detail is not None else None
    return Comparison(detail is None, abs_error, rel_error, off, total, rtol, atol, detail, structure)


def _structure(actual: Any, expected: Any) -> str | None:
    """What differs before the values do: the number of outputs, a shape or a dtype; None when alike."""
    left, right = tree_leaves(actual), tree_leaves(expected)
    if len(left) != len(right):
        return f"outputs DIFFER in number: {len(left)} vs {len(right)}"
    for index, (a, e) in enumerate(zip(left, right)):
        if isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor):
            if a.shape != e.shape:
                return f"shapes DIFFER at output {index}: {tuple(a.shape)} vs {tuple(e.shape)}"
            if a.dtype != e.dtype:
                return f"dtypes DIFFER at output {index}: {a.dtype} vs {e.dtype}".replace("torch.", "")
    return None


def _figures(actual: Any, expected: Any, rtol: float | None, atol: float | None) -> tuple[float, float, int, int]:
    pairs = zip(tree_leaves(actual), tree_leaves(expected))
    abs_error = rel_error = 0.0
    off = total = 0
    for a, e in pairs:
        if not (isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor)) or a.shape != e.shape:
            continue
        leaf_rtol, leaf_atol = _tolerances(a, e, rtol, atol)
        a, e = _widened(a), _widened(e)
        diff = _difference(a, e)
        total += diff.numel()
        if diff.numel() == 0:
            continue
        abs_error = max(abs_error, float(diff.max()))
        relative = torch.nan_to_num(diff / e.abs().clamp_min(1e-12), nan=float("inf"), posinf=float("inf"))
        rel_error = max(rel_error, float(relative.max()))
        off += int((~torch.isclose(a, e, rtol=leaf_rtol, atol=leaf_atol, equal_nan=True)).sum())
    return abs_error, rel_error, off, total


def _widened(t: torch.Tensor) -> torch.Tensor:
    """float64 (complex128 for complex values, bool and integers as float64): no part is dropped."""
    t = t.detach()
    return t.to(torch.complex128) if t.is_complex() else t.double()


def _difference(a: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """|a - e| per element; 0 where both are NaN or both are the same infinity, inf where only one is NaN."""
    same = (a == e) | (torch.isnan(a) & torch.isnan(e))
    diff = torch.where(same, torch.zeros((), dtype=torch.float64), (a - e).abs().to(torch.float64))
    return torch.nan_to_num(diff, nan=float("inf"), posinf=float("inf"))


def _tolerances(a: torch.Tensor, e: torch.Tensor, rtol: float | None, atol: float | None) -> tuple[float, float]:
    """The tolerances in force: the given ones, else assert_close's defaults for the dtypes."""
    if rtol is not None and atol is not None:
        return rtol, atol
    default_rtol, default_atol = default_tolerances(a, e)
    return (default_rtol if rtol is None else rtol), (default_atol if atol is None else atol)


def _on_cpu(tree: Any) -> Any:
    return tree_map(lambda v: v.detach().cpu() if isinstance(v, torch.Tensor) else v, tree)
