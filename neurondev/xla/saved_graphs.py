"""torch_xla's own dump of every graph it syncs (``XLA_SAVE_TENSORS_FILE``, in HLO), read back: what changed in a new program.

With ``XLA_SAVE_TENSORS_FMT=hlo`` and ``XLA_HLO_DEBUG=1`` torch_xla 2.9 (``csrc/debug_util.cpp``) appends, at each
sync, the frames that triggered it, the graph as HLO (each instruction with the Python file and line that made it),
and the graph's hash. Two programs from the same sync whose HLO differs only in a constant's value were made by a
Python number the program bakes in (``torch.arange(cur, cur + 1)``: a new program each step); two that differ only
in sizes were made by a tensor whose size changes (``torch.cat`` onto a growing sequence). Both are read at the
instruction's own line. The dump is costly (every sync lowered to text): ``neurondev watch`` turns it on only in a
second run, of a few steps, that names the causes of a loop XLA keeps compiling.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

__all__ = ["ENVIRONMENT", "Change", "SavedGraph", "changes", "parse"]

ENVIRONMENT = {"XLA_SAVE_TENSORS_FMT": "hlo", "XLA_HLO_DEBUG": "1", "XLA_IR_DEBUG": "1"}  # and XLA_SAVE_TENSORS_FILE

_BLOCK = re.compile(
    r"^\[ScheduleSyncTensorsGraph\]\nTensorsGraphInfo:\n(?P<frames>.*?)\n\n.*?^## BEGIN_GRAPH\n(?P<hlo>.*?)^Graph Hash: (?P<hash>\S+)",
    re.M | re.S,
)
_FRAME = re.compile(r"^\s*(?P<function>\S.*?) \((?P<file>.+):(?P<line>\d+)\)\s*$")
_SOURCE = re.compile(r'op_type="(?P<op>[^"]*)".*?source_file="(?P<file>[^"]*)" source_line=(?P<line>\d+)')
_CONSTANT = re.compile(r"constant\((?P<value>[^()]*)\)")
_SHAPE = re.compile(r"\[[\d,]*\]")
_NUMBERED = re.compile(r"(%[\w-]+)\.\d+")


@dataclasses.dataclass(frozen=True)
class SavedGraph:
    """One synced graph as torch_xla dumped it: the frames that triggered the sync (innermost first: file, line,
    function), its HLO text and its hash."""

    frames: tuple[tuple[str, int, str], ...]
    hlo: str
    graph_hash: str


@dataclasses.dataclass(frozen=True)
class Change:
    """What made new programs at one line: ``kind`` 'number' (a constant's value: a Python number the program bakes
    in) or 'size' (an instruction's shape), the instruction's ``op`` (torch_xla's name: ``prim__Constant``,
    ``aten__cat``), and its ``values`` program after program."""

    kind: str
    file: str
    line: int
    op: str
    values: tuple[str, ...]


def parse(text: str) -> list[SavedGraph]:
    """Every graph in the dump, in order."""
    graphs = []
    for match in _BLOCK.finditer(text):
        frames = tuple(
            (m["file"], int(m["line"]), m["function"]) for m in (_FRAME.match(line) for line in match["frames"].splitlines()) if m
        )
        graphs.append(SavedGraph(frames, match["hlo"], match["hash"]))
    return graphs


def changes(graphs: Sequence[SavedGraph]) -> list[Change]:
    """What changed from each new program (a hash not seen before) to the one before it from the same sync (the same
    frames): the constants whose values alone differ, or else the instructions whose sizes alone differ; one Change a
    line, with its values in order, most programs first."""
    seen: set[str] = set()
    last: dict[tuple[tuple[str, int], ...], list[str]] = {}
    found: dict[tuple[str, str, int, str], dict[str, None]] = {}
    for graph in graphs:
        if graph.graph_hash in seen:
            continue
        seen.add(graph.graph_hash)
        lines = _instructions(graph.hlo)
        key = tuple((file, line) for file, line, _ in graph.frames if "torch_xla/" not in file.replace("\\", "/"))
        before = last.get(key)
        last[key] = lines
        if before is not None and len(before) == len(lines):
            for kind, file, line, op, old, new in _differences(before, lines):
                found.setdefault((kind, file, line, op), {}).update(dict.fromkeys((old, new)))  # two syncs can share a value
    ordered = sorted(found.items(), key=lambda item: -len(item[1]))
    return [Change(kind, file, line, op, tuple(values)) for (kind, file, line, op), values in ordered]


def _instructions(hlo: str) -> list[str]:
    """The HLO's instructions that carry a source line, their numbering dropped (it shifts between programs)."""
    return [_NUMBERED.sub(r"\1", line.strip()) for line in hlo.splitlines() if "source_line=" in line]


def _differences(before: list[str], after: list[str]) -> list[tuple[str, str, int, str, str, str]]:
    """(kind, file, line, op, old, new) for each instruction that differs: in a constant's value alone ('number'), or
    in its shapes alone ('size', said once a line); nothing when the programs differ otherwise (another graph)."""
    numbers, sizes = [], []
    for old, new in zip(before, after):
        if old == new:
            continue
        source = _SOURCE.search(new)
        if source is None:
            return []
        where = (source["file"], int(source["line"]), source["op"])
        if _CONSTANT.sub("constant()", old) == _CONSTANT.sub("constant()", new):
            numbers.append(("number", *where, _value(old), _value(new)))
        elif _SHAPE.sub("[]", old) == _SHAPE.sub("[]", new):
            sizes.append(("size", *where, _shape(old), _shape(new)))
        else:
            return []
    return numbers + _first_per_line(sizes)


def _first_per_line(sizes: list[tuple[str, str, int, str, str, str]]) -> list[tuple[str, str, int, str, str, str]]:
    """A size change said once a line: its first instruction (the op that grew; the rest follow from it)."""
    lines: dict[tuple[str, int], tuple[str, str, int, str, str, str]] = {}
    for change in sizes:
        lines.setdefault((change[1], change[2]), change)
    return list(lines.values())


def _value(instruction: str) -> str:
    match = _CONSTANT.search(instruction)
    return match["value"].strip("{} ") if match else ""


def _shape(instruction: str) -> str:
    match = _SHAPE.search(instruction.split("=", 1)[1] if "=" in instruction else instruction)
    return match.group(0) if match else ""
