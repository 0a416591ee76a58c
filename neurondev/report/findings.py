"""Findings: what check reports (``Finding``), and every record a card shows that is a finding, with its rule."""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from neurondev.loops.verdict import not_steady
from neurondev.rulebook import rule_named
from neurondev.trace.source import Located, SourceLine

if TYPE_CHECKING:
    from neurondev.loops.record import WatchRecord
    from neurondev.report.model import ExplanationData

__all__ = ["FINDING_KINDS", "Finding", "explanation_findings", "finding_entry", "pin_costs", "watch_findings"]


FINDING_KINDS = ("pin", "host value", "cpu kernel", "program", "device-specialised", "fallback", "device")


@dataclasses.dataclass(frozen=True)
class Finding(Located):
    """One thing check reports, ``rule`` its code (``ND101``): ``kind`` (``FINDING_KINDS``), the node, function and
    line, and ``found``, the record it was found in (a DevicePin, HostValue, CpuKernel, LineDifference, ProgramFailure,
    Fallback, or a device run's record), with the facts its words need: ``place`` (the device checked), for your
    program's failure its ``backend``, ``as_written`` and the ``host`` value at its line; for a program-level fallback
    finding (``found`` None) ``why`` ('not run', with ``skip``; 'unseen', with the ``compiler`` whose graphs hide
    their ops). ``render.sentences`` says what it is and what to write instead."""

    kind: str
    node: str
    function: str
    source: SourceLine | None
    found: Any
    rule: str | None = None
    place: str = "XLA"
    backend: str | None = None
    as_written: bool = True
    host: Any = None
    why: str | None = None
    skip: Any = None
    compiler: str | None = None

    def allowed_by(self, rules: Iterable[str]) -> bool:
        """Allowed by a node name, a file:line (file name or path), or a glob over those, the function or code; an
        op's name allows each of its overloads (``aten::addmm`` allows the ``aten::addmm.out`` that fell back)."""
        names = {name for name in (self.node, self.function, self.where, self.code) if name}  # an empty entry allows nothing
        names |= {name.split(".")[0] for name in (self.node, self.function) if name.startswith("aten::")}
        if self.source is not None:
            names.add(f"{self.source.file}:{self.source.line}")
        return any(rule in names or any(fnmatch.fnmatch(name, rule) for name in names) for rule in rules)

    def to_dict(self) -> dict[str, Any]:
        """The finding's facts: its rule, kind, node, function, line, and the facts of what it was found in."""
        source = self.source.to_dict() if self.source else {"file": None, "line": None, "code": None, "where": self.where}
        found = self.found.to_dict() if hasattr(self.found, "to_dict") else self.found.row() if hasattr(self.found, "row") else {}
        program = {"backend": self.backend, "as_written": self.as_written} if self.kind == "program" else {}
        closed = {"why": self.why, "skip": None if self.skip is None else self.skip.to_dict(), "compiler": self.compiler}
        return {
            "rule": self.rule,
            "kind": self.kind,
            "node": self.node,
            "function": self.function,
            **source,
            "place": self.place,
            **program,
            **(closed if self.why else {}),
            "found": {key: value for key, value in found.items() if key not in ("rule", "file", "line", "code", "where")},
        }


def pin_costs(pin: Any) -> bool:
    """A pin costs something on the device: an op that uses its tensor, or an assertion, which fails there."""
    return (not pin.unused or pin.kind == "assertion") and not pin.output_transfer


def explanation_findings(explanation: ExplanationData) -> list[Any]:
    """Every record of an explanation that is a finding (it has a ``rule``), in the card's order: the CPU trace's
    (pins that cost something, host values, CPU kernels, device-specialised lines, dynamo's breaks), then the
    device's (graph breaks, run errors, copies, syncs, fallbacks, values that differ, the first difference),
    then the program's failures."""
    found: list[Any] = [pin for pin in explanation.pins if pin_costs(pin)]
    found += [*explanation.host_values, *explanation.cpu_kernels, *explanation.device_specialised]
    found += list(explanation.capture.dynamo_breaks)
    for section in explanation.sections:
        for record in (section.before, section.after):
            if record is not None:
                found += [*record.graph_breaks, *([record.error] if record.error is not None else [])]
                found += [copy for copy in record.host_copies if copy.syncs and not copy.transfers_to_host]
        found += [v for v in (section.rewrite_verdict, section.cpu_verdict) if v is not None and v.rule is not None]
    found += list(explanation.transfer_sites())
    found += [fallback for _, fallback in explanation.fallbacks]
    if explanation.first_difference is not None:
        found.append(explanation.first_difference)
    programs = explanation.program
    if programs is not None:
        found += [run.failure for run in (programs.as_written, programs.rewritten) if run.failure is not None]
        found += _program_syncs(programs)
        if programs.rewritten.unseen:
            unseen = programs.rewritten.unseen
            found.append(Finding("fallback", "program", "", None, None, "ND206", explanation.place, why="unseen", compiler=unseen))
    return [record for record in found if record.rule is not None]


def _program_syncs(programs: Any) -> list[Any]:
    """Where your program (as written, then rewritten where it adds a line) waited for the device on the host without
    a copy (``.item()``, ``bool(x)``, a size read from the data): ND204. Its copies are transfer sites already."""
    found: list[Any] = []
    lines: set[tuple[Any, Any]] = set()
    for run in (programs.as_written, programs.rewritten):
        for copy in run.host_copies:
            if copy.syncs and not copy.transfers_to_host and (copy.file, copy.line) not in lines:
                lines.add((copy.file, copy.line))
                found.append(copy)
    return found


def watch_findings(record: WatchRecord) -> list[Any]:
    """Every compile of a watch with a cause that is a finding (recompiles, the limit), every XLA program a step
    compiled after the loop's first two steps, with its trigger, and the verdict when the loop never settled (ND411)."""
    found: list[Any] = [compile_.cause for compile_ in record.compiles if compile_.cause.rule is not None]
    found += [program for step in record.steps[2:] for program in step.programs]
    never = not_steady(record.steady, record.judged_end, "call" if record.watched_function else "step")
    return found if never is None else [*found, never]


def finding_entry(record: Any, text: str) -> dict[str, Any]:
    """One finding as JSON data: where it is (``where``, ``file``, ``line``, ``code``: None where it has no line), the
    record's facts, its rule's code, name, scenario and page, and the card's ``text``."""
    rule = rule_named(record.rule)
    facts = record.to_dict() if hasattr(record, "to_dict") else {**record.row(), "where": record.where}  # a pin: its table row
    if "scenario" in facts:  # a copy site's run (your program as written, the graph traced on CPU), not the rule's
        facts = {("seen_in" if key == "scenario" else key): value for key, value in facts.items()}
    overwritten = sorted(set(facts) & {"name", "scenario", "url"})  # (a record's own "text" is its sentence: the card's is it)
    assert not overwritten, f"a record's own facts named as the finding's words: {overwritten}"
    located = {"where": None, "file": None, "line": None, "code": None}  # every finding says where, None without a line
    return {**located, **facts, "rule": rule.code, "name": rule.name, "scenario": rule.scenario, "url": rule.url, "text": text}
