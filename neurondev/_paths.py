"""Where neurondev writes (and serves) what a user asked for: a path or port checked before anything is written or run."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from neurondev.errors import InvalidOptionError

__all__ = ["SCRATCH", "remove_scratch", "output_file", "output_folder", "scratch_folder", "serving_port"]


def output_file(path: Any, *, what: str, example: str) -> Path:
    """``path`` as a Path to a file that can be written: a str or a Path whose folder exists and is
    writable, and which is no folder itself; InvalidOptionError saying what to pass otherwise."""
    chosen = _path(path, what, example)
    folder = chosen.expanduser().resolve().parent
    if not folder.is_dir():
        raise InvalidOptionError(f"{what} {path}: the folder {folder} does not exist; create it first or write elsewhere, e.g. {example}")
    if chosen.is_dir():
        raise InvalidOptionError(f"{what} {path} is a folder: give a file name, e.g. {chosen / Path(example).name}")
    if not os.access(folder, os.W_OK) or (chosen.exists() and not os.access(chosen, os.W_OK)):
        raise InvalidOptionError(f"{what} {path} cannot be written here (no permission): write elsewhere, e.g. {example}")
    return chosen


def output_folder(path: Any, *, what: str, example: str) -> Path:
    """``path`` as a Path to a folder that exists or can be made (not a file), and can be written."""
    chosen = _path(path, what, example)
    if chosen.exists() and not chosen.is_dir():
        raise InvalidOptionError(f"{what} {path} is a file, not a folder: give a folder to write into, e.g. {example}")
    existing = next(parent for parent in (chosen.expanduser().resolve(), *chosen.expanduser().resolve().parents) if parent.exists())
    if not os.access(existing, os.W_OK):
        raise InvalidOptionError(f"{what} {path} cannot be written here (no permission): write elsewhere, e.g. {example}")
    return chosen


def _path(path: Any, what: str, example: str) -> Path:
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise InvalidOptionError(f"{what} is a path (a str or a pathlib.Path), got {type(path).__name__} {path!r}; e.g. {example}")
    return Path(path)


def serving_port(port: Any) -> int:
    """``port`` when it is a TCP port number (1 to 65535); InvalidOptionError saying what to pass otherwise."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise InvalidOptionError(f"port is a TCP port number from 1 to 65535 (None: a free one), got {port!r}")
    return port


SCRATCH = "NEURONDEV_SCRATCH"  # a folder the watch command's supervising process removes, whatever ends its child
_SCRATCH: list[Path] = []


def scratch_folder(prefix: str) -> Path:
    """A new temporary folder for neurondev's own files (torch_xla's analysis, Model Explorer's graphs), removed with
    what is in it when Python exits (or by ``remove_scratch`` before a process ends without its exit handlers): nothing
    of ours is left in the temporary directory. Under the watch command, inside the folder its supervisor removes."""
    inside = os.environ.get(SCRATCH)
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=inside if inside and Path(inside).is_dir() else None))
    _SCRATCH.append(folder)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def remove_scratch() -> None:
    """Remove every scratch folder now: a process about to end by ``os._exit`` (its exit handlers never run)."""
    for folder in _SCRATCH:
        shutil.rmtree(folder, ignore_errors=True)
