"""What the fixed code's trace on CPU must show, per fixed statement: its pins gone and no new one, and every value it
makes what the original's made (dtype, shape, layout, requires_grad), under another default dtype too; where only the
dtype differs, the dtypes to spell."""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import torch

from neurondev.fx.pins import DevicePin
from neurondev.report.fixes.edits import Edit, FileEdits
from neurondev.report.fixes.records import FixCheck

__all__ = ["other_default_failures", "pin_failures", "unspelled_dtypes", "value_failures"]


_OTHER_DEFAULT = torch.float64


def other_default_failures(
    spelled: Sequence[tuple[FileEdits, Edit]],
    applied: dict[str, list[Edit]],
    originals: dict[str, str],
    original_fn: Callable[..., Any],
    fixed_fn: Callable[..., Any],
    call: tuple[tuple, dict],
) -> dict[int, FixCheck]:
    """Per edit whose statement makes floating values: traced again, original and fixed, with float64 as the
    default dtype, the fixed statement must make what the original makes (the rule, not only today's dtype)."""
    from neurondev.trace.capture import capture

    floating = [(f, e) for f, e in spelled if any(getattr(p, "function", "").startswith("torch.") for p in e.pins)]
    if not floating:
        return {}
    args, kwargs = call
    previous = torch.get_default_dtype()
    torch.set_default_dtype(_OTHER_DEFAULT)
    try:
        before = capture(original_fn, *args, **kwargs).graphs
    except Exception:  # the program itself does not run with another default dtype (float64 meets its float32 inputs): no check
        return {}
    else:
        try:
            after = capture(fixed_fn, *args, **kwargs).graphs
        except Exception as error:
            raised = FixCheck("other default raised", error=type(error).__name__)
            return {id(e): raised for _, e in floating}
    finally:
        torch.set_default_dtype(previous)
    copies = {original: copy for copy, original in originals.items()}
    failures = {}
    for file, edit in floating:
        was = _signatures(_statement_nodes(before, file.file, edit.spelling.first, edit.spelling.last))
        now = _signatures(_statement_nodes(after, copies.get(file.file, file.file), *file.new_range(edit, applied[file.file])))
        if was and was != now:
            failures[id(edit)] = FixCheck("other default differs", before=_described(was), after=_described(now))
    return failures


def _signatures(nodes: Iterable[torch.fx.Node]) -> set[tuple[Any, ...]]:
    """What each value a statement makes is, device aside: (dtype, shape, layout, requires_grad)."""
    found = set()
    for node in nodes:
        value = node.meta.get("example_value")
        if isinstance(value, torch.Tensor):
            found.add((value.dtype, tuple(value.shape), value.layout, value.requires_grad))
    return found


def _statement_nodes(graphs: Iterable[torch.fx.GraphModule], file: str, first: int, last: int) -> list[torch.fx.Node]:
    """The nodes (in bodies that higher-order ops call too) traced from lines ``first``..``last`` of ``file``."""
    from neurondev.fx.subgraphs import subgraphs
    from neurondev.trace.source import source_of

    modules = [m for gm in graphs for m in (gm, *(body.module for body in subgraphs(gm)))]
    nodes = [node for module in modules for node in module.graph.nodes]
    return [node for node in nodes if (s := source_of(node)) is not None and s.file == file and first <= s.line <= last]


def value_failures(
    spelled: Sequence[tuple[FileEdits, Edit]],
    applied: dict[str, list[Edit]],
    graphs: dict[int, torch.fx.GraphModule],
    fixed_graphs: Sequence[torch.fx.GraphModule],
    originals: dict[str, str],
) -> tuple[dict[int, FixCheck], dict[int, dict[str, str]]]:
    """Per edit: values that differ from the original's (the check), or differ in dtype alone (the dtypes to spell)."""
    copies = {original: copy for copy, original in originals.items()}
    failures: dict[int, FixCheck] = {}
    respell: dict[int, dict[str, str]] = {}
    for file, edit in spelled:
        before_nodes = _statement_nodes(graphs.values(), file.file, edit.spelling.first, edit.spelling.last)
        after_nodes = _statement_nodes(fixed_graphs, copies.get(file.file, file.file), *file.new_range(edit, applied[file.file]))
        before, after = _signatures(before_nodes), _signatures(after_nodes)
        if not before or before == after or (before <= after and _signatures(after_nodes[-1:]) == _signatures(before_nodes[-1:])):
            continue  # the same values (a fix may make one more on the way: torch.diag of new_ones), the same result
        if {s[1:] for s in before} == {s[1:] for s in after}:
            dtypes = _dtypes_of(edit, before_nodes)
            if dtypes and not all(dtypes.get(node) and f"dtype={dtypes[node]}" in (edit.after or "") for node in edit.spelling.removes):
                respell[id(edit)] = dtypes
                continue
        failures[id(edit)] = FixCheck("values differ", before=_described(before), after=_described(after))
    return failures, respell


def unspelled_dtypes(spelled: Sequence[tuple[FileEdits, Edit]], graphs: dict[int, torch.fx.GraphModule]) -> dict[int, dict[str, str]]:
    """For fixed code that raised: the original dtypes of the edits that do not spell them yet (a
    ``new_tensor`` of indices takes the float dtype of the tensor it is called on, and indexing fails)."""
    respell = {}
    for file, edit in spelled:
        dtypes = _dtypes_of(edit, _statement_nodes(graphs.values(), file.file, edit.spelling.first, edit.spelling.last))
        if dtypes and not any(f"dtype={dtype}" in (edit.after or "") for dtype in dtypes.values()):
            respell[id(edit)] = dtypes
    return respell


def _dtypes_of(edit: Edit, nodes: Sequence[torch.fx.Node]) -> dict[str, str]:
    """The dtype each pin the edit removes made, as spelled in code (``torch.float32``)."""
    by_name = {node.name: node for node in nodes}
    dtypes = {}
    for pin in edit.pins:
        value = by_name[pin.node.rsplit(".", 1)[-1]].meta.get("example_value") if pin.node.rsplit(".", 1)[-1] in by_name else None
        if isinstance(value, torch.Tensor) and pin.node in edit.spelling.removes:
            dtypes[pin.node] = str(value.dtype)
    return dtypes


def _described(signatures: set[tuple[Any, ...]]) -> str:
    parts = sorted(
        f"{str(d).replace('torch.', '')}{list(shape)}{'' if layout == torch.strided else f' {layout}'}{' (grad)' if grad else ''}"
        for d, shape, layout, grad in signatures
    )
    return ", ".join(parts) or "no tensor"


def _mapped(pin: DevicePin, originals: dict[str, str], applied: dict[str, list[Edit]], files: dict[str, FileEdits]) -> tuple:
    """(original file, original line, function, location) of a pin of the fixed trace."""
    file = originals.get(pin.file or "", pin.file)
    line = pin.line
    if file in files and line is not None:
        line = files[file].original_line(line, applied[file])
    return file, line, pin.function, pin.location


def pin_failures(
    spelled: Sequence[tuple[FileEdits, Edit]],
    applied: dict[str, list[Edit]],
    files: dict[str, FileEdits],
    originals: dict[str, str],
    pins: Sequence[DevicePin],
    new_pins: Sequence[DevicePin],
) -> dict[int, FixCheck]:
    # the pins of the fixed statements that their spelling rewrote (node names repeat across graphs: the edit's own pins)
    removed = {id(pin) for _, edit in spelled for pin in edit.pins if pin.node in edit.spelling.removes}
    expected = collections.Counter(
        (p.file, _statement_first(p, applied.get(p.file or "", [])), p.function, p.location) for p in pins if id(p) not in removed
    )
    found = collections.Counter(_mapped(p, originals, applied, files) for p in new_pins)
    failures: dict[int, FixCheck] = {}
    for file, edit in spelled:
        here = [key for key in found if key[0] == file.file and key[1] == edit.spelling.first]
        still = sum(found[key] for key in here) - sum(expected[key] for key in here)
        if still > 0:
            failures[id(edit)] = FixCheck("pins left", count=still, where=", ".join(k[2] for k in here))
    extra = found - expected
    if extra and not failures:
        (file, line, function, location), _count = next(iter(extra.items()))
        described = f"{Path(str(file)).name}:{line} ({function}, {location})"
        failures = {id(e): FixCheck("new pin", where=described) for _, e in spelled}
    return failures


def _statement_first(pin: DevicePin, applied: Sequence[Edit]) -> int | None:
    """A pin's line, or the first line of the applied statement it is in."""
    for edit in applied:
        if edit.spelling.first <= (pin.line or 0) <= edit.spelling.last:
            return edit.spelling.first
    return pin.line
