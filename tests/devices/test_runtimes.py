"""Runtime selection for today's Neuron SDK, from what is installed and what it registers (the decision is
a pure function, tested on every case; this machine's own facts are read for real)."""

from __future__ import annotations

import pytest
import torch

import neurondev
from neurondev.devices.runtimes import Facts, choose, default_target, facts, resolve_target
from neurondev.render.sentences import runtime_text

TORCHNEURON = Facts(neuronx_version="2.14.0", privateuse1="neuron", torch_xla=False)


def test_torchneuron_is_the_native_neuron_device_whatever_else_is_installed():
    choice = choose(TORCHNEURON)
    assert (choice.runtime, choice.target, choice.stack, choice.neuron) == ("torchneuron", "neuron", "native", "native neuron")
    assert runtime_text(choice) == "torch-neuronx 2.14.0 registers the native 'neuron' device (PrivateUse1, TorchNeuron)"
    assert choose(Facts(neuronx_version="2.13.1", privateuse1="neuron", torch_xla=True)).runtime == "torchneuron"


def test_the_legacy_sdk_runs_on_its_xla_device():
    choice = choose(Facts(neuronx_version="2.9.0", torch_xla=True))
    assert (choice.runtime, choice.target, choice.stack, choice.neuron) == ("neuron-xla", "xla", "xla", "xla sdk")


def test_a_torchneuron_release_that_registers_nothing_is_not_called_xla():
    choice = choose(Facts(neuronx_version="2.13.0", torch_xla=True))  # imported, but no 'neuron' device: not trusted as XLA-based
    assert (choice.runtime, choice.neuron) == ("pjrt", "no neuron device")


def test_a_broken_neuron_install_is_named_and_pjrt_runs():
    choice = choose(Facts(neuronx_version="2.9.0", neuronx_error="ImportError: libnrt.so", torch_xla=True, pjrt_device="TPU"))
    assert (choice.runtime, choice.neuron, choice.found.neuronx_error, choice.found.pjrt_device) == (
        "pjrt",
        "does not import",
        "ImportError: libnrt.so",
        "TPU",
    )
    assert (
        runtime_text(choice)
        == "torch-neuronx 2.9.0 does not import (ImportError: libnrt.so); torch_xla is installed: PJRT_DEVICE=TPU (yours)"
    )


def test_without_neuron_and_torch_xla_a_loaded_native_backend_runs_and_otherwise_nothing():
    assert choose(Facts(privateuse1="hostdev")).target == "hostdev"
    nothing = choose(Facts())
    assert (nothing.runtime, nothing.target, nothing.neuron) == ("none", None, "not installed")
    assert "neurondev.host_device() loads a test device" in runtime_text(nothing)


def test_this_machine_is_read_for_real():
    found = facts()
    assert found.neuronx_version is None  # PyPI's torch-neuronx is a placeholder: not installed here
    expected = "pjrt" if found.torch_xla else ("native" if found.privateuse1 != "privateuseone" else "none")
    assert default_target().runtime == expected


def test_a_target_is_resolved_loading_the_host_device_and_naming_what_is_not_loaded():
    assert resolve_target("hostdev") == torch.device("hostdev") and neurondev.host_device() == torch.device("hostdev", 0)
    with pytest.raises(neurondev.DeviceUnavailableError, match="import torch_neuronx first"):
        resolve_target("neuron")
    with pytest.raises(neurondev.InvalidTargetError, match="not a device torch knows"):
        resolve_target("trainium")


@pytest.mark.parametrize("version", [None, "2.9.0", "2.13.0", "2.14.1"])
@pytest.mark.parametrize("error", [None, "ImportError: libnrt.so"])
@pytest.mark.parametrize("privateuse1", ["privateuseone", "neuron", "hostdev"])
def test_the_machines_runtime_and_the_xla_device_choice_agree_on_whether_neuron_runs_on_xla(version, error, privateuse1):
    """One decider: the runtime of the machine (devices.runtimes.choose) and the XLA driver's choice of its device
    (xla.runtime.choose_runtime) read the same rule; torch-neuronx 2.13 imported with no 'neuron' device used to be
    XLA's Neuron device for one and PJRT for the other."""
    from neurondev.xla.runtime import choose_runtime, neuron_xla_missing

    found = Facts(neuronx_version=version, neuronx_error=error if version else None, privateuse1=privateuse1, torch_xla=True)
    missing = neuron_xla_missing(found.neuronx_version, found.neuronx_error, found.privateuse1)
    on_xla = choose_runtime(neuron_error=None if missing is None else RuntimeError(missing), environ={}, xla_imported=False)
    machine = choose(found)
    assert (machine.runtime == "neuron-xla") == (on_xla.runtime == "neuron")
    assert (machine.runtime == "neuron-xla") == (version == "2.9.0" and error is None and privateuse1 != "neuron")


@pytest.mark.parametrize("found", [Facts(), Facts(torch_xla=True), Facts(privateuse1="hostdev")], ids=["nothing", "torch_xla", "hostdev"])
def test_a_target_of_none_means_one_device_for_every_entry_point(monkeypatch, found):
    """None is this machine's runtime's device, XLA's when it has none, for resolve_target and for explain's
    and check's options alike (resolve_target used to raise where explain chose XLA)."""
    from neurondev.devices import runtimes
    from neurondev.report.options import resolved

    monkeypatch.setattr(runtimes, "facts", lambda: found)
    assert resolve_target(None) == resolved(None)
    assert resolve_target(None).type == (choose(found).target or "xla") == ("hostdev" if found.privateuse1 == "hostdev" else "xla")
