"""neurondev doctor: what is installed and usable here, each with the fix when it is missing; exit 1 when something
needed is missing."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import platform
import shutil

from neurondev._compat import TESTED_ALONE, TESTED_PAIR
from neurondev.cli.usage import EXIT_CLEAN, EXIT_FINDINGS

__all__ = ["Check", "add_doctor_command", "checks", "pair_verdict", "run_doctor"]

_PAIR = f"torch {TESTED_PAIR[0]} + torch-xla {TESTED_PAIR[1]}"


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
    if (base, xla_version) == TESTED_PAIR:
        return True, f"torch {base} + torch-xla {xla_version}: the pair neurondev is tested with"
    if base.split(".")[:2] == xla_version.split(".")[:2]:
        return True, f"torch {base} + torch-xla {xla_version}: the same minor (not the pair tested here: {_PAIR})"
    return False, f"torch {base} + torch-xla {xla_version}: different minors, which torch-xla does not support"


def checks() -> list[Check]:
    """Every check, in the order doctor prints them."""
    return [_python(), _torch(), _torch_xla(), _default_device(), _runtime(), _neuron(), _host_device(), _libcst(), _dot(), _chromium()]


def _python() -> Check:
    return Check("python", True, platform.python_version())


def _torch() -> Check:
    version = _version("torch")
    return Check("torch", version is not None, version or "not installed", f"pip install 'torch=={TESTED_PAIR[0]}'")


def _torch_xla() -> Check:
    torch_version = (_version("torch") or "").split("+")[0]
    if _version("torch-xla") is None:
        tested = "a tested set without it" if torch_version in TESTED_ALONE else "not a set tested here"
        detail = f"not installed: XLA runs are off; torch {torch_version} alone is {tested} (native devices, the CPU side)"
        return Check("torch-xla", False, detail, f"for XLA: the tested pair, {_PAIR}", needed=False)
    ok, detail = pair_verdict(_version("torch") or "", _version("torch-xla"))
    minor = ".".join((_version("torch") or "2.9").split(".")[:2])
    return Check("torch-xla", ok, detail, f"pip install 'torch-xla=={minor}.*' (on Trainium: the Neuron SDK's)")


def _default_device() -> Check:
    from neurondev.devices.runtimes import default_target
    from neurondev.render.sentences import runtime_text

    choice = default_target()
    if choice.target is None:
        return Check(
            "default device", False, runtime_text(choice), "install torch-xla, or use target='hostdev' (the host test device)", needed=False
        )
    return Check("default device", True, f"{choice.target} ({choice.runtime}, {choice.stack}): {runtime_text(choice)}")


def _runtime() -> Check:
    from neurondev import xla
    from neurondev.errors import XlaUnavailableError
    from neurondev.render.sentences import runtime_info_text

    if _version("torch-xla") is None:
        return Check("XLA device", False, "torch-xla is not installed", "pip install 'torch-xla' of your torch's minor", needed=False)
    try:
        info = xla.describe()
    except XlaUnavailableError as error:
        return Check("XLA device", False, str(error).splitlines()[0], "set PJRT_DEVICE=CPU for the CPU XLA device")
    return Check("XLA device", True, f"{info['device']} ({info['runtime']}: {runtime_info_text(info)})")


def _neuron() -> Check:
    from neurondev.devices.runtimes import facts

    found = facts()
    version = found.neuronx_version
    if version is None:
        detail = "not installed (PyPI holds a placeholder; the Neuron SDK ships it on Trainium)"
    elif found.neuronx_error is not None:
        detail = f"torch-neuronx {version} does not import: {found.neuronx_error}"
    elif found.privateuse1 == "neuron":
        detail = f"torch-neuronx {version}: TorchNeuron, the native 'neuron' device"
    else:
        detail = f"torch-neuronx {version}: the XLA-based SDK (its XLA device)"
    ok = version is not None and found.neuronx_error is None
    return Check("torch-neuronx", ok, detail, "on Trainium, install the Neuron SDK's torch-neuronx", needed=False)


def _host_device() -> Check:
    from neurondev.devices.host.loader import build_folder

    built = any(build_folder().glob("*.so"))
    detail = (
        f"built in {build_folder()}"
        if built
        else f"not built yet (the first neurondev.host_device() builds it into {build_folder()}, about a minute)"
    )
    return Check("host test device", built, detail, "make setup (or call neurondev.host_device() once)", needed=False)


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


def add_doctor_command(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    doctor = commands.add_parser("doctor", help="what is installed and usable here, with fixes")
    doctor.set_defaults(run=run_doctor)
    return doctor


def run_doctor(options: argparse.Namespace) -> int:
    results = checks()
    width = max(len(check.name) for check in results)
    for check in results:
        mark = "ok " if check.ok else "MISSING" if check.needed else "-- "
        line = f"{mark:<7} {check.name:<{width}}  {check.detail}"
        if not check.ok and check.fix:
            line += f"\n{'':<7} {'':<{width}}  fix: {check.fix}"
        print(line)
    missing = [check.name for check in results if check.needed and not check.ok]
    print("everything neurondev needs is here" if not missing else f"missing: {', '.join(missing)}")
    return EXIT_FINDINGS if missing else EXIT_CLEAN
