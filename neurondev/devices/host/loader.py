"""Build (once, into a cache) and register the host test device: its C++ (``csrc/``, one extension) with
torch.utils.cpp_extension, its name, its module."""

from __future__ import annotations

import atexit
import threading
from pathlib import Path
from typing import Any

import torch

from neurondev._build import CppExtension
from neurondev._compat.out_of_tree import privateuse1_name, register_device_module, register_dynamo_device_interface, run_backward_bare
from neurondev.errors import HostDeviceError, InvalidOptionError

__all__ = ["NAME", "SOURCES", "build_folder", "extension", "host_device", "loaded", "privateuse1_name"]

NAME = "hostdev"  # a name no accelerator uses: host memory behind PyTorch's PrivateUse1 mechanism
# The device's C++, laid out as PyTorch's OpenReg device is (csrc/hostdev.h says which file holds what), and built as
# one extension from one translation unit, csrc/hostdev.cpp, which includes every other file (torch's headers parsed
# once: 34 s cold here, against 64 s for the files compiled apart). A change to any file rebuilds it.
SOURCES = tuple(sorted(path for path in (Path(__file__).resolve().parent / "csrc").iterdir() if path.suffix in (".cpp", ".h")))
_UNIT = "hostdev.cpp"
_UNRENAMED = "privateuseone"
_lock = threading.Lock()
_MODULE = "neurondev_hostdev"
_CFLAGS = ["-O2"]
_extension: list[Any] = []


def build_folder() -> Path:
    """Where the compiled device is cached: one folder per torch installation (its version, Python's, and a short hash
    of where it is installed). ``NEURONDEV_CACHE`` overrides the root, default ``~/.cache/neurondev``."""
    return _host().folder()


def loaded() -> bool:
    """Whether the host device is loaded in this process."""
    return bool(_extension) and privateuse1_name() == NAME


def host_device(fallback: Any = ()) -> torch.device:
    """Load neurondev's host-memory test device (built the first time, about a minute; cached after)
    and choose which ATen ops fall back to the CPU on it; its ``torch.device``.

    It is a PyTorch PrivateUse1 backend whose memory is host memory, for learning and for tests: it
    is not an accelerator, and it is not Neuron. Ops run "natively" (the CPU kernel on the same memory,
    nothing copied) unless named in ``fallback`` (``"aten::addmm"``: every overload; ``"aten::addmm.out"``:
    that one), which then fall back to the CPU the way a backend's unsupported ops do (inputs copied to
    the host, outputs copied back), as TorchNeuron's CPU_FALLBACK ops do. Calling it again sets which ops
    fall back (the default: none). HostDeviceError when it cannot be built (no C++ compiler, no ninja) or
    when another backend holds PrivateUse1 (named).
    """
    wanted = _fallback_names(fallback)
    with _lock:
        module = extension()
        _register(module)
        unknown, composite = module.set_fallback(wanted)
    if unknown:
        raise InvalidOptionError(
            f"fallback names ATen ops, and torch has no {', '.join(map(repr, unknown))}; e.g. 'aten::addmm', 'aten::mm'"
        )
    if composite:
        raise InvalidOptionError(
            f"{', '.join(composite)} never reach a device kernel (torch decomposes them first, or they have no CPU kernel to "
            "fall back to): name the ops they call, e.g. 'aten::addmm' or 'aten::mm' for aten::linear"
        )
    return torch.device(NAME, 0)


def _fallback_names(fallback: Any) -> list[str]:
    names = [fallback] if isinstance(fallback, str) else fallback
    try:
        names = list(names)
    except TypeError:
        names = [names]
    if not all(isinstance(name, str) and name for name in names):
        raise InvalidOptionError(f"fallback is a list of ATen op names such as 'aten::addmm', got {fallback!r}")
    return [name if name.startswith("aten::") else f"aten::{name}" for name in names]


def extension() -> Any:
    """The compiled device (built into ``build_folder()`` the first time), loaded once per process."""
    if _extension:
        return _extension[0]
    taken = privateuse1_name()
    if taken not in (_UNRENAMED, NAME):
        raise HostDeviceError(
            f"PrivateUse1 is taken by the {taken!r} backend in this process (torch allows one): the host test device "
            f"cannot load beside it; run it in a process without {taken!r} (on that machine use target={taken!r})"
        )
    _extension.append(_built(build_folder()) or _compile())
    return _extension[0]


def _host() -> CppExtension:
    """The host device as an extension to build (read at each call: a test may change its sources or flags)."""
    return CppExtension(_MODULE, "hostdev", SOURCES, _UNIT, "the host test device", HostDeviceError, tuple(_CFLAGS))


def _built(folder: Path) -> Any:
    return _host().built(folder)


def _build_key() -> str:
    return _host().key()


def _compile() -> Any:
    return _host().compile()


def _write_stamp(stamp: Path) -> None:
    _host().write_stamp(stamp)


def _sources_in(folder: Path) -> list[Path]:
    return _host().sources_in(folder)


def _register(module: Any) -> None:
    """Hooks, name, the generated tensor methods and the device module: once per process."""
    if privateuse1_name() == NAME:
        return
    if not module.install():
        raise HostDeviceError(
            "another backend registered PrivateUse1's hooks in this process (torch allows one): the host test device cannot load beside it"
        )
    from neurondev.devices.host import device_module

    torch.utils.rename_privateuse1_backend(NAME)
    register_device_module(NAME, device_module)
    torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_storage=True)
    from neurondev.devices.host.dynamo_interface import interface_class

    register_dynamo_device_interface(NAME, interface_class(device_module))
    from neurondev.devices.host.collectives import register

    register(NAME)  # dist.init_process_group() picks its collectives, as it picks NCCL for CUDA
    from neurondev.native.events import DEVICE_LOGS

    DEVICE_LOGS[NAME] = module  # its own log of copies, syncs and fallbacks: the accounting counts from it
    atexit.register(_settle_autograd_thread)
    atexit.register(module.observe, None)  # nobody is told of an event while Python ends


def _settle_autograd_thread() -> None:
    """At exit, one bare backward through the device's autograd thread, so that it has let go of the last graph task.

    Autograd runs a device's backward on a thread of its own, which drops its reference to the graph task just
    after waking the caller. From torch 2.13 each backward's task holds a Python object (the contextvars context
    ``_engine_run_backward`` stashes), so when the script ends at that moment the thread asks for the GIL while
    Python finalizes, and the process aborts ("terminate called without an active exception", exit 134; 7 of 12
    runs of a script under load). The thread takes tasks in order: once this task is done, the earlier one is
    gone, and this one holds no Python object."""
    try:
        leaf = torch.zeros(1, device=torch.device(NAME, 0), requires_grad=True)
        run_backward_bare(leaf * 1)
    except Exception:  # the interpreter is ending: nothing to report to, and nothing the user's exit should show
        pass
