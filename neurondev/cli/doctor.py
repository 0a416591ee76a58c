"""neurondev doctor: what is installed and usable here, each with the fix when it is missing."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import platform
import shutil

__all__ = ["Check", "TESTED_PAIRS", "checks", "pair_verdict"]

TESTED_PAIRS = {("2.9.0", "2.9.0")}  # torch, torch-xla: the pair requirements/constraints.txt pins


@dataclasses.dataclass(frozen=True)
class Check:
    """One thing doctor looked at: whether it is there, what it is, and how to get it if not.
    ``needed``: neurondev's runs or pictures need it (its absence makes doctor exit 1)."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    needed: bool = True


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def pair_verdict(torch_version: str, xla_version: str | None) -> tuple[bool, str]:
    """Whether torch and torch-xla go together: the tested pair, the same minor, or not."""
    if xla_version is None:
        return False, "torch-xla is not installed"
    base = torch_version.split("+")[0]
    if (base, xla_version) in TESTED_PAIRS:
        return True, f"torch {base} + torch-xla {xla_version}: the pair neurondev is tested with"
    if base.split(".")[:2] == xla_version.split(".")[:2]:
        return True, f"torch {base} + torch-xla {xla_version}: the same minor (not the pair tested here: 2.9.0 + 2.9.0)"
    return False, f"torch {base} + torch-xla {xla_version}: different minors, which torch-xla does not support"


def checks() -> list[Check]:
    """Every check, in the order doctor prints them."""
    return [_python(), _torch(), _torch_xla(), _runtime(), _neuron(), _libcst(), _dot(), _chromium()]


def _python() -> Check:
    return Check("python", True, platform.python_version())


def _torch() -> Check:
    version = _version("torch")
    return Check("torch", version is not None, version or "not installed", "pip install 'torch==2.9.0'")


def _torch_xla() -> Check:
    ok, detail = pair_verdict(_version("torch") or "", _version("torch-xla"))
    minor = ".".join((_version("torch") or "2.9").split(".")[:2])
    return Check("torch-xla", ok, detail, f"pip install 'torch-xla=={minor}.*' (on Trainium: the Neuron SDK's)")


def _runtime() -> Check:
    from neurondev import xla
    from neurondev.errors import XlaUnavailableError

    try:
        info = xla.describe()
    except XlaUnavailableError as error:
        return Check("XLA device", False, str(error).splitlines()[0], "set PJRT_DEVICE=CPU for the CPU XLA device")
    return Check("XLA device", True, f"{info['device']} ({info['runtime']}: {info['reason']})")


def _neuron() -> Check:
    version = _version("torch-neuronx")
    detail = f"torch-neuronx {version}" if version else "not installed: runs use PJRT (the CPU XLA device here)"
    return Check("torch-neuronx", version is not None, detail, "on Trainium, install the Neuron SDK's torch-neuronx", needed=False)


def _dot() -> Check:
    from neurondev.render.svg import DotUnavailableError, find_dot, install_hint, render_svg

    program = find_dot()
    if program is None:
        return Check("dot (Graphviz)", False, "no dot program: graphs are not drawn", install_hint())
    try:
        render_svg("digraph { a -> b }", program=program, timeout=30)
    except DotUnavailableError as error:
        return Check("dot (Graphviz)", False, f"{program.path} ({program.source}) does not draw: {error}", install_hint())
    return Check("dot (Graphviz)", True, f"{program.path} ({program.source}) draws SVG")


def _libcst() -> Check:
    version = _version("libcst")
    detail = f"libcst {version}: fixed lines are written keeping comments and formatting" if version else "not installed: no fixed lines"
    return Check("libcst", version is not None, detail, "pip install libcst")


def _chromium() -> Check:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    return Check(
        "chromium",
        path is not None,
        path or "not found: only the browser tests and the README picture need it",
        "as root: apt-get install -y chromium",
        needed=False,
    )
