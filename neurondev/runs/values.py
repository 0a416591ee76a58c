"""Compare two outputs (or two states) and keep the figures: the one comparison every verdict reads.

Outputs are compared through their tensors: torch's pytree opens what it knows (tuples, lists,
dicts, dataclasses and a library's registered types such as transformers' ``ModelOutput``), and an
object it does not know (transformers' ``DynamicCache``) is opened through its attributes to the
tensors it holds. Whatever holds no tensor and is no plain value is named as not compared, with the
reason, and never counted as a difference; nothing compared at all is "not compared", never "0 of 0
elements off". NaN in the same place on both sides is equal, and so are equal infinities; complex
values are compared in both parts; a sparse tensor through its dense values.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import torch

from neurondev._compat.fx_internals import default_tolerances, keystr, tree_flatten_with_path
from neurondev.errors import InvalidOptionError

__all__ = ["MISMATCH_KINDS", "STATUSES", "Comparison", "LeftOut", "Mismatch", "check_tolerances", "compare_outputs"]

MISMATCH_KINDS = ("count", "value", "type", "shape", "dtype")


@dataclasses.dataclass(frozen=True)
class Mismatch:
    """A difference before any figure: ``kind`` (``MISMATCH_KINDS``: how many outputs, a plain value, a tensor on
    one side only, a shape, a dtype) at ``where`` (the output's path), ``left`` (the actual side) and ``right``
    (the expected side) as written; ``only``: the outputs on one side only (a count)."""

    kind: str
    where: str
    left: str
    right: str
    only: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class LeftOut:
    """An output that could not be compared: ``where`` (its path) and what it holds (``held``: a type name with no
    tensor in it); ``where`` None: nothing at all was comparable (no tensor, no value)."""

    where: str | None
    held: str | None = None


STATUSES = ("equal", "within tolerance", "differ", "not compared")
_PLAIN = (int, float, complex, bool, str, bytes, type(None), torch.dtype, torch.device)
_MAX_DEPTH = 6


@dataclasses.dataclass(frozen=True)
class Comparison:
    """How far ``actual`` is from ``expected``.

    ``status`` is one of ``STATUSES``: 'equal' (every value the same), 'within tolerance' (assert_close's
    tolerances, or ``rtol``/``atol``), 'differ', or 'not compared' (nothing comparable: ``left_out`` says
    why). ``max_abs_error``/``max_rel_error``/``elements_off``/``elements`` are measured over every tensor
    of the same shape and dtype; ``detail`` is assert_close's message when they differ; ``structure``
    names a difference before any value (a shape, a dtype, the number of outputs); ``left_out`` names
    what could not be compared (``output['cache'] (a Lock: no tensor in it)``), beside what was.
    """

    status: str
    max_abs_error: float
    max_rel_error: float
    elements_off: int
    elements: int
    rtol: float | None
    atol: float | None
    detail: str | None = None
    structure: Mismatch | None = None
    left_out: tuple[LeftOut, ...] = ()

    @property
    def matches(self) -> bool | None:
        """True when the values agree, False when they differ, None when nothing was compared."""
        return None if self.status == "not compared" else self.status != "differ"

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "matches": self.matches}


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
    """Compare two (nested) outputs on CPU, through their tensors; a one-element sequence is compared with a bare value."""
    if isinstance(actual, (tuple, list)) and len(actual) == 1 and not isinstance(expected, (tuple, list)):
        actual = actual[0]
    left, right = dict(_values(actual)), dict(_values(expected))
    left_out = tuple(LeftOut(f"output{path}", held) for path, held in _opaque(actual))
    if set(left) != set(right):
        only = tuple(f"output{p}" for p in sorted(set(left) ^ set(right))[:3])
        return _structural(Mismatch("count", "outputs", str(len(left)), str(len(right)), only), rtol, atol, left_out)
    return _compared([(path, left[path], right[path]) for path in right], rtol, atol, left_out)


def _structural(mismatch: Mismatch, rtol: float | None, atol: float | None, left_out: tuple[LeftOut, ...]) -> Comparison:
    return Comparison("differ", math.inf, math.inf, 0, 0, rtol, atol, None, mismatch, left_out)


def _compared(pairs: list[tuple[str, Any, Any]], rtol: float | None, atol: float | None, left_out: tuple[LeftOut, ...]) -> Comparison:
    tensors = [(path, a, e) for path, a, e in pairs if isinstance(a, torch.Tensor) or isinstance(e, torch.Tensor)]
    plain = [(path, a, e) for path, a, e in pairs if (path, a, e) not in tensors]
    if not tensors and not plain:
        return Comparison("not compared", 0.0, 0.0, 0, 0, rtol, atol, None, None, left_out or (LeftOut(None),))
    for path, a, e in plain:
        if not _same_plain(a, e):
            return _structural(Mismatch("value", f"output{path}", repr(a), repr(e)), rtol, atol, left_out)
    for index, (path, a, e) in enumerate(tensors):
        structure = _tensor_structure(path, index, a, e)
        if structure is not None:
            return _structural(structure, rtol, atol, left_out)
    return _figures(tensors, rtol, atol, left_out)


def _same_plain(a: Any, e: Any) -> bool:
    if isinstance(a, float) and isinstance(e, float) and math.isnan(a) and math.isnan(e):
        return True
    return bool(a == e)


def _tensor_structure(path: str, index: int, a: Any, e: Any) -> Mismatch | None:
    """What differs before the values do: a tensor on one side only, a shape or a dtype."""
    where = f"output{path}" if path else f"output {index}"
    if not (isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor)):
        return Mismatch("type", where, type(a).__name__, type(e).__name__)
    if a.shape != e.shape:
        return Mismatch("shape", where, str(tuple(a.shape)), str(tuple(e.shape)))
    if a.dtype != e.dtype:
        return Mismatch("dtype", where, str(a.dtype).replace("torch.", ""), str(e.dtype).replace("torch.", ""))
    return None


def _figures(tensors: list[tuple[str, Any, Any]], rtol: float | None, atol: float | None, left_out: tuple[LeftOut, ...]) -> Comparison:
    total = _Figures()
    detail = None
    for path, a, e in tensors:
        leaf_rtol, leaf_atol = _tolerances(a, e, rtol, atol)
        leaf = _leaf_figures(a.reshape(-1), e.reshape(-1), leaf_rtol, leaf_atol)
        if leaf.off and detail is None:
            detail = f"output{path}: {_mismatch_message(leaf, tuple(a.shape), leaf_rtol, leaf_atol)}"
        total = total.joined(leaf)
    status = "differ" if detail is not None else "equal" if total.abs_error == 0 else "within tolerance"
    return Comparison(status, total.abs_error, total.rel_error, total.off, total.elements, rtol, atol, detail, None, left_out)


_CHUNK = 1 << 20  # elements compared at a time: the comparison's memory is a few chunks, not a few outputs


@dataclasses.dataclass(frozen=True)
class _Figures:
    """Running figures of one or more flat tensors: the greatest differences with their flat index, elements off."""

    abs_error: float = 0.0
    abs_at: int = 0
    rel_error: float = 0.0
    rel_at: int = 0
    off: int = 0
    elements: int = 0

    def joined(self, other: _Figures, offset: int = 0) -> _Figures:
        larger_abs, larger_rel = other.abs_error > self.abs_error, other.rel_error > self.rel_error
        return _Figures(
            other.abs_error if larger_abs else self.abs_error,
            other.abs_at + offset if larger_abs else self.abs_at,
            other.rel_error if larger_rel else self.rel_error,
            other.rel_at + offset if larger_rel else self.rel_at,
            self.off + other.off,
            self.elements + other.elements,
        )


def _leaf_figures(a: torch.Tensor, e: torch.Tensor, rtol: float, atol: float) -> _Figures:
    """The figures of two flat tensors of one dtype, a chunk at a time; closeness is assert_close's (isclose in
    the tensors' own dtype), the differences are measured widened (float64 or complex128)."""
    figures = _Figures()
    for start in range(0, a.numel(), _CHUNK):
        ac, ec = a[start : start + _CHUNK], e[start : start + _CHUNK]
        off = int((~torch.isclose(ac, ec, rtol=rtol, atol=atol, equal_nan=True)).sum())
        wa, we = _widened(ac), _widened(ec)
        diff = _difference(wa, we)
        relative = torch.nan_to_num(diff / we.abs().clamp_min(1e-12), nan=float("inf"), posinf=float("inf"))
        worst, worst_relative = int(diff.argmax()), int(relative.argmax())
        chunk = _Figures(float(diff[worst]), worst, float(relative[worst_relative]), worst_relative, off, diff.numel())
        figures = figures.joined(chunk, start)
    return figures


def _mismatch_message(figures: _Figures, shape: tuple[int, ...], rtol: float, atol: float) -> str:
    """assert_close's message, from figures measured a chunk at a time."""
    equality = rtol == 0 and atol == 0
    share = 100 * figures.off / max(figures.elements, 1)
    lines = [
        f"Tensor-likes are not {'equal' if equality else 'close'}!",
        "",
        f"Mismatched elements: {figures.off} / {figures.elements} ({share:.1f}%)",
        f"Greatest absolute difference: {figures.abs_error} at index {_index(figures.abs_at, shape)}"
        + ("" if equality else f" (up to {atol} allowed)"),
        f"Greatest relative difference: {figures.rel_error} at index {_index(figures.rel_at, shape)}"
        + ("" if equality else f" (up to {rtol} allowed)"),
    ]
    return "\n".join(lines)


def _index(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The index of element ``flat`` of a tensor of ``shape`` (row-major)."""
    index = []
    for size in reversed(shape):
        flat, at = divmod(flat, size) if size else (flat, 0)
        index.append(at)
    return tuple(reversed(index))


def _values(tree: Any) -> Iterator[tuple[str, Any]]:
    """(path, value) for every tensor (on CPU, dense) and plain value of ``tree``, objects opened to their tensors."""
    for path, leaf in _leaves(tree):
        if isinstance(leaf, torch.Tensor):
            yield path, _plain_tensor(leaf)
        elif isinstance(leaf, _PLAIN):
            yield path, leaf


def _opaque(tree: Any) -> Iterator[tuple[str, str]]:
    """(path, type name) for each value of ``tree`` that is neither a tensor nor a plain value and holds no tensor."""
    for path, leaf in _leaves(tree):
        if not isinstance(leaf, (torch.Tensor, *_PLAIN)):
            yield path, type(leaf).__name__


def _leaves(tree: Any, depth: int = 0, seen: set[int] | None = None) -> Iterator[tuple[str, Any]]:
    """torch's pytree leaves, each object pytree does not open followed through its attributes."""
    seen = set() if seen is None else seen
    leaves, _ = tree_flatten_with_path(tree)
    for key, leaf in leaves:
        path = keystr(key)
        inside = _attributes(leaf) if depth < _MAX_DEPTH and id(leaf) not in seen else None
        if inside is None:
            yield path, leaf
            continue
        seen.add(id(leaf))
        found = list(_leaves(inside, depth + 1, seen))
        tensors = [(f"{path}{inner}", value) for inner, value in found if isinstance(value, torch.Tensor)]
        yield from tensors if tensors else [(path, leaf)]


def _attributes(value: Any) -> dict[str, Any] | None:
    """The attributes of an object pytree does not open (None for tensors, plain values and containers)."""
    if isinstance(value, (torch.Tensor, *_PLAIN, tuple, list, dict)) or callable(value):
        return None
    fields = vars(value) if hasattr(value, "__dict__") else None
    return {name: item for name, item in fields.items() if not name.startswith("_")} if fields else None


def _plain_tensor(value: torch.Tensor) -> torch.Tensor:
    value = value.detach()
    if value.layout != torch.strided:
        value = value.to_dense()
    return value.cpu()


def _widened(t: torch.Tensor) -> torch.Tensor:
    """float64 (complex128 for complex values, bool and integers as float64): no part is dropped."""
    return t.to(torch.complex128) if t.is_complex() else t.double()


def _difference(a: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """|a - e| per element; 0 where both are NaN or both are the same infinity, inf where only one is NaN."""
    same = (a == e) | (torch.isnan(a) & torch.isnan(e))
    diff = torch.where(same, torch.zeros((), dtype=torch.float64, device=a.device), (a - e).abs().to(torch.float64))
    return torch.nan_to_num(diff, nan=float("inf"), posinf=float("inf"))


def _tolerances(a: torch.Tensor, e: torch.Tensor, rtol: float | None, atol: float | None) -> tuple[float, float]:
    """The tolerances in force: the given ones, else assert_close's defaults for the dtypes."""
    if rtol is not None and atol is not None:
        return rtol, atol
    default_rtol, default_atol = default_tolerances(a, e)
    return (default_rtol if rtol is None else rtol), (default_atol if atol is None else atol)
