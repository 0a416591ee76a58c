"""The statements of a file of the user's code, read once with ``ast``: the lines of each simple statement,
function and compound header (``if``/``while``/``with``/``for``, whose header lines are fixable too), and the
single-name assignments above a line; a header made parseable alone, and put back as written."""

from __future__ import annotations

import ast
import dataclasses
import functools
from typing import Any

__all__ = [
    "BLOCK",
    "Parsed",
    "as_written_header",
    "assignments_above",
    "header_at",
    "parse",
    "parseable_header",
    "statement_at",
    "statement_lines",
]


@dataclasses.dataclass(frozen=True)
class Parsed:
    """A file read once with ``ast`` (fast): the lines of every simple statement and function, and the
    single-name assignments (line, name, the value's source). libcst then parses one statement at a time."""

    lines: tuple[str, ...]
    statements: tuple[tuple[int, int], ...]
    functions: tuple[tuple[int, int], ...]
    assignments: tuple[tuple[int, str, str], ...]
    headers: tuple[tuple[int, int], ...] = ()


BLOCK = "if True:\n"
_HEADED = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)  # their header lines are fixable too
_PASS = "    pass\n"
_COMPOUND = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
)


@functools.lru_cache(maxsize=16)
def parse(source: str) -> Parsed | str:
    """The file's statements, or why it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        return f"{error.msg}, line {error.lineno}"
    statements, functions, assignments, headers = [], [], [], []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append((node.lineno, node.end_lineno or node.lineno))
        if isinstance(node, _HEADED) and node.body and node.body[0].lineno > node.lineno:
            headers.append((node.lineno, node.body[0].lineno - 1))
        if isinstance(node, ast.stmt) and not isinstance(node, _COMPOUND) and not hasattr(node, "handlers"):
            statements.append((node.lineno, node.end_lineno or node.lineno))
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = ast.get_source_segment(source, node.value)
            if value is not None:
                assignments.append((node.lineno, node.targets[0].id, value))
    lines = tuple(source.splitlines(keepends=True))
    return Parsed(lines, tuple(statements), tuple(functions), tuple(sorted(assignments)), tuple(_header_ends(lines, headers)))


def _header_ends(lines: tuple[str, ...], headers: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Each header's lines up to its colon's line (comments and blank lines before the body left out)."""
    ends = []
    for first, last in headers:
        while last > first and (not lines[last - 1].strip() or lines[last - 1].lstrip().startswith("#")):
            last -= 1
        ends.append((first, last))
    return ends


def statement_lines(source: str, line: int) -> tuple[int, int]:
    """The first and last line of the statement at ``line`` (``(line, line)`` when there is none)."""
    parsed = parse(source)
    found = statement_at(parsed, line) if isinstance(parsed, Parsed) else None
    return found or (line, line)


def header_at(parsed: Parsed, line: int) -> tuple[int, int] | None:
    """The header (``if ...:``, ``while ...:``, ``with ...:``, ``for ...:``) whose lines include ``line``."""
    found = [header for header in parsed.headers if header[0] <= line <= header[1]]
    return min(found, key=lambda header: header[1] - header[0], default=None)


def parseable_header(written: str) -> tuple[str, str]:
    """A header parses with a body: ``pass`` one level in (an ``elif`` is spelled ``if``, and back)."""
    indent = written[: len(written) - len(written.lstrip())]
    text = written if written.endswith("\n") else written + "\n"
    if text.lstrip().startswith("elif"):
        text = indent + text.lstrip()[2:]  # 'elif x:' -> 'if x:'
    return text, indent + _PASS


def as_written_header(code: str, written: str) -> str:
    """The edited header with its own first keyword (``elif``) and line ending back."""
    if written.lstrip().startswith("elif") and not code.lstrip().startswith("elif"):
        indent = code[: len(code) - len(code.lstrip())]
        code = indent + "el" + code.lstrip()
    return code if written.endswith("\n") else code.rstrip("\n")


def statement_at(parsed: Parsed, line: int) -> tuple[int, int] | None:
    """The innermost simple statement whose lines include ``line``."""
    found = [statement for statement in parsed.statements if statement[0] <= line <= statement[1]]
    return min(found, key=lambda statement: statement[1] - statement[0], default=None)


def assignments_above(parsed: Parsed, line: int) -> dict[str, Any]:
    """``name -> value`` (a libcst expression) of single-name assignments above ``line`` in the function around it."""
    import libcst

    around = [start for start, end in parsed.functions if start <= line <= end]
    if not around:
        return {}
    start = max(around)
    scope = {}
    for at, name, value in parsed.assignments:
        if start < at < line:
            try:
                scope[name] = libcst.parse_expression(" ".join(value.split()))
            except libcst.ParserSyntaxError:
                continue
    return scope
