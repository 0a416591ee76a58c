"""Verified fixes as a unified diff, and written into the user's files (a backup kept, a dirty git file refused).

Files are read and written as they are on disk: in the encoding they declare (PEP 263, a BOM kept)
and with their own line endings, so that only the fixed statements' bytes change and the diff
applies with ``git apply`` or ``patch -p1`` to the file as it is.
"""

from __future__ import annotations

import dataclasses
import difflib
import io
import linecache
import os
import shutil
import subprocess
import tokenize
from collections.abc import Iterable, Sequence
from pathlib import Path

from neurondev.errors import InvalidOptionError, SourceChangedError, UncommittedChangesError
from neurondev.report.fixes.edits import dedented
from neurondev.report.fixes.records import Fix

__all__ = ["BACKUP_SUFFIX", "SourceFile", "Written", "fixed_texts", "unified_diff", "unified_diff_bytes", "write_fixes"]

BACKUP_SUFFIX = ".neurondev-backup"
_NO_NEWLINE = "\\ No newline at end of file\n"


@dataclasses.dataclass(frozen=True)
class Written:
    """A file the fixes were written into, and where its original text was kept."""

    file: Path
    backup: Path
    fixes: int


@dataclasses.dataclass(frozen=True)
class SourceFile:
    """A file's text as on disk: its characters (line endings as they are) and the encoding to write them back in."""

    path: Path
    text: str
    encoding: str

    @classmethod
    def read(cls, path: Path) -> SourceFile:
        try:
            data = path.read_bytes()
        except OSError as error:
            raise SourceChangedError(
                f"{path.name} changed since it was traced ({error.strerror}): explain it again before patching"
            ) from None
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
            encoding = "utf-8" if encoding == "utf-8-sig" else encoding  # a BOM stays a character of the text, written back
            return cls(path, data.decode(encoding), encoding)
        except (SyntaxError, LookupError, UnicodeDecodeError) as error:
            raise SourceChangedError(f"{path.name} does not read as the Python source it was ({error}): explain it again") from None

    def lines(self) -> list[str]:
        """The lines with their own endings (\\n, \\r\\n or \\r), as Python counts them."""
        return io.StringIO(self.text, newline="").readlines()

    def encoded(self, text: str) -> bytes:
        return text.encode(self.encoding)


def fixed_texts(fixes: Iterable[Fix]) -> dict[str, tuple[SourceFile, str]]:
    """{file: (the file as it is, its text with its verified fixes)} for files on disk (a notebook
    cell or an IPython input is not a file: its fixes are shown, never patched)."""
    by_file: dict[str, list[Fix]] = {}
    for fix in fixes:
        if fix.verified and fix.after is not None and not fix.in_pseudo_file:
            by_file.setdefault(fix.source.file, []).append(fix)
    texts = {}
    for file, chosen in by_file.items():
        source = SourceFile.read(Path(file))
        texts[file] = (source, _applied(source, chosen))
    return texts


def _applied(source: SourceFile, fixes: Sequence[Fix]) -> str:
    lines = source.lines()
    for fix in sorted(fixes, key=lambda f: f.first, reverse=True):
        assert fix.after is not None
        statement = lines[fix.first - 1 : fix.last]
        if not statement or dedented(_universal("".join(statement)).lstrip("\ufeff")) != fix.before:
            raise SourceChangedError(f"{source.path.name}:{fix.first} changed since it was traced: explain it again before patching")
        indent, ending = _indent_of(statement[0]), _ending_of(statement[-1])
        fixed = [(indent + line if line.strip() and i else line) for i, line in enumerate(fix.after.split("\n"))]
        lines[fix.first - 1 : fix.last] = [indent + (_ending_of(statement[0]) or "\n").join(fixed) + ending]
    return "".join(lines)


def _universal(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _ending_of(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def unified_diff(fixes: Iterable[Fix], *, root: str | os.PathLike[str] | None = None) -> str:
    """A unified diff of every verified fix in files (paths relative to ``root``, default the working
    folder), as text: the lines keep their own endings. A file in another encoding than UTF-8 is its
    characters here; ``unified_diff_bytes`` (what ``neurondev fix --diff`` prints) is its bytes."""
    return "".join(part for part, _ in _diffs(fixes, root))


def unified_diff_bytes(fixes: Iterable[Fix], *, root: str | os.PathLike[str] | None = None) -> bytes:
    """The diff as bytes, each file's part in that file's own encoding: what git and patch read."""
    return b"".join(part.encode(source.encoding) for part, source in _diffs(fixes, root))


def _diffs(fixes: Iterable[Fix], root: str | os.PathLike[str] | None) -> list[tuple[str, SourceFile]]:
    base = Path(root or Path.cwd()).resolve()
    parts = []
    for file, (source, after) in fixed_texts(fixes).items():
        name = _relative(Path(file), base, given=root is not None)
        lines = difflib.unified_diff(
            io.StringIO(source.text, newline="").readlines(),
            io.StringIO(after, newline="").readlines(),
            fromfile=f"a/{name}",
            tofile=f"b/{name}",
        )
        parts.append(("".join(line if line.endswith(("\n", "\r")) else line + "\n" + _NO_NEWLINE for line in lines), source))
    return parts


def _relative(path: Path, base: Path, *, given: bool) -> str:
    """The path in the diff: relative to ``base``; a file outside the working folder (no root given)
    is named from the file system's root (apply from there)."""
    try:
        return path.resolve().relative_to(base).as_posix()
    except ValueError:
        if not given:
            return path.resolve().as_posix().lstrip("/")
        raise InvalidOptionError(
            f"{path} is not inside the folder {base}: give root= a folder that holds every fixed file (the diff's paths are relative to it)"
        ) from None


def write_fixes(fixes: Iterable[Fix], *, force: bool = False) -> list[Written]:
    """Write every verified fix into its file, the original kept beside it (``file.py.neurondev-backup``):
    the same encoding, BOM and line endings; only the fixed statements' bytes change.

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
    for file in texts:
        if not os.access(file, os.W_OK) or not os.access(Path(file).parent, os.W_OK):
            raise InvalidOptionError(f"{file} (or its folder, for the backup) cannot be written: nothing was written; make it writable")
    written = []
    for file, (source, after) in texts.items():
        path = Path(file)
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        shutil.copy2(path, backup)
        try:
            path.write_bytes(source.encoded(after))
        except OSError:
            backup.unlink(missing_ok=True)  # no stray backup beside a file left as it was
            raise
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
