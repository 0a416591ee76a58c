"""Compare two outputs (nested tensors) and keep the figures: max abs/rel error, elements off, NaN-aware."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from neurondev._compat import default_tolerances, tree_leaves, tree_map
from neurondev.errors import InvalidOptionError

__all__ = ["Comparison", "check_tolerances", "compare_outputs"]


@dataclasses.dataclass(frozen=True)
class Comparison:
    """How far ``actual`` is from ``expected``. NaN in the same place on both sides is equal.

    ``matches`` uses ``torch.testing.assert_close`` with ``rtol``/``atol`` (None: its defaults
    for the dtype). ``max_abs_error``/``max_rel_error``/``elements_off`` are measured over every
    tensor leaf, whatever the verdict; ``detail`` is assert_close's message when they differ.
    """

    matches: bool
    max_abs_error: float
    max_rel_error: float
    elements_off: int
    elements: int
    rtol: float | None
    atol: float | None
    detail: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def describe(self) -> str:
        """'equal', or 'within tolerance (max abs 5e-05, ...)', or 'DIFFER (3 of 64 elements off, ...)'."""
        figures = f"max abs {self.max_abs_error:.3g}, max rel {self.max_rel_error:.3g}"
        if self.matches and self.max_abs_error == 0:
            return "equal"
        if self.matches:
            return f"equal within tolerance ({figures})"
        return f"DIFFER ({self.elements_off} of {self.elements} elements off; {figures})"


def check_tolerances(rtol: Any, atol: Any) -> None:
    """InvalidOptionError unless both are None (the dtype's defaults) or both are numbers >= 0:
    assert_close takes the pair or neither, and one alone would read as a mismatch."""
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            raise InvalidOptionError(f"{name} is a tolerance, a number >= 0 (or None for torch's default), got {value!r}")
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
    return Comparison(detail is None, abs_error, rel_error, off, total, rtol, atol, detail)


def _figures(actual: Any, expected: Any, rtol: float | None, atol: float | None) -> tuple[float, float, int, int]:
    pairs = zip(tree_leaves(actual), tree_leaves(expected))
    abs_error = rel_error = 0.0
    off = total = 0
    for a, e in pairs:
        if not (isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor)) or a.shape != e.shape:
            continue
        leaf_rtol, leaf_atol = _tolerances(a, e, rtol, atol)
        a, e = a.detach().double(), e.detach().double()
        both_nan = torch.isnan(a) & torch.isnan(e)
        diff = torch.where(both_nan, torch.zeros_like(a), (a - e).abs())
        diff = torch.nan_to_num(diff, nan=float("inf"))
        total += diff.numel()
        if diff.numel() == 0:
            continue
        abs_error = max(abs_error, float(diff.max()))
        rel_error = max(rel_error, float((diff / e.abs().clamp_min(1e-12)).max()))
        off += int((~torch.isclose(a, e, rtol=leaf_rtol, atol=leaf_atol, equal_nan=True)).sum())
    return abs_error, rel_error, off, total


def _tolerances(a: torch.Tensor, e: torch.Tensor, rtol: float | None, atol: float | None) -> tuple[float, float]:
    """The tolerances in force: the given ones, else assert_close's defaults for the dtypes."""
    if rtol is not None and atol is not None:
        return rtol, atol
    default_rtol, default_atol = default_tolerances(a, e)
    return (default_rtol if rtol is None else rtol), (default_atol if atol is None else atol)


def _on_cpu(tree: Any) -> Any:
    return tree_map(lambda v: v.detach().cpu() if isinstance(v, torch.Tensor) else v, tree)
