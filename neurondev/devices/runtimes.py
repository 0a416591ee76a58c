"""Which runtime this machine has, decided from what is installed and what it registers, never guessed.

Neuron's SDK moved: torch-neuronx up to 2.9 was XLA-based (runs go to torch_xla's device, with a
Neuron PJRT plugin); TorchNeuron (torch-neuronx for PyTorch 2.13 and 2.14, SDK 2.33) registers a native
``neuron`` device through PyTorch's PrivateUse1 mechanism and needs no torch_xla. Elsewhere torch_xla's
PJRT device (the CPU device here) runs XLA, and a PrivateUse1 backend already loaded in the process
(the host test device, or another vendor's) runs natively. ``facts()`` reads what is there (importing
torch_neuronx when it is installed: what it registers is only known once it is imported);
``choose(facts)`` is the decision, a pure function tested on every case; ``default_target()`` is the
device explain, check and watch use when no target is given.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import importlib.util
import os
import sys

import torch

from neurondev._compat.out_of_tree import privateuse1_name
from neurondev.xla.runtime import neuron_xla_missing, torchneuron_release

__all__ = ["NEURON_STATES", "Facts", "RuntimeChoice", "choose", "default_target", "facts", "resolve_target"]


@dataclasses.dataclass(frozen=True)
class Facts:
    """What the machine has: torch-neuronx's version (None: not installed) and its import error, the name
    PrivateUse1 goes by once it is imported ('privateuseone': no backend), whether torch_xla is installed,
    and the user's PJRT_DEVICE."""

    neuronx_version: str | None = None
    neuronx_error: str | None = None
    privateuse1: str = "privateuseone"
    torch_xla: bool = False
    pjrt_device: str | None = None


NEURON_STATES = (
    "native neuron",  # TorchNeuron registers the native 'neuron' device
    "xla sdk",  # the XLA-based Neuron SDK (torch-neuronx up to 2.9)
    "not installed",
    "does not import",
    "no neuron device",  # a TorchNeuron release that imports but registers no 'neuron' device
    "no torch_xla",  # the XLA-based SDK without torch_xla
)


@dataclasses.dataclass(frozen=True)
class RuntimeChoice:
    """The runtime (``torchneuron``, ``neuron-xla``, ``pjrt``, ``native``, or ``none``), the target device it
    provides (None: none), its stack ('native' or 'xla'), what torch-neuronx is here (one of
    ``NEURON_STATES``) and the facts it was chosen from; ``render.sentences.runtime_text`` says why."""

    runtime: str
    target: str | None
    stack: str | None
    neuron: str
    found: Facts


def choose(found: Facts) -> RuntimeChoice:
    """The runtime for these facts: TorchNeuron, then the XLA-based Neuron SDK, then torch_xla's PJRT,
    then a PrivateUse1 backend already loaded, else none."""
    if found.neuronx_version and found.neuronx_error is None and found.privateuse1 == "neuron":
        return RuntimeChoice("torchneuron", "neuron", "native", "native neuron", found)
    if found.torch_xla and neuron_xla_missing(found.neuronx_version, found.neuronx_error, found.privateuse1) is None:
        return RuntimeChoice("neuron-xla", "xla", "xla", "xla sdk", found)
    neuron = _neuron_state(found)
    if found.torch_xla:
        return RuntimeChoice("pjrt", "xla", "xla", neuron, found)
    if found.privateuse1 != "privateuseone":
        return RuntimeChoice("native", found.privateuse1, "native", neuron, found)
    return RuntimeChoice("none", None, None, neuron, found)


def _neuron_state(found: Facts) -> str:
    if found.neuronx_version is None:
        return "not installed"
    if found.neuronx_error is not None:
        return "does not import"
    return "no neuron device" if torchneuron_release(found.neuronx_version) else "no torch_xla"


def facts() -> Facts:
    """What this machine has now (torch_neuronx is imported when installed, to see what it registers)."""
    version = _version("torch-neuronx")
    error = None
    if version is not None:
        try:
            importlib.import_module("torch_neuronx")
        except Exception as raised:  # a broken install is as unusable as a missing one
            error = f"{type(raised).__name__}: {raised}"
    return Facts(
        neuronx_version=version,
        neuronx_error=error,
        privateuse1=privateuse1_name(),
        torch_xla="torch_xla" in sys.modules or _installed("torch_xla"),
        pjrt_device=os.environ.get("PJRT_DEVICE") or None,
    )


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken install, or an import hook that refuses it
        return False


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def default_target() -> RuntimeChoice:
    """The runtime this machine provides, with the device explain, check and watch use by default."""
    return choose(facts())


def resolve_target(target: object) -> torch.device:
    """The device for ``target``: None is this machine's runtime's device, and XLA's when it has none (so
    that the runs say what is missing): the one meaning None has for a target anywhere in neurondev;
    'hostdev' loads the host test device first; a native device whose backend is not loaded is a DeviceUnavailableError that says how
    to load it; anything else is parsed as torch parses it (InvalidTargetError when it cannot be)."""
    from neurondev.devices.host.loader import NAME
    from neurondev.errors import DeviceUnavailableError
    from neurondev.fx.devices import parse_target

    if target is None:
        target = default_target().target or "xla"
    kind = target.type if isinstance(target, torch.device) else str(target).split(":")[0] if isinstance(target, str) else None
    if kind == NAME:
        _load_host()  # the ops that fall back stay as the user chose them
    elif kind == "neuron" and privateuse1_name() != "neuron":
        raise DeviceUnavailableError(
            "'neuron' is TorchNeuron's device (torch-neuronx 2.13+, Neuron SDK 2.33+, on Trainium) and it is not loaded in this "
            "process: import torch_neuronx first (on a machine without Neuron, target='hostdev' runs on the host test device)"
        )
    elif kind == "privateuseone":
        raise DeviceUnavailableError(
            "no PrivateUse1 backend is loaded in this process: import your backend's package first (torch_neuronx for 'neuron'), "
            "or pass target='hostdev' for the host test device"
        )
    return parse_target(target)  # type: ignore[arg-type]  # parse_target names what it refuses


def _load_host() -> None:
    """Load the host test device, keeping the ops that fall back as they are."""
    from neurondev.devices.host.loader import loaded

    if not loaded():
        from neurondev.devices.host.loader import host_device

        host_device()
