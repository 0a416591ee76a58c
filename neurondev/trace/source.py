"""Where a graph node came from in the user's code (one SourceLine), and whether its device was frozen or literal."""

from __future__ import annotations

import contextlib
import dataclasses
import linecache
import os
import re
import sysconfig
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch.fx

from neurondev._compat.ipython import ipython_cell_number

__all__ = [
    "Located",
    "SourceLine",
    "display_name",
    "in_neurondev",
    "is_program_file",
    "is_user_file",
    "lines_of",
    "judge_kind",
    "short_location",
    "source_line",
    "source_of",
    "statement_at",
    "user_line_of_error",
]

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>[^\n]+)\n(?P<code>[^\n]*)')
_KWARG_DEVICE = re.compile(r"\bdevice\s*=\s*(?P<expr>[^,)]+)")
_TO_DEVICE = re.compile(r"\.to\(\s*(?P<expr>[^,)]+)")
_AUTOCAST = re.compile(r"autocast\(\s*(?:device_type\s*=\s*)?(?P<expr>[^,)]+)")  # its device type
_DEVICE_CALL = re.compile(r"torch\.device\(\s*(?:type\s*=\s*)?(?P<expr>[^,)]*)")  # its first argument
_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)
_USER_CODE_IN_PACKAGE = ("gallery/catalogue.py", "gallery/patterns.py", "gallery/ragged_ranks.py")  # the gallery is user code
_LITERAL = re.compile(r"""^(['"][a-z]+(:\d+)?['"]|\d+)$""")
_STDLIB = sysconfig.get_paths()["stdlib"]
_NOTEBOOK_CELL = re.compile(r"ipykernel_\d+[/\\]\d+\.py$")
_MAX_STATEMENT_LINES = 20
_MAX_LOOKBACK_LINES = 200


@dataclasses.dataclass(frozen=True)
class SourceLine:
    """A line of the user's code: its file, line number, function and whole statement.

    ``cell`` is the notebook cell's execution count when the file is a cell IPython compiled
    (``where`` then reads ``In[3]:4``, as IPython's tracebacks name it), else None.
    """

    file: str
    line: int
    function: str = ""
    code: str = ""
    cell: int | None = None
    caller: str | None = None  # a helper's line: the program's line that called its function (``train.py:20``)

    @property
    def where(self) -> str:
        """``model.py:12`` for a file, ``In[3]:4`` for a notebook cell."""
        return short_location(self.file, self.line, cell=self.cell)

    @property
    def in_notebook_cell(self) -> bool:
        return bool(_NOTEBOOK_CELL.search(self.file))

    @property
    def in_pseudo_file(self) -> bool:
        """Code that lives in no file on disk: a notebook cell, an IPython terminal's ``<ipython-input-...>``, ``<string>``."""
        return self.in_notebook_cell or self.file.startswith("<")

    def to_dict(self) -> dict[str, Any]:
        called = {"called_from": self.caller} if self.caller else {}
        return {"file": self.file, "line": self.line, "code": self.code, "where": self.where, **called}

    @property
    def where_called(self) -> str:
        """``utils.py:5 (called from train.py:20)`` for a helper's line, else ``where``."""
        return f"{self.where} (called from {self.caller})" if self.caller else self.where


class Located:
    """``file``, ``line``, ``code`` and ``where`` of a record's ``source`` (a SourceLine, or None when the
    node has no line of the user's); ``MISSING`` is what ``where`` says then."""

    source: SourceLine | None
    MISSING = "no source line"

    @property
    def file(self) -> str | None:
        return self.source.file if self.source else None

    @property
    def line(self) -> int | None:
        return self.source.line if self.source else None

    @property
    def code(self) -> str | None:
        return self.source.code if self.source else None

    @property
    def where(self) -> str:
        return self.source.where if self.source else self.MISSING

    def labelled(self, name: str) -> str:
        """``name (model.py:12)``, or the name alone without a source line."""
        return f"{name} ({self.source.where})" if self.source else name

    def source_dict(self) -> dict[str, Any]:
        """The source as plain data, every key present (None without a line)."""
        return self.source.to_dict() if self.source else {"file": None, "line": None, "code": None, "where": None}


def display_name(fn: Any) -> str:
    """A name a user recognises for a callable: the module's class, the function's qualified name, where a lambda is."""
    import torch.nn

    if isinstance(fn, torch.nn.Module):
        return type(fn).__name__
    name = getattr(fn, "__name__", None)
    code = getattr(fn, "__code__", None)
    if name == "<lambda>" and code is not None:
        return f"<lambda at {Path(code.co_filename).name}:{code.co_firstlineno}>"
    return getattr(fn, "__qualname__", None) or name or type(fn).__name__


def source_line(file: str, line: int, function: str = "", code: str | None = None) -> SourceLine:
    """A SourceLine for ``file:line``, the statement read from the file when ``code`` is not given."""
    statement = statement_at(file, line) or (code or "").strip()
    cell = ipython_cell_number(file) if _NOTEBOOK_CELL.search(file) else None
    return SourceLine(file, line, function.strip(), statement, cell)


def source_of(node: torch.fx.Node) -> SourceLine | None:
    """The user source line a node was traced from (from ``node.meta['stack_trace']``), or None.

    Inputs (placeholders) and the graph's output have no line of their own; frames inside
    neurondev (the entry function a capture compiles) are never the user's line, and torch's own
    frames (``nn.Linear.forward`` in an exported program, a ``torch.device`` context's
    ``__torch_function__``) only when the trace has no frame of the program's.
    """
    trace = node.meta.get("stack_trace")
    if not trace or node.op in ("placeholder", "output", "get_attr"):
        return None
    return _line_in(trace)


def _line_in(trace: str) -> SourceLine | None:
    frames = [frame for frame in _FRAME.finditer(trace) if not in_neurondev(frame["file"])]
    if not frames:
        return None
    last = next((frame for frame in reversed(frames) if _is_users(frame["file"])), frames[-1])
    generated = _generated_trace(last["file"], int(last["line"]))
    if generated is not None:
        return _line_in(generated)
    return source_line(last["file"], int(last["line"]), last["function"], last["code"])


_GENERATED: dict[str, str] = {}  # while a GraphModule's own code runs as the program: its node names -> their stack traces
_ASSIGNED = re.compile(r"^\s*(?P<name>\w+)\s*=")


@contextlib.contextmanager
def lines_of(gm: torch.fx.GraphModule) -> Iterator[None]:
    """While inside, a line of the code torch.fx generated for ``gm`` (or a copy of it: the same node names), which
    dynamo traces when the program is ``gm`` itself (an exported program's module), is read as the line its node
    was traced from."""
    saved = dict(_GENERATED)
    _GENERATED.update({node.name: node.meta["stack_trace"] for node in gm.graph.nodes if node.meta.get("stack_trace")})
    try:
        yield
    finally:
        _GENERATED.clear()
        _GENERATED.update(saved)


def _generated_trace(file: str, line: int) -> str | None:
    if not _GENERATED or not file.startswith("<eval_with_key>"):
        return None
    match = _ASSIGNED.match(linecache.getline(file, line))
    return _GENERATED.get(match["name"]) if match else None


def user_line_of_error(error: BaseException) -> SourceLine | None:
    """The innermost line of the user's code an error passed through: from dynamo's "from user
    code:" block, else the tracebacks of the error and its causes (torch, neurondev and the
    standard library left out)."""
    frames: list[tuple[str, int, str]] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        frames += [(m["file"], int(m["line"]), m["function"]) for m in _FRAME.finditer(str(current))]
        frames += [(f.filename, f.lineno or 0, f.name) for f in traceback.extract_tb(current.__traceback__)]
        current = current.__cause__ or current.__context__
    mine = [frame for frame in frames if _is_users(frame[0])]
    return source_line(*mine[-1]) if mine else None


def is_program_file(file: str) -> bool:
    """Code of the program: the user's files and the libraries they call (transformers), not torch,
    torch_xla, neurondev's machinery or the standard library."""
    return _is_users(file)


def _is_users(file: str) -> bool:
    if in_neurondev(file) or file.startswith("<frozen"):
        return False
    return not any(part in file for part in (f"{os.sep}torch{os.sep}", f"{os.sep}torch_xla{os.sep}", _STDLIB))


def is_user_file(file: str | None) -> bool:
    """The user's own code: a file outside site-packages, the standard library, torch and neurondev's
    machinery (the gallery's patterns are user code), or a notebook cell."""
    if not file:
        return False
    if _NOTEBOOK_CELL.search(file):
        return True
    return _is_users(file) and not any(part in file for part in ("site-packages", "dist-packages"))


def in_neurondev(file: str) -> bool:
    """Frames of neurondev's own machinery (the capture's entry function, a watch's wrappers), not of the gallery."""
    return file.startswith(_PACKAGE_DIR) and not file.replace("\\", "/").endswith(_USER_CODE_IN_PACKAGE)


def short_location(file: object, line: object, *, cell: int | None = None, missing: str = "no source line") -> str:
    """``model.py:12`` for a file, ``In[3]:4`` for a notebook cell (``notebook cell:4`` when its number is unknown)."""
    if not file:
        return missing
    text = str(file)
    if _NOTEBOOK_CELL.search(text):
        return f"In[{cell}]:{line}" if cell is not None else f"notebook cell:{line}"
    return f"{Path(text).name}:{line}"


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


def judge_kind(source: SourceLine | None, location: str, *, device_call: bool = False, autocast: bool = False) -> str:
    """'frozen' (from a tensor's .device), 'literal' (written out), 'variable' or 'unknown'.

    ``device_call``: the node is a ``torch.device(...)`` call, whose own argument is judged;
    ``autocast``: a device type entered by ``with torch.autocast(...)``, whose first argument is.
    """
    if location == "method":
        return "literal"
    if source is None:
        return "unknown"
    patterns = _patterns(location, device_call=device_call, autocast=autocast)
    match = next((m for m in (p.search(source.code) for p in patterns) if m is not None), None)
    if match is None:
        return "frozen" if ".device" in source.code else "unknown"
    return _kind_of_expression(match["expr"].strip(), source)


def _patterns(location: str, *, device_call: bool, autocast: bool) -> tuple[re.Pattern[str], ...]:
    if device_call:
        return (_DEVICE_CALL,)
    if autocast:
        return (_AUTOCAST,)
    return (_KWARG_DEVICE, _TO_DEVICE) if location == "kwarg" else (_TO_DEVICE,)


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
