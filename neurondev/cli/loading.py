"""MODULE:FUNC and --input SPECs as the verbs take them: the user's function or Module class loaded, its inputs
parsed and checked against what it takes."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from neurondev.cli.usage import UsageError

__all__ = ["check_before_torch", "function_and_inputs", "load_callable"]


def function_and_inputs(options: argparse.Namespace) -> tuple[Callable, tuple]:
    """MODULE:FUNC loaded and its --input specs parsed (fixed seeds), or a UsageError saying what is missing.
    With ``--meta`` a Module class is built on the meta device and the inputs are meta (shapes only)."""
    from neurondev.cli.specs import parse_input

    check_before_torch(options)
    meta = getattr(options, "meta", False)
    fn = load_callable(options.function, meta=meta)
    if meta and not isinstance(fn, __import__("torch").nn.Module):
        raise UsageError(
            f"--meta builds an nn.Module class on the meta device; {options.function} is not one: drop --meta "
            "(a function is explained with real inputs), or name the Module class"
        )
    args = tuple(parse_input(spec, seed=index) for index, spec in enumerate(options.input))
    if meta:
        args = tuple(arg.to("meta") for arg in args)
    _check_inputs_given(fn, args, options.function)
    return fn, args


def check_before_torch(options: argparse.Namespace) -> None:
    """The usage errors said before anything imports torch (under a second): each --input spec read, the file of
    path/to/file.py:FUNC there."""
    from neurondev.cli.specs import check_spec

    for spec in options.input:
        check_spec(spec)
    module_part, _, name = options.function.rpartition(":")
    if not module_part or not name:
        raise UsageError(f"{options.function!r} is not MODULE:FUNC: write e.g. mypkg.model:forward or path/to/file.py:f")
    if module_part.endswith(".py") and not Path(module_part).is_file():
        raise UsageError(f"no file {module_part}")


def _check_inputs_given(fn: Callable, args: tuple, name: str) -> None:
    from neurondev.trace.callables import required_inputs

    required = [] if args else required_inputs(fn)
    if required != []:
        names = ", ".join(required) if required else "its arguments"
        raise UsageError(f"{name} takes inputs ({names}): give one --input SPEC per argument, e.g. --input 'randn(64)'")


def load_callable(spec: str, *, meta: bool = False) -> Callable:
    """``pkg.module:name`` or ``path/to/file.py:name``; an nn.Module class is constructed with no arguments
    (on the meta device with ``meta``: its weights are never materialised)."""
    module_part, _, name = spec.rpartition(":")
    if not module_part or not name:
        raise UsageError(f"{spec!r} is not MODULE:FUNC: write e.g. mypkg.model:forward or path/to/file.py:f")
    module = _load_module(module_part)
    if not hasattr(module, name):
        public = ", ".join(n for n in dir(module) if not n.startswith("_"))[:300]
        raise UsageError(f"{module_part} has no {name!r}; it has: {public}")
    obj = getattr(module, name)
    import torch

    if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
        try:
            if meta:
                with torch.device("meta"):
                    return obj()
            return obj()
        except TypeError as error:
            raise UsageError(f"{name} is an nn.Module class that cannot be built with no arguments ({error})") from None
    if isinstance(obj, type):
        raise UsageError(
            f"{name} is a class but not an nn.Module: name a function (MODULE:function) or an nn.Module class that builds with no arguments"
        )
    if not callable(obj):
        raise UsageError(f"{spec} is a {type(obj).__name__}, not a function or nn.Module")
    return obj


def _load_module(text: str) -> Any:
    path = Path(text)
    if text.endswith(".py"):
        if not path.is_file():
            raise UsageError(f"no file {text}")
        package = _package_name(path.resolve())
        if package is not None:  # a file of a package: imported as the package's module, relative imports work
            root, dotted = package
            sys.path.insert(0, str(root))
            try:
                return importlib.import_module(dotted)
            except Exception as error:
                raise UsageError(f"importing {text} as {dotted} raised {type(error).__name__}: {error}") from error
        sys.path.insert(0, str(path.resolve().parent))  # its sibling modules import as they do when it runs
        module_name = f"neurondev_user_{path.stem}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise UsageError(f"{text} cannot be loaded as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # dynamo looks the module up by name
        try:
            spec.loader.exec_module(module)
        except Exception as error:
            raise UsageError(f"importing {text} raised {type(error).__name__}: {error}") from error
        return module
    sys.path.insert(0, str(Path.cwd()))
    try:
        return importlib.import_module(text)
    except ImportError as error:
        raise UsageError(f"cannot import {text} ({error}); run from the folder that holds it, or give a path to the .py file") from None
    finally:
        sys.path.remove(str(Path.cwd()))


def _package_name(path: Path) -> tuple[Path, str] | None:
    """(the folder above the top package, the dotted module name) for a file inside a package, else None."""
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return (folder, ".".join(parts)) if len(parts) > (0 if path.stem == "__init__" else 1) else None
