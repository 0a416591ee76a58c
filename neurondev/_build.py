"""neurondev's C++ extensions (the host test device, the dispatcher's observer), each built once per torch installation
into a cache with torch.utils.cpp_extension, and loaded as built when its stamp matches."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import torch

__all__ = ["CppExtension", "cache_root"]


def cache_root() -> Path:
    """Where builds are cached: ``NEURONDEV_CACHE``, default ``~/.cache/neurondev``."""
    return Path(os.environ.get("NEURONDEV_CACHE") or Path.home() / ".cache" / "neurondev")


@dataclasses.dataclass(frozen=True)
class CppExtension:
    """One extension: its module name, its sources and headers, the one translation unit among them that is compiled
    (it includes the others), what it is called in messages, the error its failures raise, and the compiler flags."""

    module: str
    prefix: str  # the cache folder's first word
    sources: tuple[Path, ...]
    unit: str
    what: str
    error: type[Exception]
    cflags: tuple[str, ...] = ("-O2",)

    def folder(self) -> Path:
        """One folder per torch installation (its version, Python's, and a short hash of where it is installed: torch's
        build of an extension names its headers by path, so two venvs sharing a folder would rebuild it in turn)."""
        version = torch.__version__.replace("+", "-")
        where = hashlib.sha1(str(Path(torch.__file__).resolve().parent).encode()).hexdigest()[:8]
        return cache_root() / f"{self.prefix}-torch{version}-py{sys.version_info.major}{sys.version_info.minor}-{where}"

    def load(self) -> Any:
        """The extension, imported as built when its stamp matches, else built (once) and imported."""
        return self.built(self.folder()) or self.compile()

    def built(self, folder: Path) -> Any:
        """The build in ``folder``, imported as it is, when its stamp says it was built from these sources with this
        torch; else None. Most processes take this path: ``cpp_extension.load`` imports setuptools and compiles
        hipify's patterns before it asks ninja whether anything changed (0.6 s of CPU per process, measured here)."""
        library, stamp = folder / f"{self.module}.so", folder / f"{self.module}.stamp"
        try:
            if not library.is_file() or stamp.read_text() != self.key():
                return None
        except OSError:
            return None
        import importlib.util

        spec = importlib.util.spec_from_file_location(self.module, library)
        assert spec is not None and spec.loader is not None
        try:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except ImportError:  # a library that does not load: the builder's path, which builds it again or names the error
            return None
        return module

    def key(self) -> str:
        """What a build depends on beyond its folder's name (torch's version, Python's, torch's place): every source and
        header, by name and text, the flags, the compiler asked for and torch's exact build."""
        sources = [f"{source.name}\0{source.read_text()}" for source in self.sources]
        parts = [*sources, " ".join(self.cflags), os.environ.get("CXX", "c++"), torch.__version__, str(torch.version.git_version)]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def check_toolchain(self) -> None:
        from torch.utils.cpp_extension import is_ninja_available

        compiler = os.environ.get("CXX", "c++")
        if shutil.which(compiler) is None:
            raise self.error(
                f"{self.what} is C++ built on first use, and no C++ compiler was found ({compiler!r} is not on PATH): "
                "install one (Debian: apt-get install g++), or set CXX"
            )
        if not is_ninja_available():
            raise self.error(f"{self.what} is built with ninja, which was not found: pip install ninja (or apt-get install ninja-build)")

    def compile(self) -> Any:
        from torch.utils.cpp_extension import load

        self.check_toolchain()
        folder = self.folder()
        folder.mkdir(parents=True, exist_ok=True)
        if not any(folder.glob("*.so")):
            print(f"neurondev: building {self.what} into {folder} (under a minute, once)", file=sys.stderr)
        (folder / f"{self.module}.stamp").unlink(missing_ok=True)  # no process takes the library as built while it is rebuilt
        try:
            sources = [str(copy) for copy in self.sources_in(folder) if copy.name == self.unit]
            module = load(name=self.module, sources=sources, build_directory=str(folder), extra_cflags=list(self.cflags), verbose=False)
        except Exception as error:
            raise self.error(f"building {self.what} failed ({type(error).__name__}: {str(error)[-600:]})") from error
        self.write_stamp(folder / f"{self.module}.stamp")
        return module

    def write_stamp(self, stamp: Path) -> None:
        """The build's key beside it, written whole (a process reading it meanwhile sees the old one or the new one)."""
        staged = stamp.with_name(f".{stamp.name}.{os.getpid()}")
        staged.write_text(self.key())
        staged.replace(stamp)

    def sources_in(self, folder: Path) -> list[Path]:
        """The sources and headers copied into the build folder, each rewritten only when its text changed: ninja keys its
        build on the sources' paths, so two checkouts of neurondev (or a clean clone beside a working copy) share one
        build instead of each rebuilding it whenever the other ran; a header beside its sources is found by their
        includes."""
        copies = []
        for source in self.sources:
            copy = folder / source.name
            text = source.read_text()
            if not copy.is_file() or copy.read_text() != text:
                staged = folder / f".{source.name}.{os.getpid()}"
                staged.write_text(text)
                staged.replace(copy)  # atomic: a worker building at the same time reads a whole file
            copies.append(copy)
        return copies
