"""The user's callable rebuilt from fixed copies of their files, without touching the files or the objects.

Each fixed file is written to a temporary folder (same file name) and imported under its module's
name while the block runs: ``sys.modules`` (and the parent package's attribute) point at the copy,
so the user's modules that import it by name or relatively get the fixed code; everything is put
back afterwards. A function defined in a notebook cell, or in a script run as ``__main__``, is
rebuilt from the fixed code in a copy of its namespace (the cell or the script is not run again). A module instance is copied and its classes from fixed files swapped.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import inspect
import linecache
import os
import sys
import tempfile
import types
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from neurondev.errors import CannotRebuildError

__all__ = ["rebuilt"]


@contextlib.contextmanager
def rebuilt(fn: Callable[..., Any], texts: dict[str, str]) -> Iterator[tuple[Callable[..., Any], dict[str, str]]]:
    """``(fixed callable, {copy's path: original path})`` while the block runs; ``texts``: original path -> fixed text."""
    with tempfile.TemporaryDirectory(prefix="neurondev-fix-") as folder:
        copies = _write_copies(Path(folder), texts)
        cells = {path: text for path, text in texts.items() if _importable(path) is None}
        with _modules_swapped(fn, texts, copies) as replaced:
            replaced.update(_cells_rebuilt(fn, cells, copies))
            yield _fixed_callable(fn, replaced), {copy_path: original for original, copy_path in copies.items()}
        for copy_path in copies.values():
            linecache.checkcache(copy_path)


def _write_copies(folder: Path, texts: dict[str, str]) -> dict[str, str]:
    copies = {}
    for index, (original, text) in enumerate(texts.items()):
        place = folder / str(index)
        place.mkdir()
        name = Path(original).name if original.endswith(".py") else f"cell_{index}.py"
        path = place / name
        path.write_text(text, encoding="utf-8")
        copies[original] = str(path)
    return copies


def _importable(path: str) -> types.ModuleType | None:
    """The module of ``path`` when it can be imported again: not a notebook cell, nor a script run as
    ``__main__`` (importing it would run the script again); those are rebuilt from their code."""
    module = _module_of_file(path)
    return module if module is not None and module.__name__ != "__main__" else None


def _module_of_file(path: str) -> types.ModuleType | None:
    """The imported module whose file is ``path`` (None for a notebook cell or a file never imported).
    Only modules of the same file name are resolved (sys.modules holds thousands with torch)."""
    wanted, name = os.path.realpath(path), os.path.basename(path)
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and os.path.basename(file) == name and os.path.realpath(file) == wanted:
            return module
    return None


@contextlib.contextmanager
def _modules_swapped(fn: Callable[..., Any], texts: dict[str, str], copies: dict[str, str]) -> Iterator[dict[Any, Any]]:
    """Import the fixed copies (and the entry's own module, unfixed, so its imports see them) by name;
    yields {id(original object): fixed object} for the functions and classes the copies define."""
    entry = _entry_file(fn)
    sources = {path: copies[path] for path in texts if _importable(path) is not None}
    if entry is not None and entry not in sources and sources and _importable(entry) is not None:
        sources[entry] = entry  # re-imported as it is, so that its names bind to the fixed modules
    originals = {path: _importable(path) for path in sources}
    saved = {module.__name__: module for module in originals.values() if module is not None}
    names = {path: module.__name__ for path, module in originals.items() if module is not None}
    try:
        loaded = _load_all(sources, names)
        yield _replacements(originals, loaded)
    finally:
        for name in names.values():
            sys.modules.pop(name, None)
        for name, module in saved.items():
            sys.modules[name] = module
            _set_parent_attribute(name, module)


def _load_all(sources: dict[str, str], names: dict[str, str]) -> dict[str, types.ModuleType]:
    """Execute every copy as its module; one importing another not loaded yet is tried again after it."""
    for name in names.values():
        sys.modules.pop(name, None)
    loaded: dict[str, types.ModuleType] = {}
    pending = list(sources)
    while pending:
        failures: dict[str, BaseException] = {}
        for path in list(pending):
            try:
                loaded[path] = _load(names[path], sources[path])
                pending.remove(path)
            except ImportError as error:
                sys.modules.pop(names[path], None)
                failures[path] = error
            except Exception as error:
                raise CannotRebuildError(f"importing the fixed copy of {Path(path).name} raised {type(error).__name__}: {error}") from error
        if pending and len(failures) == len(pending):
            stuck, reason = next(iter(failures.items()))
            raise CannotRebuildError(f"importing the fixed copy of {Path(stuck).name} raised ImportError: {reason}")
    return loaded


def _load(name: str, path: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CannotRebuildError(f"{path} cannot be loaded as a module")
    module = importlib.util.module_from_spec(spec)
    if "." in name:
        module.__package__ = name.rpartition(".")[0]
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _set_parent_attribute(name, module)
    return module


def _set_parent_attribute(name: str, module: types.ModuleType) -> None:
    parent, _, child = name.rpartition(".")
    if parent and parent in sys.modules:
        setattr(sys.modules[parent], child, module)


def _replacements(originals: dict[str, types.ModuleType | None], loaded: dict[str, types.ModuleType]) -> dict[Any, Any]:
    """{id(original function or class): the fixed copy's object of the same name}."""
    replaced: dict[Any, Any] = {}
    for path, module in originals.items():
        if module is None or path not in loaded:
            continue
        fixed = loaded[path]
        for name, value in vars(module).items():
            defined_here = (inspect.isfunction(value) or inspect.isclass(value)) and getattr(value, "__module__", None) == module.__name__
            if defined_here and hasattr(fixed, name):
                replaced[id(value)] = getattr(fixed, name)
        replaced[module.__name__] = fixed  # by name: while the block runs, sys.modules holds the copy
    return replaced


def _entry_file(fn: Callable[..., Any]) -> str | None:
    target = type(fn) if isinstance(fn, torch.nn.Module) else getattr(fn, "__func__", fn)
    module = sys.modules.get(getattr(target, "__module__", "") or "")
    return getattr(module, "__file__", None)


# --- notebook cells -----------------------------------------------------------------------------------
def _cells_rebuilt(fn: Callable[..., Any], cells: dict[str, str], copies: dict[str, str]) -> dict[Any, Any]:
    """Functions and classes defined in fixed cells, rebuilt from the fixed code in a copy of the namespace."""
    if not cells:
        return {}
    namespace = dict(_globals_of(fn))
    codes = {}
    for cell, text in cells.items():
        compiled = compile(text, copies[cell], "exec")
        codes.update({(cell, code.co_qualname): code for code in _codes_in(compiled)})
    replaced: dict[Any, Any] = {}
    for name, value in list(namespace.items()):
        fixed = _rebuilt_object(value, codes, namespace)
        if fixed is not None:
            namespace[name] = fixed
            replaced[id(value)] = fixed
    if inspect.isfunction(fn) and id(fn) not in replaced:
        fixed = _rebuilt_function(fn, codes, namespace)
        if fixed is not None:
            replaced[id(fn)] = fixed
    return replaced


def _globals_of(fn: Callable[..., Any]) -> dict[str, Any]:
    if isinstance(fn, torch.nn.Module):
        forward = type(fn).forward
        return getattr(forward, "__globals__", {})
    return getattr(getattr(fn, "__func__", fn), "__globals__", {})


def _codes_in(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _codes_in(constant)


def _rebuilt_object(value: Any, codes: dict, namespace: dict[str, Any]) -> Any:
    if inspect.isfunction(value):
        return _rebuilt_function(value, codes, namespace)
    if inspect.isclass(value):
        methods = {name: _rebuilt_function(member, codes, namespace) for name, member in vars(value).items() if inspect.isfunction(member)}
        changed = {name: method for name, method in methods.items() if method is not None}
        if changed:
            return type(value.__name__, (value,), {**changed, "__module__": value.__module__, "__qualname__": value.__qualname__})
    return None


def _rebuilt_function(fn: types.FunctionType, codes: dict, namespace: dict[str, Any]) -> types.FunctionType | None:
    key = (fn.__code__.co_filename, fn.__code__.co_qualname)
    code = codes.get(key)
    if code is None or code.co_freevars != fn.__code__.co_freevars:
        return None
    rebuilt_fn = types.FunctionType(code, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    rebuilt_fn.__kwdefaults__ = copy.copy(fn.__kwdefaults__)
    return rebuilt_fn


# --- the entry callable -------------------------------------------------------------------------------
def _fixed_callable(fn: Callable[..., Any], replaced: dict[Any, Any]) -> Callable[..., Any]:
    if id(fn) in replaced:
        return replaced[id(fn)]
    if isinstance(fn, torch.nn.Module):
        return _module_with_fixed_classes(fn, replaced)
    if inspect.ismethod(fn) and isinstance(fn.__self__, torch.nn.Module):
        return getattr(_module_with_fixed_classes(fn.__self__, replaced), fn.__name__)
    if inspect.isfunction(fn):
        return _nested_function(fn, replaced)
    raise CannotRebuildError(f"neurondev rebuilds functions, methods and nn.Modules from fixed code, not {type(fn).__name__}")


def _module_with_fixed_classes(module: torch.nn.Module, replaced: dict[Any, Any]) -> torch.nn.Module:
    copied = copy.deepcopy(module)
    for sub in copied.modules():
        fixed = replaced.get(id(type(sub)))
        if fixed is not None:
            sub.__class__ = fixed
    return copied


def _nested_function(fn: types.FunctionType, replaced: dict[Any, Any]) -> Callable[..., Any]:
    """A function defined inside another (a closure) or not found by name: rebuilt from the fixed module's code."""
    fixed_module = replaced.get(fn.__module__)
    if fixed_module is None:
        return fn  # its file is not fixed: the original, whose helpers may be
    codes = {}
    for value in vars(fixed_module).values():
        for code in _codes_of(value):
            codes[(fn.__code__.co_filename, code.co_qualname)] = code
    rebuilt_fn = _rebuilt_function(fn, codes, vars(fixed_module))
    if rebuilt_fn is None:
        raise CannotRebuildError(f"{fn.__qualname__} is not found in the fixed copy with the same free variables")
    return rebuilt_fn


def _codes_of(value: Any) -> Sequence[types.CodeType]:
    if inspect.isfunction(value):
        return list(_codes_in(value.__code__))
    if inspect.isclass(value):
        return [code for member in vars(value).values() if inspect.isfunction(member) for code in _codes_in(member.__code__)]
    return []
