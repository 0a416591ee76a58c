"""What the fixed function must do as a program on the device (torch.compile there): run where the original ran, its
fixed statements traced into the same ops as on CPU, no value they make left on the host, no copy of host data to the
device on every call."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from neurondev.report.fixes.edits import Edit, FileEdits
from neurondev.report.fixes.records import FixCheck
from neurondev.runs.program_records import ProgramFailure, ProgramRun
from neurondev.runs.run_records import place_of
from neurondev.trace.inputs import on_host

__all__ = ["device_failures"]


def _failed(failure: ProgramFailure | None) -> str:
    return "it made no graph" if failure is None else f"{failure.kind}: {failure.error}"


def device_failures(
    fixed: Any,
    fixed_fn: Callable[..., Any],
    call: tuple[tuple, dict],
    spelled: Sequence[tuple[FileEdits, Edit]],
    applied: dict[str, list[Edit]],
    files: dict[str, FileEdits],
    originals: dict[str, str],
    target: torch.device,
    original: ProgramRun | None,
) -> tuple[dict[int, FixCheck], str | None]:
    """The fixed function as a program on the device (torch.compile: openxla on XLA): it must run where the original
    (``original``, its run as written) ran, and its trace there must make each fixed statement's ops with every value
    on the device."""
    from neurondev.devices.drivers import driver_for
    from neurondev.runs.program import ProgramSubject, run_program
    from neurondev.runs.traces import compare_captures

    everyone = lambda check: {id(e): check for _, e in spelled}  # noqa: E731
    driver = driver_for(target)
    place = place_of(driver.device())
    subject = ProgramSubject(fixed_fn, *call)
    backend, label = driver.program_backend(), driver.program_label
    run, native = run_program(subject, backend, driver=driver, label=label, keep_graphs=True, calls=2)  # call 2: what each call costs
    was = original.failure if original is not None else None
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
