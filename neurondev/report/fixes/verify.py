"""Verification: the fixed code traced again with the same inputs must lose the pins, gain none, trace on XLA
as it does on CPU, and give the same outputs on CPU; a fix that fails a check stays advice, with the reason."""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from neurondev.fx.pins import DevicePin, find_pins
from neurondev.report.fixes.edits import Edit, FileEdits, dedented
from neurondev.report.fixes.rebuild import rebuilt
from neurondev.report.fixes.records import Fix
from neurondev.trace.copies import kept_rng, traced_copies

__all__ = ["verify"]


@dataclasses.dataclass(frozen=True)
class _Outcome:
    """What one round of verification found for each edit: None when it passed, else the reason."""

    failures: dict[int, str]
    xla_note: str


_GIVEN_A_CAPTURE = "not verified: explain was given a Capture; pass the function and its inputs to verify fixes"


def verify(
    fn: Callable[..., Any] | None,
    call: tuple[tuple, dict] | None,
    files: Sequence[FileEdits],
    pins: Sequence[DevicePin],
    *,
    target: torch.device,
    xla: bool,
    unverifiable: str = _GIVEN_A_CAPTURE,
) -> tuple[Fix, ...]:
    """One Fix per proposed statement; the spelled ones verified together, then one by one when that fails.
    Without ``fn`` and ``call`` nothing can be traced again: each spelled fix says ``unverifiable``."""
    spelled = [(f, e) for f in files for e in f.spelled]
    if not spelled:
        return tuple(_fix(e, False, e.spelling.reason) for f in files for e in f.edits)
    if fn is None or call is None:
        return _fixes(files, _Outcome({id(e): unverifiable for _, e in spelled}, ""))
    outcome = _round(fn, call, spelled, pins, target, xla)
    if outcome.failures and len(spelled) > 1:  # which fix fails: each alone
        alone = {id(e): _round(fn, call, [(f, e)], pins, target, xla).failures.get(id(e)) for f, e in spelled}
        outcome = _Outcome({key: reason for key, reason in alone.items() if reason}, outcome.xla_note)
    return _fixes(files, outcome)


def _fixes(files: Sequence[FileEdits], outcome: _Outcome) -> tuple[Fix, ...]:
    fixes = []
    for file in files:
        for edit in file.edits:
            if edit.after is None:
                fixes.append(_fix(edit, False, edit.spelling.reason))
            elif id(edit) in outcome.failures:
                fixes.append(_fix(edit, False, outcome.failures[id(edit)]))
            else:
                checked = "traced again: no pin left on the line, no new pin, the same outputs on CPU"
                reason = edit.spelling.reason[:1].upper() + edit.spelling.reason[1:]
                fixes.append(_fix(edit, True, f"{checked}{outcome.xla_note}. {reason}"))
    return tuple(fixes)


def _fix(edit: Edit, verified: bool, why: str) -> Fix:
    after = dedented(edit.after) if edit.after is not None else None
    return Fix(
        edit.source,
        edit.spelling.first,
        edit.spelling.last,
        dedented(edit.before),
        after,
        edit.spelling.advice,
        edit.spelling.removes,
        edit.spelling.left,
        verified,
        why,
    )


def _round(
    fn: Callable[..., Any],
    call: tuple[tuple, dict],
    spelled: Sequence[tuple[FileEdits, Edit]],
    pins: Sequence[DevicePin],
    target: torch.device,
    xla: bool,
) -> _Outcome:
    """Apply ``spelled`` together, trace the fixed callable again and check every edit."""
    from neurondev.trace.capture import capture

    applied: dict[str, list[Edit]] = collections.defaultdict(list)
    for file, edit in spelled:
        applied[file.file].append(edit)
    files = {file.file: file for file, _ in spelled}
    texts = {path: files[path].fixed_text(edits) for path, edits in applied.items()}
    everyone = lambda reason: _Outcome({id(e): reason for _, e in spelled}, "")  # noqa: E731
    args, kwargs = call
    try:
        # the original runs rebuilt too (its own code, copied namespaces): neither run writes to the user's globals
        with kept_rng(), rebuilt(fn, texts) as (fixed_fn, originals), rebuilt(fn, {}) as (original_fn, _):
            fixed = capture(fixed_fn, *args, **kwargs)
            new_pins = [p for i, g in enumerate(fixed.graphs) for p in find_pins(g, target=target, graph=i)]
            failures = _pin_failures(spelled, applied, files, originals, pins, new_pins)
            outputs = _outputs_differ(original_fn, fixed_fn, args, kwargs)
            xla_failures, xla_note = _xla_failures(fixed, fixed_fn, call, spelled, applied, files, originals, target) if xla else ({}, "")
    except Exception as error:  # the fixed code does not load, trace or run: no fix is verified, the reason is said
        message = str(error).strip().splitlines()[0][:300] if str(error).strip() else ""
        return everyone(f"not verified: the fixed code raised {type(error).__name__}: {message}")
    if outputs:
        return everyone(f"not verified: {outputs}")
    for key, reason in xla_failures.items():
        failures.setdefault(key, reason)
    return _Outcome(failures, xla_note if xla else "; not compared with a trace on XLA (no XLA device here)")


def _mapped(pin: DevicePin, originals: dict[str, str], applied: dict[str, list[Edit]], files: dict[str, FileEdits]) -> tuple:
    """(original file, original line, function, location) of a pin of the fixed trace."""
    file = originals.get(pin.file or "", pin.file)
    line = pin.line
    if file in files and line is not None:
        line = files[file].original_line(line, applied[file])
    return file, line, pin.function, pin.location


def _pin_failures(
    spelled: Sequence[tuple[FileEdits, Edit]],
    applied: dict[str, list[Edit]],
    files: dict[str, FileEdits],
    originals: dict[str, str],
    pins: Sequence[DevicePin],
    new_pins: Sequence[DevicePin],
) -> dict[int, str]:
    # the pins of the fixed statements that their spelling rewrote (node names repeat across graphs: the edit's own pins)
    removed = {id(pin) for _, edit in spelled for pin in edit.pins if pin.node in edit.spelling.removes}
    expected = collections.Counter(
        (p.file, _statement_first(p, applied.get(p.file or "", [])), p.function, p.location) for p in pins if id(p) not in removed
    )
    found = collections.Counter(_mapped(p, originals, applied, files) for p in new_pins)
    failures: dict[int, str] = {}
    for file, edit in spelled:
        here = [key for key in found if key[0] == file.file and key[1] == edit.spelling.first]
        still = sum(found[key] for key in here) - sum(expected[key] for key in here)
        if still > 0:
            failures[id(edit)] = (
                f"not verified: traced again, the fixed statement still has {still} pin(s) ({', '.join(k[2] for k in here)})"
            )
    extra = found - expected
    if extra and not failures:
        (file, line, function, location), _count = next(iter(extra.items()))
        described = f"{Path(str(file)).name}:{line} ({function}, {location})"
        failures = {id(e): f"not verified: traced again, a new pin appears at {described}" for _, e in spelled}
    return failures


def _statement_first(pin: DevicePin, applied: Sequence[Edit]) -> int | None:
    """A pin's line, or the first line of the applied statement it is in."""
    for edit in applied:
        if edit.spelling.first <= (pin.line or 0) <= edit.spelling.last:
            return edit.spelling.first
    return pin.line


def _outputs_differ(fn: Callable[..., Any], fixed_fn: Callable[..., Any], args: tuple, kwargs: dict) -> str:
    """'' when the original and the fixed code give the same outputs on CPU (same inputs, same seed); else what differs."""
    original, fixed = _eager(fn, args, kwargs), _eager(fixed_fn, args, kwargs)
    try:
        torch.testing.assert_close(fixed, original, rtol=0, atol=0, equal_nan=True)
    except AssertionError as error:
        return "the outputs on CPU differ: " + " ".join(str(error).split())[:200]
    except (TypeError, ValueError, RuntimeError):  # objects assert_close does not know (a cache): their tensors
        return _tensors_differ(original, fixed)
    return ""


def _tensors_differ(original: Any, fixed: Any) -> str:
    from neurondev._compat import tree_leaves

    left = [leaf for leaf in tree_leaves(original) if isinstance(leaf, torch.Tensor)]
    right = [leaf for leaf in tree_leaves(fixed) if isinstance(leaf, torch.Tensor)]
    try:
        torch.testing.assert_close(right, left, rtol=0, atol=0, equal_nan=True)
    except (AssertionError, TypeError, ValueError, RuntimeError) as error:
        return "the outputs on CPU differ: " + " ".join(str(error).split())[:200]
    return ""


def _eager(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """``fn`` called on copies of everything (a training step may step its optimizer), with the seed both runs share."""
    fn_copy, args_copy, kwargs_copy = traced_copies(fn, args, kwargs, torch.device("cpu"), [], [])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return fn_copy(*args_copy, **kwargs_copy)


def _xla_failures(
    fixed: Any,
    fixed_fn: Callable[..., Any],
    call: tuple[tuple, dict],
    spelled: Sequence[tuple[FileEdits, Edit]],
    applied: dict[str, list[Edit]],
    files: dict[str, FileEdits],
    originals: dict[str, str],
    target: torch.device,
) -> tuple[dict[int, str], str]:
    """Trace the fixed code natively on XLA: each fixed statement's ops must be the CPU trace's, and every value it makes on XLA."""
    from neurondev.xla.native import compare_with_native

    try:
        traces = compare_with_native(fixed, fixed_fn, *call)
    except Exception as error:  # no native trace to compare with: say so, the other checks stand
        return {}, f"; not compared with a trace on XLA ({type(error).__name__}: {str(error).splitlines()[0][:120] if str(error) else ''})"
    copies = {original: copy for copy, original in originals.items()}
    failures: dict[int, str] = {}
    for file, edit in spelled:
        path = copies.get(file.file, file.file)
        first, last = file.new_range(edit, applied[file.file])
        differs = [d for d in traces.differences if d.source is not None and d.source.file == path and first <= (d.line or 0) <= last]
        if differs:
            failures[id(edit)] = (
                f"not verified: traced on XLA the fixed statement makes {list(differs[0].xla_ops)}, on CPU {list(differs[0].cpu_ops)}"
            )
            continue
        host = _host_values_made(traces.native.graphs, path, first, last, target)
        if host:
            failures[id(edit)] = f"not verified: traced on XLA the fixed statement still makes {host} on the host"
    return failures, "; traced on XLA, the fixed statements make the same ops, on the device"


def _host_values_made(graphs: Sequence[torch.fx.GraphModule], path: str, first: int, last: int, target: torch.device) -> str:
    from neurondev.trace.source import source_of

    for gm in graphs:
        for node in gm.graph.nodes:
            source = source_of(node)
            if source is None or source.file != path or not first <= source.line <= last:
                continue
            value = node.meta.get("example_value")
            if isinstance(value, torch.Tensor) and value.device.type != target.type:
                return f"{node.name} ({value.device.type})"
    return ""
