"""The user's callable rebuilt from fixed copies of their code, without running their modules again or touching them.

Each fixed file (or notebook cell) is written to a temporary folder and compiled, never executed. The
callable is then rebuilt in copies of the namespaces involved (``neurondev.trace.namespaces``): a
function gets its fixed code when its file was fixed (its own code otherwise), so a helper it calls
by name is the fixed one; a class with a fixed method gets a subclass. Nothing at module level runs
again (no import side effects), and the user's modules, functions and objects stay as they were.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
import tempfile
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from neurondev.errors import CannotRebuildError
from neurondev.trace.namespaces import copied_namespaces

__all__ = ["rebuilt"]


@contextlib.contextmanager
def rebuilt(fn: Callable[..., Any], texts: dict[str, str]) -> Iterator[tuple[Callable[..., Any], dict[str, str]]]:
    """``(fixed callable, {copy's path: original path})`` while the block runs; ``texts``: original path -> fixed text."""
    with tempfile.TemporaryDirectory(prefix="neurondev-fix-") as folder:
        copies = _write_copies(Path(folder), texts)
        codes = _compiled(texts, copies)
        try:
            with copied_namespaces(fn, codes, [_module_of_file(path) for path in texts]) as namespaces:
                yield namespaces.entry(fn), {copy_path: original for original, copy_path in copies.items()}
        finally:
            for copy_path in copies.values():
                linecache.checkcache(copy_path)


def _write_copies(folder: Path, texts: dict[str, str]) -> dict[str, str]:
    """Each fixed text in a file of its own (the same file name), so tracebacks and source lines read it."""
    copies = {}
    for index, (original, text) in enumerate(texts.items()):
        place = folder / str(index)
        place.mkdir()
        path = place / (Path(original).name if original.endswith(".py") else f"cell_{index}.py")
        path.write_text(text, encoding="utf-8")
        copies[original] = str(path)
    return copies


def _compiled(texts: dict[str, str], copies: dict[str, str]) -> dict[tuple[str, str], list[types.CodeType]]:
    """{(original path, qualified name): the fixed codes of that name} of every function in the fixed
    texts (several lambdas of one function share a qualified name)."""
    codes: dict[tuple[str, str], list[types.CodeType]] = {}
    for original, text in texts.items():
        try:
            module_code = compile(text, copies[original], "exec")
        except SyntaxError as error:
            raise CannotRebuildError(f"the fixed {Path(original).name} does not compile: {error.msg} (line {error.lineno})") from None
        for code in _codes_in(module_code):
            codes.setdefault((original, code.co_qualname), []).append(code)
    return codes


def _codes_in(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _codes_in(constant)


def _module_of_file(path: str) -> types.ModuleType | None:
    """The imported module whose file is ``path`` (None for a notebook cell or a file never imported).
    Only modules of the same file name are resolved (sys.modules holds thousands with torch)."""
    wanted, name = os.path.realpath(path), os.path.basename(path)
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and os.path.basename(file) == name and os.path.realpath(file) == wanted:
            return module
    return None


class _Builder:
    """Copies of the namespaces involved, the functions and classes defined in them rebuilt, and the
    names that referred to the originals pointed at the rebuilt ones."""
