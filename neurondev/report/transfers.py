"""Every place a run copied data between the host and the device, per call: the rows of ``transfer_table()``."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

from neurondev.runs.program_records import ProgramRun, Programs
from neurondev.runs.run_records import RunRecord
from neurondev.trace.source import Located, SourceLine

__all__ = ["COLUMNS", "DIRECTIONS", "CopySite", "copy_sites"]

DIRECTIONS = ("to host", "to device")
COLUMNS = ("scenario", "direction", "calls", "bytes", "file", "line", "code", "module", "what")


@dataclasses.dataclass(frozen=True)
class CopySite(Located):
    """One line (or graph node) that copies between the host and the device on every call: the scenario it was
    seen in, the direction (``DIRECTIONS``), copies per call, bytes per call (None where the device does not
    count them: torch_xla's metrics), the node or op that copies, the module, and the line (None where the
    device's counts have no line: an XLA program's transfers)."""

    scenario: str
    direction: str
    calls: int
    bytes: int | None
    what: str
    module: str = ""
    source: SourceLine | None = None

    @property
    def rule(self) -> str:
        """ND202 (a copy to the host) or ND203 (an upload)."""
        return "ND202" if self.direction == "to host" else "ND203"

    def to_dict(self) -> dict[str, object]:
        return {"rule": self.rule, **self.row(), "where": self.where}

    def row(self) -> dict[str, object]:
        return {
            "scenario": self.scenario,
            "direction": self.direction,
            "calls": self.calls,
            "bytes": self.bytes,
            "file": self.file,
            "line": self.line,
            "code": self.code,
            "module": self.module,
            "what": self.what,
        }


def copy_sites(program: Programs | None, graphs: Iterable[tuple[RunRecord | None, RunRecord | None]]) -> tuple[CopySite, ...]:
    """The copy sites of the program's two runs, then of each graph traced on CPU, run before and after the pass."""
    return (*_program_sites(program), *_graph_sites(graphs))


def _program_sites(program: Programs | None) -> Iterator[CopySite]:
    if program is None:
        return
    for scenario, run in (("your program as written", program.as_written), ("your program, neurondev backend", program.rewritten)):
        yield from _program_run(scenario, run)


def _program_run(scenario: str, run: ProgramRun) -> Iterator[CopySite]:
    if run.failure is not None or not run.calls:
        return
    call = run.calls[-1]
    if run.stack == "native":
        for copy in call.host_copies:
            if copy.transfers_to_host:
                yield CopySite(scenario, "to host", copy.transfers_to_host, copy.bytes, copy.function, copy.module, copy.source)
        for upload in call.uploads:
            yield CopySite(scenario, "to device", upload.transfers_to_device, upload.bytes, upload.function, upload.module, upload.source)
        return
    if call.transfers_to_host:  # torch_xla counts the process's transfers, with no line
        yield CopySite(scenario, "to host", call.transfers_to_host, None, "XLA program")
    if call.transfers_to_device:
        yield CopySite(scenario, "to device", call.transfers_to_device, None, "XLA program")


def _graph_sites(graphs: Iterable[tuple[RunRecord | None, RunRecord | None]]) -> Iterator[CopySite]:
    for before, after in graphs:
        for scenario, record in (("graph traced on CPU, before the pass", before), ("graph traced on CPU, after the pass", after)):
            if record is not None and record.error is None:
                yield from _graph_run(scenario, record)


def _graph_run(scenario: str, record: RunRecord) -> Iterator[CopySite]:
    native = record.stack == "native"
    for copy in record.host_copies:
        if copy.transfers_to_host:
            yield CopySite(scenario, "to host", copy.transfers_to_host, copy.bytes, copy.node, copy.module, copy.source)
    for brk in (*record.graph_breaks, *record.output_transfers):
        if brk.transfers_to_host:
            yield CopySite(scenario, "to host", brk.transfers_to_host, None, brk.node, "", brk.source)
    for upload in record.uploads:
        bytes_ = upload.bytes if native else None
        yield CopySite(scenario, "to device", upload.transfers_to_device, bytes_, upload.node, upload.module, upload.source)
