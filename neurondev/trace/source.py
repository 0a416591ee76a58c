"""Where a graph node came from in the user's code, and whether its device was frozen or literal."""

from __future__ import annotations

import dataclasses
import linecache
import re
from pathlib import Path

import torch.fx

__all__ = ["SourceLine", "judge_kind", "location_fields", "short_location", "source_of", "statement_at"]

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>[^\n]+)\n(?P<code>[^\n]*)')
_KWARG_DEVICE = re.compile(r"\bdevice\s*=\s*(?P<expr>[^,)]+)")
_TO_DEVICE = re.compile(r"\.to\(\s*(?P<expr>[^,)]+)")
_DEVICE_CALL = re.compile(r"torch\.device\(\s*(?:type\s*=\s*)?(?P<expr>[^,)]*)")  # its first argument
_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)
_USER_CODE_IN_PACKAGE = ("gallery/catalogue.py", "gallery/patterns.py")  # the gallery's functions are user code
_LITERAL = re.compile(r"""^(['"][a-z]+(:\d+)?['"]|\d+)$""")
_MAX_STATEMENT_LINES = 20
_MAX_LOOKBACK_LINES = 200


@dataclasses.dataclass(frozen=True)
class SourceLine:
    """The innermost user frame of a node's stack trace; ``code`` is the whole statement."""

    file: str
    line: int
    function: str
    code: str


def source_of(node: torch.fx.Node) -> SourceLine | None:
    """The user source line a node was traced from (from ``node.meta['stack_trace']``), or None.

    Inputs (placeholders) and the graph's output have no line of their own; frames inside
    neurondev (the entry function a capture compiles) are never the user's line.
    """
    trace = node.meta.get("stack_trace")
    if not trace or node.op in ("placeholder", "output", "get_attr"):
        return None
    frames = [frame for frame in _FRAME.finditer(trace) if not _in_neurondev(frame["file"])]
    if not frames:
        return None
    last = frames[-1]
    file, line = last["file"], int(last["line"])
    code = statement_at(file, line) or last["code"].strip()
    return SourceLine(file=file, line=line, function=last["function"].strip(), code=code)


def _in_neurondev(file: str) -> bool:
    """Frames of neurondev's own machinery (the capture's entry function), not of the gallery."""
    return file.startswith(_PACKAGE_DIR) and not file.endswith(_USER_CODE_IN_PACKAGE)


_NOTEBOOK_CELL = re.compile(r"ipykernel_\d+[/\\]\d+\.py$")


def short_location(file: object, line: object, *, missing: str = "no source line") -> str:
    """``model.py:12`` for a file, ``In[3]:4`` for a notebook cell (as IPython's tracebacks name it)."""
    if not file:
        return missing
    text = str(file)
    if _NOTEBOOK_CELL.search(text):
        cell = _cell_number(text)
        return f"In[{cell}]:{line}" if cell is not None else f"notebook cell:{line}"
    return f"{Path(text).name}:{line}"


def _cell_number(file: str) -> int | None:
    """The execution count IPython gave the cell compiled to ``file`` (None outside IPython)."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    names = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
    return names.get(file)


def location_fields(source: SourceLine | None) -> dict[str, object]:
    """``file``, ``line`` and ``code`` of a source line (each None when unknown), for record fields."""
    if source is None:
        return {"file": None, "line": None, "code": None}
    return {"file": source.file, "line": source.line, "code": source.code}


def statement_at(file: str, line: int) -> str | None:
    """The statement starting at ``file:line``, joined onto one line when it spans several."""
    parts = []
    for number in range(line, line + _MAX_STATEMENT_LINES):
        text = linecache.getline(file, number)
        if not text:
            break
        parts.append(text.strip())
        joined = " ".join(parts)
        if _balanced(joined):
            return joined
    return " ".join(parts) or None


def _balanced(text: str) -> bool:
    return sum(text.count(c) for c in "([{") <= sum(text.count(c) for c in ")]}")


def judge_kind(source: SourceLine | None, location: str, *, device_call: bool = False) -> str:
    """'frozen' (from a tensor's .device), 'literal' (written out), 'variable' or 'unknown'.

    ``device_call``: the node is a ``torch.device(...)`` call, whose own argument is judged.
    """
    if location == "method":
        return "literal"
    if source is None:
        return "unknown"
    patterns = (_DEVICE_CALL,) if device_call else (_KWARG_DEVICE, _TO_DEVICE) if location == "kwarg" else (_TO_DEVICE,)
    match = next((m for m in (p.search(source.code) for p in patterns) if m is not None), None)
    if match is None:
        return "frozen" if ".device" in source.code else "unknown"
    return _kind_of_expression(match["expr"].strip(), source)


def _kind_of_expression(expression: str, source: SourceLine, depth: int = 3) -> str:
    call = _DEVICE_CALL.match(expression)
    if call:  # torch.device(...): judged by what it is built from
        inner = call["expr"].strip()
        return _kind_of_expression(inner, source, depth) if inner else "literal"
    if _LITERAL.match(expression):
        return "literal"
    if ".device" in expression:
        return "frozen"
    if expression.isidentifier() and depth > 0:
        assigned = _assignment_before(expression, source)
        if assigned is not None:
            return _kind_of_expression(assigned, source, depth - 1)
    return "variable"


def _assignment_before(name: str, source: SourceLine) -> str | None:
    """The right-hand side of the nearest ``name = ...`` above the line, within its function."""
    assignment = re.compile(rf"^\s*{re.escape(name)}\s*(?::[^=]+)?=\s*(?P<value>.+)$")
    for number in range(source.line - 1, max(source.line - _MAX_LOOKBACK_LINES, 0), -1):
        text = linecache.getline(source.file, number)
        if re.match(r"\s*(async\s+)?def\s", text):
            return None
        match = assignment.match(text)
        if match:
            return match["value"].strip()
    return None
