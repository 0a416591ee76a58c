"""Verification: every check must run and hold, or the fix stays advice with the check that failed.

The fixed code, traced again with the same inputs, must lose the pins and gain none; every value the
fixed statement makes must have the dtype, shape, layout and requires_grad the original's had (where
only the dtype differs, as ``new_ones`` taking an int64 tensor's, the dtype is spelled and the fix
checked again); the outputs on CPU must be equal; and on XLA, the fixed function under torch.compile
(openxla) must run where the original ran, its statements traced into the same ops as on CPU with
every value they make on the device. No XLA device here means the checks on XLA cannot run: then no
fix is verified, and its check says so (``FixCheck``).

Here: the rounds of verification and the outputs on CPU; the checks of the fixed code's trace on CPU are in
``trace_checks``, those of its program on the device in ``device_checks``.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import torch

from neurondev.fx.pins import DevicePin, find_pins
from neurondev.report.fixes.device_checks import device_failures
from neurondev.report.fixes.edits import Edit, FileEdits, dedented
from neurondev.report.fixes.rebuild import rebuilt
from neurondev.report.fixes.records import Fix, FixCheck
from neurondev.report.fixes.trace_checks import other_default_failures, pin_failures, unspelled_dtypes, value_failures
from neurondev.runs.program_records import ProgramRun
from neurondev.runs.values import Comparison, compare_outputs
from neurondev.trace.copies import kept_global_state, traced_copies
from neurondev.trace.generators import reachable_generators

__all__ = ["Original", "verify"]


@dataclasses.dataclass(frozen=True)
class _Outcome:
    """What one round of verification found for each edit (by id): the check that failed, the device checked, and the
    edits whose values differ from the original's in dtype alone (the dtypes to spell)."""

    failures: dict[int, FixCheck]
    place: str | None
    respell: dict[int, dict[str, str]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Original:
    """What verification compares the fixed code with: the graphs traced on CPU (by graph index) and
    the program as written on XLA (None: not run yet, verification runs it)."""

    graphs: dict[int, torch.fx.GraphModule] = dataclasses.field(default_factory=dict)
    program: ProgramRun | None = None


_NO_XLA = FixCheck("no xla")


_GIVEN_A_CAPTURE = FixCheck("given a capture")


def verify(
    fn: Callable[..., Any] | None,
    call: tuple[tuple, dict] | None,
    files: Sequence[FileEdits],
    pins: Sequence[DevicePin],
    *,
    target: torch.device,
    xla: bool,
    original: Original | None = None,
    unverifiable: FixCheck = _GIVEN_A_CAPTURE,
) -> tuple[Fix, ...]:
    """One Fix per proposed statement; the spelled ones verified together, then one by one when that fails.
    Without ``fn`` and ``call`` nothing can be traced again: each spelled fix says ``unverifiable``."""
    spelled = [(f, e) for f in files for e in f.spelled]
    if not spelled:
        return tuple(_fix(e, FixCheck("no spelling")) for f in files for e in f.edits)
    if fn is None or call is None:
        return _fixes(files, _Outcome({id(e): unverifiable for _, e in spelled}, None))
    against = _with_program(original or Original(), fn, call, target if xla else None)
    outcome = _round(fn, call, spelled, pins, target, xla, against)
    if outcome.respell:  # values of another dtype only: spell the original's dtype and check again
        files = [
            file.respelled({key: dtypes for key, dtypes in outcome.respell.items() if key in {id(e) for e in file.edits}}) for file in files
        ]
        spelled = [(f, e) for f in files for e in f.spelled]
        outcome = _round(fn, call, spelled, pins, target, xla, against)
    if outcome.failures and len(spelled) > 1:  # which fix fails: each alone
        alone = {id(e): _round(fn, call, [(f, e)], pins, target, xla, against).failures.get(id(e)) for f, e in spelled}
        outcome = _Outcome({key: check for key, check in alone.items() if check}, outcome.place)
    return _fixes(files, outcome)


def _with_program(original: Original, fn: Callable[..., Any], call: tuple[tuple, dict], target: torch.device | None) -> Original:
    """The original's program on the target, run here when explain did not run it (check, the fix command, run=False);
    None: no device to run on."""
    if original.program is not None or target is None:
        return original
    from neurondev.devices.drivers import driver_for
    from neurondev.runs.program import ProgramSubject, run_program

    driver = driver_for(target)
    run, _ = run_program(ProgramSubject(fn, *call), driver.program_backend(), driver=driver, label=driver.program_label, calls=1)
    return dataclasses.replace(original, program=run)


def _fixes(files: Sequence[FileEdits], outcome: _Outcome) -> tuple[Fix, ...]:
    fixes = []
    for file in files:
        for edit in file.edits:
            if edit.after is None:
                fixes.append(_fix(edit, FixCheck("no spelling")))
            else:
                fixes.append(_fix(edit, outcome.failures.get(id(edit), FixCheck("verified", place=outcome.place))))
    return tuple(fixes)


def _fix(edit: Edit, check: FixCheck) -> Fix:
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
        check,
        edit.spelling.note,
    )


def _round(
    fn: Callable[..., Any],
    call: tuple[tuple, dict],
    spelled: Sequence[tuple[FileEdits, Edit]],
    pins: Sequence[DevicePin],
    target: torch.device,
    xla: bool,
    original: Original,
) -> _Outcome:
    """Apply ``spelled`` together, trace the fixed callable again and check every edit."""
    from neurondev.trace.capture import capture

    applied: dict[str, list[Edit]] = collections.defaultdict(list)
    for file, edit in spelled:
        applied[file.file].append(edit)
    files = {file.file: file for file, _ in spelled}
    texts = {path: files[path].fixed_text(edits) for path, edits in applied.items()}
    everyone = lambda check: _Outcome({id(e): check for _, e in spelled}, None)  # noqa: E731
    args, kwargs = call
    try:
        # the original runs rebuilt too (its own code, copied namespaces): neither run writes to the user's globals
        with (
            kept_global_state(reachable_generators(fn, args, kwargs)),
            rebuilt(fn, texts) as (fixed_fn, originals),
            rebuilt(fn, {}) as (original_fn, _),
        ):
            fixed = capture(fixed_fn, *args, **kwargs)
            new_pins = [p for i, g in enumerate(fixed.graphs) for p in find_pins(g, target=target, graph=i)]
            failures = pin_failures(spelled, applied, files, originals, pins, new_pins)
            values, respell = value_failures(spelled, applied, original.graphs, fixed.graphs, originals)
            # the dtype rule: the same values under another default dtype (torch.zeros follows it, new_zeros not)
            rule = {} if respell else other_default_failures(spelled, applied, originals, original_fn, fixed_fn, call)
            outputs = _outputs_differ(original_fn, fixed_fn, args, kwargs)
            xla_failures, place = (
                device_failures(fixed, fixed_fn, call, spelled, applied, files, originals, target, original.program) if xla else ({}, None)
            )
    except Exception as error:  # the fixed code does not load, trace or run: no fix is verified, the error is kept
        message = str(error).strip().splitlines()[0][:300] if str(error).strip() else ""
        failed = everyone(FixCheck("fixed code raised", error=f"{type(error).__name__}: {message}"))
        return dataclasses.replace(failed, respell=unspelled_dtypes(spelled, original.graphs))
    if respell and not failures:
        return _Outcome({}, place, respell)
    differ = {} if outputs is None else {id(e): FixCheck("outputs differ", comparison=outputs) for _, e in spelled}
    for found in (values, differ, rule, xla_failures):
        for key, check in found.items():
            failures.setdefault(key, check)
    if not xla:
        for _, edit in spelled:
            failures.setdefault(id(edit), _NO_XLA)
    return _Outcome(failures, place)


def _outputs_differ(fn: Callable[..., Any], fixed_fn: Callable[..., Any], args: tuple, kwargs: dict) -> Comparison | None:
    """None when the original and the fixed code give the same outputs on CPU (same inputs, same seed);
    else the comparison that says what differs. The one comparison every verdict uses, held to exact
    equality: a fix changes where values are made, never the values."""
    original, fixed = _eager(fn, args, kwargs), _eager(fixed_fn, args, kwargs)
    comparison = compare_outputs(fixed, original, rtol=0.0, atol=0.0)
    return comparison if comparison.status == "differ" else None


def _eager(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """``fn`` called on copies of everything (a training step may step its optimizer), with the seed both runs share."""
    fn_copy, args_copy, kwargs_copy = traced_copies(fn, args, kwargs, torch.device("cpu"), [], [])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return fn_copy(*args_copy, **kwargs_copy)
