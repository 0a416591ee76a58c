"""What an out-of-tree (PrivateUse1) device registers with torch: its name, its device module, its interface for
dynamo, a c10d process group's work, and autograd's engine called bare."""

from __future__ import annotations

from typing import Any

import torch
import torch.fx

from neurondev._compat import hook

__all__ = [
    "dynamo_device_interface",
    "finished_work",
    "privateuse1_name",
    "register_device_module",
    "register_dynamo_device_interface",
    "run_backward_bare",
    "work_base",
]


def privateuse1_name() -> str:
    """The name PrivateUse1 goes by in this process ('privateuseone': no backend renamed it)."""
    return str(hook(torch._C, "_get_privateuse1_backend_name", "PrivateUse1's backend name")())


def register_device_module(name: str, module: Any) -> None:
    """Register ``torch.<name>`` for an out-of-tree device (what ``torch.cuda`` is for CUDA)."""
    hook(torch, "_register_device_module", "registering a device module")(name, module)


def finished_work(result: Any) -> Any:
    """A c10d Work already done, its future holding ``result`` (what a Python process group returns)."""
    import torch._C._distributed_c10d as c10d

    future: torch.futures.Future = torch.futures.Future()
    future.set_result(result)
    return hook(c10d, "_create_work_from_future", "c10d's Work made from a future")(future)


def dynamo_device_interface() -> type:
    """dynamo's ``DeviceInterface``, the base of a device's interface for dynamo and inductor."""
    import torch._dynamo.device_interface as interfaces

    return hook(interfaces, "DeviceInterface", "dynamo's device interface")


def register_dynamo_device_interface(name: str, interface: type) -> None:
    """Register ``interface`` for device type ``name`` with dynamo (what torch does for cuda and xpu)."""
    import torch._dynamo.device_interface as interfaces

    hook(interfaces, "register_interface_for_device", "registering a device's interface with dynamo")(name, interface)


def work_base() -> type:
    """c10d's Work, as a base for a Python process group's own (one whose ``wait`` finishes the work)."""
    import torch.distributed as dist

    return hook(dist, "_Work", "c10d's Work class")


def run_backward_bare(output: torch.Tensor) -> None:
    """``output.backward()`` through autograd's engine without the Python context torch 2.13 stashes in each
    backward's thread-local state (``torch.autograd.graph._engine_run_backward``): a graph task that holds no
    Python object, whose last reference a device's autograd thread may drop without the GIL."""
    engine = hook(torch.autograd.Variable, "_execution_engine", "autograd's engine")
    engine.run_backward((output,), (torch.ones_like(output),), False, False, (), True, True)
