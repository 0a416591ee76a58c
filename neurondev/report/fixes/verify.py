"""Verification: every check must run and hold, or the fix stays advice with the check that failed.

The fixed code, traced again with the same inputs, must lose the pins and gain none; every value the
fixed statement makes must have the dtype, shape, layout and requires_grad the original's had (where
only the dtype differs, as ``new_ones`` taking an int64 tensor's, the dtype is spelled and the fix
checked again); the outputs on CPU must be equal; and on XLA, the fixed function under torch.compile
(openxla) must run where the original ran, its statements traced into the same ops as on CPU with
every value they make on the device. No XLA device here means the checks on XLA cannot run: then no
fix is verified, and its check says so (``FixCheck``).
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import torch

from neurondev.fx.pins import DevicePin, find_pins
from neurondev.report.fixes.edits import Edit, FileEdits, dedented
from neurondev.report.fixes.rebuild import rebuilt
from neurondev.report.fixes.records import Fix, FixCheck
from neurondev.runs.program_records import ProgramFailure, ProgramRun
from neurondev.runs.run_records import place_of
from neurondev.runs.values import Comparison, compare_outputs
from neurondev.trace.copies import kept_global_state, traced_copies
from neurondev.trace.generators import reachable_generators
from neurondev.trace.inputs import on_host

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
            failures = _pin_failures(spelled, applied, files, originals, pins, new_pins)
            values, respell = _value_failures(spelled, applied, original.graphs, fixed.graphs, originals)
            # the dtype rule: the same values under another default dtype (torch.zeros follows it, new_zeros not)
            rule = {} if respell else _other_default_failures(spelled, applied, originals, original_fn, fixed_fn, call)
            outputs = _outputs_differ(original_fn, fixed_fn, args, kwargs)
            xla_failures, place = (
                _xla_failures(fixed, fixed_fn, call, spelled, applied, files, originals, target, original) if xla else ({}, None)
            )
    except Exception as error:  # the fixed code does not load, trace or run: no fix is verified, the error is kept
        message = str(error).strip().splitlines()[0][:300] if str(error).strip() else ""
        failed = everyone(FixCheck("fixed code raised", error=f"{type(error).__name__}: {message}"))
        return dataclasses.replace(failed, respell=_unspelled_dtypes(spelled, original.graphs))
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


_OTHER_DEFAULT = torch.float64


def _other_default_failures(
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


def _value_failures(
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


def _unspelled_dtypes(spelled: Sequence[tuple[FileEdits, Edit]], graphs: dict[int, torch.fx.GraphModule]) -> dict[int, dict[str, str]]:
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


def _pin_failures(
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


def _outputs_differ(fn: Callable[..., Any], fixed_fn: Callable[..., Any], args: tuple, kwargs: dict) -> Comparison | None:
    """None when the original and the fixed code give the same outputs on CPU (same inputs, same seed);
    else the comparison that says what differs. The one comparison every verdict uses, held to exact
    equality: a fix changes where values are made, never the values."""
    original, fixed = _eager(fn, args, kwargs), _eager(fixed_fn, args, kwargs)
    comparison = compare_outputs(fixed, original, rtol=0.0, atol=0.0)
    return comparison if comparison.status == "differ" else None


def _failed(failure: ProgramFailure | None) -> str:
    return "it made no graph" if failure is None else f"{failure.kind}: {failure.error}"


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
    original: Original,
) -> tuple[dict[int, FixCheck], str | None]:
    """The fixed function as a program on XLA (torch.compile, openxla): it must run where the original
    ran, and its trace there must make each fixed statement's ops with every value on the device."""
    from neurondev.devices.drivers import driver_for
    from neurondev.runs.program import ProgramSubject, run_program
    from neurondev.runs.traces import compare_captures

    everyone = lambda check: {id(e): check for _, e in spelled}  # noqa: E731
    driver = driver_for(target)
    place = place_of(driver.device())
    subject = ProgramSubject(fixed_fn, *call)
    backend, label = driver.program_backend(), driver.program_label
    run, native = run_program(subject, backend, driver=driver, label=label, keep_graphs=True, calls=2)  # call 2: what each call costs
    was = original.program.failure if original.program is not None else None
    if run.failure is not None and (was is None or (was.kind, was.message) != (run.failure.kind, run.failure.message)):
        written = None if was is None else f"{was.kind}: {was.message}"
        return everyone(FixCheck("fails on device", place=place, error=f"{run.failure.kind}: {run.failure.message}", was=written)), None
    assert native is not None
    if not native.graphs:
        return everyone(FixCheck("no program", place=place, error=_failed(run.failure))), None
    traces = compare_captures(fixed, native, device=driver.device())
    copies = {original_path: copy for copy, original_path in originals.items()}
    failures: dict[int, FixCheck] = {}
    for file, edit in spelled:
        path = copies.get(file.file, file.file)
        first, last = file.new_range(edit, applied[file.file])
        differs = [d for d in traces.differences if d.source is not None and d.source.file == path and first <= (d.line or 0) <= last]
        if differs:
            failures[id(edit)] = FixCheck(
                "ops differ", place=place, before=str(list(differs[0].cpu_ops)), after=str(list(differs[0].xla_ops))
            )
            continue
        host = _host_values_made(native.graphs, path, first, last, target)
        if host:
            failures[id(edit)] = FixCheck("host value", place=place, where=host)
            continue
        uploads = [u for u in run.uploads if u.source is not None and u.source.file == path and first <= (u.line or 0) <= last]
        if uploads:
            copied = sum(u.transfers_to_device for u in uploads)
            failures[id(edit)] = FixCheck("uploads", place=place, count=copied, bytes=sum(u.bytes for u in uploads))
    return failures, place


def _host_values_made(graphs: Sequence[torch.fx.GraphModule], path: str, first: int, last: int, target: torch.device) -> str:
    from neurondev.trace.source import source_of

    for gm in graphs:
        for node in gm.graph.nodes:
            source = source_of(node)
            if source is None or source.file != path or not first <= source.line <= last:
                continue
            value = node.meta.get("example_value")
            if on_host(value):  # traced on the device (never the CPU): a value on the host stayed there
                return f"{node.name} ({value.device.type})"
    return ""
