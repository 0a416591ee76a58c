"""The XLA runtime: which device runs (Neuron when torch_neuronx imports, else PJRT CPU), and moving inputs there."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import os
import sys
from collections.abc import Mapping
from typing import Any

import torch

from neurondev._compat.out_of_tree import privateuse1_name
from neurondev.errors import XlaUnavailableError
from neurondev.runs.placement import to_device
from neurondev.trace import process

__all__ = [
    "RuntimeChoice",
    "choose_runtime",
    "describe",
    "device",
    "device_count",
    "initial_rng_state",
    "load_torch_xla",
    "planned_runtime",
    "runtime_environment",
    "to_device",
]

_INSTALL_HINT = (
    "install the torch-xla that matches your torch ({torch}): pip install 'torch-xla=={minor}.*' "
    "(neurondev is tested with torch 2.9.0 + torch-xla 2.9.0; on Trainium use the Neuron SDK's torch-neuronx)"
)


@dataclasses.dataclass(frozen=True)
class RuntimeChoice:
    """Which XLA runtime neurondev uses, and the facts it was chosen from: why torch_neuronx gives no XLA
    device (None: it does) and who chose the PJRT device ('user', 'torch_xla', 'neurondev'; None for
    Neuron); ``set_pjrt_device`` is what neurondev must set, if anything. ``render.sentences`` says why."""

    runtime: str
    pjrt_device: str | None
    set_pjrt_device: str | None
    neuron_error: str | None = None
    chosen_by: str | None = None

    @property
    def pjrt_cpu(self) -> bool:
        """PJRT's CPU device (a thread per device, collectives of 1 or 2 ranks here)."""
        return self.runtime == "pjrt" and (self.pjrt_device or os.environ.get("PJRT_DEVICE", "CPU")).upper() == "CPU"


def choose_runtime(*, neuron_error: BaseException | None, environ: Mapping[str, str], xla_imported: bool) -> RuntimeChoice:
    """Decide the runtime: Neuron if torch_neuronx imported; else PJRT, the user's PJRT_DEVICE first.

    PJRT_DEVICE=CPU is chosen only when the user has set no PJRT_DEVICE and torch_xla has not been
    imported yet (after that torch_xla has made its own choice, which neurondev respects).
    """
    user_device = environ.get("PJRT_DEVICE")
    if neuron_error is None:
        return RuntimeChoice("neuron", user_device, None)
    missing = f"{type(neuron_error).__name__}: {neuron_error}"
    if user_device:
        return RuntimeChoice("pjrt", user_device, None, missing, "user")
    if xla_imported:
        return RuntimeChoice("pjrt", None, None, missing, "torch_xla")
    return RuntimeChoice("pjrt", "CPU", "CPU", missing, "neurondev")


TORCHNEURON_FROM = (2, 13)  # torch-neuronx releases for PyTorch 2.13 on are TorchNeuron (native 'neuron', no XLA)


def torchneuron_release(version: str | None) -> bool:
    """Whether this torch-neuronx version is TorchNeuron (its device native), not the XLA-based SDK."""
    try:
        major, minor = (int(part) for part in (version or "").split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= TORCHNEURON_FROM


def neuron_xla_missing(version: str | None, import_error: str | None, privateuse1: str) -> str | None:
    """The one rule for whether torch-neuronx gives an XLA device: None when it does (the XLA-based SDK,
    installed and importing), else why not ('not installed', 'does not import', 'torchneuron').
    ``devices.runtimes.choose`` and ``choose_runtime`` both read it."""
    if version is None:
        return "not installed"
    if import_error is not None:
        return "does not import"
    if privateuse1 == "neuron" or torchneuron_release(version):
        return "torchneuron"
    return None


_NEURON_ERRORS = {
    "not installed": "torch-neuronx is not installed",
    "does not import": "torch-neuronx {version} does not import ({error})",
    "torchneuron": "torch-neuronx {version} is TorchNeuron, whose device is the native 'neuron' device, not XLA",
}


def _neuron_import_error() -> BaseException | None:
    """Why torch_neuronx does not give an XLA device (None: it is the XLA-based SDK), by ``neuron_xla_missing``."""
    try:
        version = importlib.metadata.version("torch-neuronx")
    except importlib.metadata.PackageNotFoundError:
        version = None
    error = None
    if version is not None and not torchneuron_release(version):
        try:
            importlib.import_module("torch_neuronx")
        except Exception as raised:  # a broken Neuron install is as unusable as a missing one
            error = f"{type(raised).__name__}: {raised}"
    missing = neuron_xla_missing(version, error, privateuse1_name())
    return None if missing is None else RuntimeError(_NEURON_ERRORS[missing].format(version=version, error=error))


_choice: RuntimeChoice | None = None


def planned_runtime() -> RuntimeChoice:
    """The runtime neurondev uses (or will use), decided without starting or importing torch_xla."""
    if _choice is not None:
        return _choice
    return choose_runtime(neuron_error=_neuron_import_error(), environ=os.environ, xla_imported="torch_xla" in sys.modules)


def _runtime() -> RuntimeChoice:
    """Choose once per process, set PJRT_DEVICE if ours to set, and import torch_xla."""
    global _choice
    if _choice is None:
        choice = planned_runtime()
        if choice.set_pjrt_device:
            os.environ["PJRT_DEVICE"] = choice.set_pjrt_device
            process.note_runtime_environment({"PJRT_DEVICE"})
        _choice = choice
    _import_torch_xla()
    return _choice


def load_torch_xla() -> Any:
    """torch_xla, imported after the runtime was chosen (PJRT_DEVICE set when ours to set);
    XlaUnavailableError with the install line when it does not import."""
    _runtime()
    return _import_torch_xla()


def initial_rng_state() -> int | None:
    """XLA's random state when neurondev first loaded torch_xla (None: neurondev did not load it)."""
    return process.initial_xla_rng()


def _rng_state() -> int | None:
    """XLA's random state, or None when the device cannot start (device() then says why)."""
    try:
        import torch_xla.core.xla_model as xm

        return int(xm.get_rng_state())
    except Exception:
        return None


def runtime_environment() -> frozenset[str]:
    """The environment variables set when neurondev started the XLA runtime (PJRT_DEVICE, and what
    importing torch_xla sets: XLA_FLAGS, ...): the running runtime reads them, so they stay."""
    return process.runtime_environment()


def _import_torch_xla() -> Any:
    """torch_xla. When neurondev is the one to import it, what the import set in the environment and XLA's
    random state are noted; once imported, the module is returned at once (every count and sync asks: a copy
    of the environment on each call cost 51 us, measured)."""
    imported = sys.modules.get("torch_xla")
    if imported is not None:
        return imported
    before = dict(os.environ)
    try:
        module = importlib.import_module("torch_xla")
    except Exception as error:
        minor = ".".join(torch.__version__.split("+")[0].split(".")[:2])
        raise XlaUnavailableError(
            f"running on an XLA device needs torch_xla, which does not import ({type(error).__name__}: {error}); "
            + _INSTALL_HINT.format(torch=torch.__version__, minor=minor)
        ) from error
    process.note_runtime_environment({key for key, value in os.environ.items() if before.get(key) != value})
    process.note_initial_xla_rng(_rng_state())
    return module


def device() -> torch.device:
    """The XLA device runs go to: Neuron's if torch_neuronx imports, otherwise PJRT's (CPU here)."""
    choice = _runtime()
    try:
        return torch.device(_import_torch_xla().device())
    except Exception as error:
        owner = "set by neurondev" if choice.set_pjrt_device else "not set by neurondev, left as it was"
        neuron = "torch_neuronx imports" if choice.neuron_error is None else f"torch_neuronx gives no XLA device ({choice.neuron_error})"
        raise XlaUnavailableError(
            f"torch_xla imported but its device could not start ({type(error).__name__}: {error}). "
            f"{neuron}; PJRT_DEVICE={os.environ.get('PJRT_DEVICE')!r} ({owner}); "
            "set PJRT_DEVICE=CPU for the CPU XLA device"
        ) from error


def device_count() -> int:
    """How many XLA devices this process can address (PJRT CPU: 1 unless CPU_NUM_DEVICES says more)."""
    device()
    import torch_xla.runtime as xr

    return int(xr.addressable_runtime_device_count())


def describe() -> dict[str, str]:
    """Which runtime and device are in use and the facts they were chosen from (why torch_neuronx gives
    no XLA device, who chose the PJRT device); also the torch and torch_xla versions."""
    xla_device = device()
    torch_xla = _import_torch_xla()
    choice = _runtime()
    return {
        "runtime": choice.runtime,
        "device": str(xla_device),
        "PJRT_DEVICE": os.environ.get("PJRT_DEVICE", ""),
        "neuron_error": choice.neuron_error or "",
        "chosen_by": choice.chosen_by or "",
        "torch": torch.__version__,
        "torch_xla": getattr(torch_xla, "__version__", "unknown"),
    }
