"""The one place that runs Graphviz: find a `dot` program, turn DOT text into SVG with a time-out."""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from neurondev.errors import DotUnavailableError, DrawTimeoutError

__all__ = ["DOT_ENV", "DotProgram", "DotUnavailableError", "find_dot", "install_hint", "render_svg"]

DOT_ENV = "NEURONDEV_DOT"
_PURE = "graphviz-pure"


@dataclasses.dataclass(frozen=True)
class DotProgram:
    """A Graphviz ``dot`` program and where it was found: 'NEURONDEV_DOT', 'system' or 'graphviz-pure'."""

    path: str
    source: str


def install_hint() -> str:
    return (
        "install Graphviz's dot: as root 'apt-get install -y graphviz', or without root "
        "'pip install graphviz-pure' (a pip-only Graphviz); or point NEURONDEV_DOT at a dot program"
    )


def find_dot() -> DotProgram | None:
    """NEURONDEV_DOT if set, else a ``dot`` on PATH (Debian's, or the setup's link to graphviz-pure),
    else graphviz-pure beside this Python (a pip-only install without root)."""
    chosen = os.environ.get(DOT_ENV)
    if chosen:
        return DotProgram(chosen, DOT_ENV) if shutil.which(chosen) or Path(chosen).is_file() else None
    system = shutil.which("dot")
    if system:
        return DotProgram(system, _PURE if Path(system).resolve().name == _PURE else "system")
    beside = Path(sys.executable).with_name(_PURE)
    pure = str(beside) if beside.is_file() else shutil.which(_PURE)
    return DotProgram(pure, _PURE) if pure else None


def render_svg(dot_text: str, *, timeout: float = 60.0, program: DotProgram | None = None) -> str:
    """SVG text for ``dot_text``; DotUnavailableError when there is no dot or it fails, DrawTimeoutError
    (a DotUnavailableError too) when it takes longer than ``timeout`` seconds.

    A pure function of its arguments, so the last drawings are remembered (by DOT text and program):
    showing a card twice draws once.
    """
    program = program or find_dot()
    if program is None:
        raise DotUnavailableError(f"no Graphviz 'dot' program found: {install_hint()}")
    return _drawn(dot_text, timeout, program)


@functools.lru_cache(maxsize=64)
def _drawn(dot_text: str, timeout: float, program: DotProgram) -> str:
    try:
        done = subprocess.run([program.path, "-Tsvg"], input=dot_text.encode(), capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as error:
        raise DrawTimeoutError(f"{program.path} took longer than {timeout:g} s to draw the graph") from error
    except OSError as error:
        raise DotUnavailableError(f"{program.path} could not run ({error}): {install_hint()}") from error
    if done.returncode != 0:
        raise DotUnavailableError(f"{program.path} failed: {done.stderr.decode(errors='replace').strip()[:500]}")
    return _strip_prolog(done.stdout.decode())


def _strip_prolog(svg: str) -> str:
    """The <svg> element alone (no XML declaration or doctype), ready to inline in HTML."""
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg
