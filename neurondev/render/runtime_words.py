"""Why a machine's runtime and a run's device are the ones chosen, in words, from the facts they were chosen
from."""

from __future__ import annotations

from typing import Any

from neurondev.devices.runtimes import RuntimeChoice

__all__ = ["runtime_info_text", "runtime_text"]


def runtime_text(choice: RuntimeChoice) -> str:
    """Why this machine's runtime was chosen, from the facts it was chosen from."""
    found = choice.found
    neuron = f"torch-neuronx {found.neuronx_version}"
    said = {
        "native neuron": f"{neuron} registers the native 'neuron' device (PrivateUse1, TorchNeuron)",
        "xla sdk": f"{neuron} is the XLA-based Neuron SDK: runs go to its XLA device",
        "not installed": "torch-neuronx is not installed",
        "does not import": f"{neuron} does not import ({found.neuronx_error})",
        "no neuron device": f"{neuron} imports but registers no native 'neuron' device",
        "no torch_xla": f"{neuron} imports but torch_xla is missing",
    }[choice.neuron]
    if choice.runtime == "pjrt":
        chosen = f"PJRT_DEVICE={found.pjrt_device} (yours)" if found.pjrt_device else "PJRT's CPU device (PJRT_DEVICE=CPU)"
        return f"{said}; torch_xla is installed: {chosen}"
    if choice.runtime == "native":
        return f"{said}; no torch_xla; the {found.privateuse1!r} backend is loaded in this process"
    if choice.runtime == "none":
        return f"{said}; no torch_xla and no native backend loaded: nothing runs (neurondev.host_device() loads a test device)"
    return said


_CHOSEN_BY = {
    "user": "PJRT_DEVICE={device} was set before neurondev ran",
    "torch_xla": "torch_xla was already imported, its own device choice stands",
    "neurondev": "no PJRT_DEVICE was set, so neurondev set PJRT_DEVICE=CPU",
}


def runtime_info_text(info: Any) -> str:
    """Why a run's device is the one it ran on, from its driver's facts (``describe()``)."""
    if info.get("runtime") == "native":
        backend = info.get("backend")
        if backend == "cuda":
            return "cuda is torch's own native device here (copies, syncs and fallbacks counted at dispatch)"
        return f"{backend} is the PrivateUse1 backend loaded in this process"
    if info.get("runtime") == "neuron":
        return "torch_neuronx imports: its Neuron device is used"
    chosen = _CHOSEN_BY.get(info.get("chosen_by") or "", "").format(device=info.get("PJRT_DEVICE"))
    missing = f"torch_neuronx does not import ({info['neuron_error']})" if info.get("neuron_error") else ""
    return "; ".join(part for part in (missing, chosen) if part)
