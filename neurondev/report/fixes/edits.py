"""Proposed edits: the user's pinned statements grouped per file, spelled, and joined into one fixed text per file."""

from __future__ import annotations

import dataclasses
import linecache
import textwrap
from collections.abc import Iterable, Mapping, Sequence

import torch
import torch.fx

from neurondev.fx.pins import DevicePin
from neurondev.fx.subgraphs import node_named
from neurondev.report.fixes.spelling import Spelling, spell
from neurondev.report.fixes.statements import statement_lines
from neurondev.trace.source import SourceLine, is_user_file

__all__ = ["Edit", "FileEdits", "dedented", "propose"]


@dataclasses.dataclass(frozen=True)
class Edit:
    """One statement's proposal: its pins, its spelling, and the statement before and after."""

    source: SourceLine
    pins: tuple[DevicePin, ...]
    spelling: Spelling
    before: str
    after: str | None
    dtypes: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def delta(self) -> int:
        """Lines the fix adds (negative: removes)."""
        return 0 if self.after is None else len(self.after.splitlines()) - len(self.before.splitlines())


@dataclasses.dataclass(frozen=True)
class FileEdits:
    """A file (or notebook cell) of the user's, its text, and the edits proposed in it, in line order."""

    file: str
    text: str
    edits: tuple[Edit, ...]

    @property
    def spelled(self) -> tuple[Edit, ...]:
        return tuple(edit for edit in self.edits if edit.after is not None)

    def fixed_text(self, edits: Iterable[Edit] | None = None) -> str:
        """The text with ``edits`` (default: every spelled one) applied."""
        chosen = sorted(self.spelled if edits is None else edits, key=lambda e: e.spelling.first, reverse=True)
        lines = self.text.splitlines(keepends=True)
        for edit in chosen:
            assert edit.after is not None
            lines[edit.spelling.first - 1 : edit.spelling.last] = edit.after.splitlines(keepends=True)
        return "".join(lines)

    def new_range(self, edit: Edit, applied: Iterable[Edit]) -> tuple[int, int]:
        """The lines ``edit`` occupies in the text with ``applied`` (which includes it) applied."""
        shift = sum(other.delta for other in applied if other.spelling.first < edit.spelling.first)
        return edit.spelling.first + shift, edit.spelling.last + shift + edit.delta

    def respelled(self, dtypes: dict[int, dict[str, str]]) -> FileEdits:
        """The same file with the edits named in ``dtypes`` (by id) spelled again with those dtypes
        (pin node -> ``torch.float32``) given where ``new_*`` would take the tensor's."""
        edits = tuple(
            _edit(self.text, list(edit.pins), {**edit.dtypes, **dtypes[id(edit)]}) if id(edit) in dtypes else edit for edit in self.edits
        )
        return dataclasses.replace(self, edits=edits)

    def original_line(self, line: int, applied: Sequence[Edit]) -> int:
        """The line of the original text that ``line`` of the fixed text comes from (a fixed statement's lines: its first)."""
        for edit in sorted(applied, key=lambda e: e.spelling.first):
            first, last = self.new_range(edit, applied)
            if line < first:
                break
            if line <= last:
                return edit.spelling.first
        shift = sum(edit.delta for edit in applied if self.new_range(edit, applied)[1] < line)
        return line - shift


def propose(pins: Iterable[DevicePin], graphs: Mapping[int, torch.fx.GraphModule] | None = None) -> tuple[FileEdits, ...]:
    """Edits for every pin whose statement is in the user's own code (not site-packages or the
    standard library); results handed back on purpose (output transfers) are left alone. ``graphs``
    (the traced graphs, by index) give the dtype each pin's value had: a ``new_*`` spelling says it,
    since the method would take the dtype of the tensor it is called on, on every input."""
    by_file: dict[str, list[DevicePin]] = {}
    for pin in pins:
        if pin.source is not None and is_user_file(pin.file) and not pin.output_transfer and pin.kind != "assertion":
            by_file.setdefault(pin.source.file, []).append(pin)
    dtypes = _dtypes(by_file, graphs or {})
    return tuple(edits for edits in (_file_edits(file, found, dtypes) for file, found in by_file.items()) if edits is not None)


def _dtypes(by_file: dict[str, list[DevicePin]], graphs: Mapping[int, torch.fx.GraphModule]) -> dict[str, str]:
    """{pin node: the dtype of the value it made, as code} for the pins whose traced value is known."""
    dtypes = {}
    for pins in by_file.values():
        for pin in pins:
            node = node_named(graphs[pin.graph], pin.node) if pin.graph in graphs else None
            value = node.meta.get("example_value") if node is not None else None
            if isinstance(value, torch.Tensor):
                dtypes[pin.node] = str(value.dtype)
    return dtypes


def _file_edits(file: str, pins: list[DevicePin], dtypes: dict[str, str]) -> FileEdits | None:
    text = "".join(linecache.getlines(file))
    if not text:
        return None
    by_statement: dict[tuple[int, int], list[DevicePin]] = {}
    for pin in pins:
        assert pin.line is not None
        by_statement.setdefault(statement_lines(text, pin.line), []).append(pin)
    edits = [_edit(text, group, {pin.node: dtypes[pin.node] for pin in group if pin.node in dtypes}) for group in by_statement.values()]
    return FileEdits(file, text, tuple(sorted(edits, key=lambda e: e.spelling.first)))


def _edit(text: str, pins: list[DevicePin], dtypes: dict[str, str] | None = None) -> Edit:
    first_pin = min(pins, key=lambda pin: pin.line or 0)
    assert first_pin.source is not None and first_pin.line is not None
    spelling = spell(text, first_pin.line, pins, dtypes)
    lines = text.splitlines(keepends=True)
    before = "".join(lines[spelling.first - 1 : spelling.last])
    after = None
    if spelling.text is not None:
        delta = len(spelling.text.splitlines(keepends=True)) - len(lines)
        after = "".join(spelling.text.splitlines(keepends=True)[spelling.first - 1 : spelling.last + delta])
    return Edit(first_pin.source, tuple(pins), spelling, before, after, dict(dtypes or {}))


def dedented(statement: str) -> str:
    """A statement as cut from its file (its lines, with their indentation), as a Fix shows it."""
    return textwrap.dedent(statement).rstrip("\n")
