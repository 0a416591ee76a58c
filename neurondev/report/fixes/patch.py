"""Verified fixes as a unified diff, and written into the user's files (a backup kept, a dirty git file refused)."""

from __future__ import annotations

import dataclasses
import difflib
import linecache
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from neurondev.errors import NeurondevError, UncommittedChangesError
from neurondev.report.fixes.edits import dedented
from neurondev.report.fixes.records import Fix

__all__ = ["BACKUP_SUFFIX", "Written", "fixed_texts", "unified_diff", "write_fixes"]

BACKUP_SUFFIX = ".neurondev-backup"


@dataclasses.dataclass(frozen=True)
class Written:
    """A file the fixes were written into, and where its original text was kept."""

    file: Path
    backup: Path
    fixes: int


def fixed_texts(fixes: Iterable[Fix]) -> dict[str, tuple[str, str]]:
    """{file: (text now, text with its verified fixes)} for files on disk (a notebook cell is not a file)."""
    by_file: dict[str, list[Fix]] = {}
    for fix in fixes:
        if fix.verified and fix.after is not None and not fix.in_notebook_cell:
            by_file.setdefault(fix.source.file, []).append(fix)
    texts = {}
    for file, chosen in by_file.items():
        original = Path(file).read_text(encoding="utf-8")
        texts[file] = (original, _applied(original, chosen))
    return texts


def _applied(text: str, fixes: Sequence[Fix]) -> str:
    lines = text.splitlines(keepends=True)
    for fix in sorted(fixes, key=lambda f: f.first, reverse=True):
        assert fix.after is not None
        indent = _indent_of(lines[fix.first - 1])
        statement = "".join(lines[fix.first - 1 : fix.last])
        if dedented(statement) != fix.before:
            raise NeurondevError(f"{Path(fix.source.file).name}:{fix.first} changed since it was traced: explain it again before patching")
        ending = "\n" if statement.endswith("\n") else ""
        fixed = "".join((indent + line if line.strip() and i else line) for i, line in enumerate(fix.after.splitlines(keepends=True)))
        lines[fix.first - 1 : fix.last] = [indent + fixed + ending]
    return "".join(lines)


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def unified_diff(fixes: Iterable[Fix], *, root: str | os.PathLike[str] | None = None) -> str:
    """A unified diff of every verified fix in files (paths relative to ``root``, default the working folder)."""
    base = Path(root or Path.cwd()).resolve()
    parts: list[str] = []
    for file, (before, after) in fixed_texts(fixes).items():
        name = _relative(Path(file), base)
        parts += difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=f"a/{name}", tofile=f"b/{name}"
        )
    return "".join(parts)


def _relative(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(base).as_posix()
    except ValueError:
        return path.resolve().as_posix().lstrip("/")


def write_fixes(fixes: Iterable[Fix], *, force: bool = False) -> list[Written]:
    """Write every verified fix into its file, the original kept beside it (``file.py.neurondev-backup``).

    A file with uncommitted changes under git is refused (UncommittedChangesError) unless ``force``:
    the fix would mix with work not yet saved in history.
    """
    fixes = list(fixes)
    texts = fixed_texts(fixes)
    if not force:
        dirty = [file for file in texts if _uncommitted(Path(file))]
        if dirty:
            names = ", ".join(Path(file).name for file in dirty)
            raise UncommittedChangesError(f"{names} has uncommitted changes under git: commit or stash them first, or pass --force")
    written = []
    for file, (_before, after) in texts.items():
        path = Path(file)
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        shutil.copy2(path, backup)
        path.write_text(after, encoding="utf-8")
        linecache.checkcache(file)
        written.append(Written(path, backup, sum(1 for f in fixes if f.file == file and f.verified)))
    return written


def _uncommitted(path: Path) -> bool:
    """True when git tracks the file's folder and the file differs from HEAD (or is untracked); False outside git."""
    try:
        result = subprocess.run(
            ["git", "status", "--porcelain", "--", path.name], cwd=path.parent, capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return result.returncode == 0 and bool(result.stdout.strip())
