"""Collectives on the host test device: a c10d process group that runs gloo on host copies of its tensors.

gloo refuses a PrivateUse1 tensor ("ProcessGroupGloo::allreduce: unsupported device type hostdev"), so no
DDP or FSDP program could run across processes on the host device. ``register()`` (called by
``neurondev.host_device()``) registers this group with c10d for the device type and the CPU, through
``torch.distributed.Backend.register_backend(..., devices=[...])``: ``dist.init_process_group()`` under
torchrun then picks it (the host device is the process's accelerator), as it picks NCCL for CUDA.

Each collective copies its host-device tensors to the CPU, runs gloo's collective there, and copies the
results back: on the host device those are copies within host memory, which the device's own log and
dispatch accounting see as copies to and from the device (``aten::_to_copy`` and ``aten::copy_``), counted
like any other and said to be the collective's (``HostCopy.collective``: ``c10d::allreduce``); on a real
device a collective is a device operation (its runtime's, NCCL's or Neuron's collectives) and moves no data
through the host. Collectives complete before the call returns; ``isend`` and ``irecv`` do not (a ring exchange posts
both before waiting on either): their Work completes in ``wait()``, which copies what was received back.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["BACKEND", "HostProcessGroup", "register"]

BACKEND = "hostdev"


def _on_host(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor itself when it is on the CPU, else a CPU copy of it."""
    return tensor if tensor.device.type == "cpu" else tensor.to("cpu")


def _copy_back(tensors: Sequence[torch.Tensor], host: Sequence[torch.Tensor]) -> None:
    for tensor, copy in zip(tensors, host):
        if copy is not tensor:
            tensor.copy_(copy)


def _done(result: Any) -> Any:
    """A finished Work whose future holds ``result`` (what c10d's callers wait on)."""
    from neurondev._compat.out_of_tree import finished_work

    return finished_work(result)


def _named(group: Any, *names: str) -> Any:
    """The first of ``names`` the gloo group has (torch renamed its single-tensor collectives)."""
    for name in names:
        if hasattr(group, name):
            return getattr(group, name)
    raise AttributeError(f"gloo's process group has none of {names}")


def _pending_class() -> type:
    from neurondev._compat.out_of_tree import work_base
    from neurondev.native.marks import collective

    class Pending(work_base()):  # type: ignore[misc]
        """A gloo point-to-point work still running on host copies: ``wait()`` waits for it, then copies what was
        received back into the device tensors (said to be ``name``'s copies)."""

        def __init__(self, name: str, work: Any, tensors: Sequence[torch.Tensor], host: Sequence[torch.Tensor]) -> None:
            super().__init__()
            self._name, self._work, self._tensors, self._host = name, work, list(tensors), list(host)
            self._done = False

        def wait(self, timeout: Any = None) -> bool:
            if not self._done:
                self._work.wait()
                with collective(self._name):
                    _copy_back(self._tensors, self._host)
                self._done = True
            return True

        def is_completed(self) -> bool:
            return self._done

        def is_success(self) -> bool:
            return self._done

        def get_future(self) -> torch.futures.Future:
            self.wait()
            future: torch.futures.Future = torch.futures.Future()
            future.set_result(self._tensors)
            return future

    return Pending


def _process_group_class() -> type:
    import torch.distributed as dist

    base: Any = dist.ProcessGroup  # its methods are c10d's virtual ones, overridden here in Python
    pending = _pending_class()

    class HostProcessGroup(base):
        """c10d's collectives for host-device (and CPU) tensors, run by gloo on host copies."""

        def __init__(self, store: Any, rank: int, size: int, timeout: datetime.timedelta) -> None:
            super().__init__(rank, size)
            self._group_name = self._group_desc = ""
            self._gloo: Any = dist.ProcessGroupGloo(store, rank, size, timeout)

        def getBackendName(self) -> str:  # noqa: N802  (c10d's name for it)
            return BACKEND

        def setGroupName(self, name: str) -> None:  # noqa: N802  (c10d names the group after creating it)
            self._group_name = name

        def getGroupName(self) -> str:  # noqa: N802
            return self._group_name

        def setGroupDesc(self, desc: str) -> None:  # noqa: N802
            self._group_desc = desc

        def getGroupDesc(self) -> str:  # noqa: N802
            return self._group_desc

        def _run(self, tensors: Sequence[torch.Tensor], host: Sequence[torch.Tensor], work: Any, result: Any) -> Any:
            work.wait()
            _copy_back(tensors, host)
            return _done(result)

        def broadcast(self, tensors: list[torch.Tensor], opts: Any) -> Any:
            host = [_on_host(t) for t in tensors]
            return self._run(tensors, host, self._gloo.broadcast(host, opts), tensors)

        def allreduce(self, tensors: list[torch.Tensor], opts: Any) -> Any:
            host = [_on_host(t) for t in tensors]
            return self._run(tensors, host, self._gloo.allreduce(host, opts), tensors)

        def allreduce_coalesced(self, tensors: list[torch.Tensor], opts: Any) -> Any:
            host = [_on_host(t) for t in tensors]
            return self._run(tensors, host, self._gloo.allreduce_coalesced(host, opts), tensors)

        def reduce(self, tensors: list[torch.Tensor], opts: Any) -> Any:
            host = [_on_host(t) for t in tensors]
            return self._run(tensors, host, self._gloo.reduce(host, opts), tensors)

        def _to_lists(self, run: Any, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts: Any) -> Any:
            """A collective from tensors into lists of tensors (gather, all_gather), run on host copies."""
            host_out = [[_on_host(t) for t in out] for out in outputs]
            work = run(host_out, [_on_host(t) for t in inputs], opts)
            flat = [t for out in outputs for t in out]
            return self._run(flat, [t for out in host_out for t in out], work, outputs)

        def _single(self, names: tuple[str, ...], output: torch.Tensor, input: torch.Tensor, opts: Any) -> Any:
            """A collective of one output tensor and one input tensor, by gloo's name for it in this torch."""
            host = _on_host(output)
            return self._run([output], [host], _named(self._gloo, *names)(host, _on_host(input), opts), output)

        def allgather(self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts: Any) -> Any:
            return self._to_lists(self._gloo.allgather, outputs, inputs, opts)

        def _allgather_base(self, output: torch.Tensor, input: torch.Tensor, opts: Any) -> Any:
            return self._single(("all_gather_single", "_allgather_base"), output, input, opts)

        all_gather_single = _allgather_base  # its name from torch 2.11 on

        def _pairwise(self, single: Any, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any) -> Any:
            """gloo has no coalesced form: the single-tensor collective once per pair, in order (every rank calls
            them in the same order)."""
            for output, input in zip(outputs, inputs):
                single(output, input, opts).wait()
            return _done(outputs)

        def allgather_into_tensor_coalesced(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any) -> Any:
            return self._pairwise(self._allgather_base, outputs, inputs, opts)

        all_gather_single_coalesced = allgather_into_tensor_coalesced

        def reduce_scatter(self, outputs: list[torch.Tensor], inputs: list[list[torch.Tensor]], opts: Any) -> Any:
            host = [_on_host(t) for t in outputs]
            work = self._gloo.reduce_scatter(host, [[_on_host(t) for t in group] for group in inputs], opts)
            return self._run(outputs, host, work, outputs)

        def _reduce_scatter_base(self, output: torch.Tensor, input: torch.Tensor, opts: Any) -> Any:
            return self._single(("reduce_scatter_single", "_reduce_scatter_base"), output, input, opts)

        reduce_scatter_single = _reduce_scatter_base  # its name from torch 2.11 on

        def reduce_scatter_tensor_coalesced(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any) -> Any:
            return self._pairwise(self._reduce_scatter_base, outputs, inputs, opts)

        reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced

        def gather(self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts: Any) -> Any:
            return self._to_lists(self._gloo.gather, outputs, inputs, opts)

        def scatter(self, outputs: list[torch.Tensor], inputs: list[list[torch.Tensor]], opts: Any) -> Any:
            host = [_on_host(t) for t in outputs]
            work = self._gloo.scatter(host, [[_on_host(t) for t in group] for group in inputs], opts)
            return self._run(outputs, host, work, outputs)

        def barrier(self, opts: Any) -> Any:
            self._gloo.barrier().wait()
            return _done(None)

        def send(self, tensors: list[torch.Tensor], dst: int, tag: int) -> Any:
            """Started, not waited for: the Work completes in ``wait()`` (isend; send waits on it at once)."""
            host = [_on_host(t) for t in tensors]
            return pending("c10d::send", self._gloo.send(host, dst, tag), [], host)

        def recv(self, tensors: list[torch.Tensor], src: int, tag: int) -> Any:
            """Started, not waited for: ``wait()`` copies what came into ``tensors``."""
            host = [_on_host(t) for t in tensors]
            return pending("c10d::recv", self._gloo.recv(host, src, tag), tensors, host)

        def alltoall_base(
            self, output: torch.Tensor, input: torch.Tensor, output_splits: list[int], input_splits: list[int], opts: Any
        ) -> Any:
            """all_to_all_single: rows of ``input`` to each rank by ``input_splits``, even or not."""
            host = _on_host(output)
            return self._run([output], [host], self._gloo.alltoall_base(host, _on_host(input), output_splits, input_splits, opts), output)

        def alltoall(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any) -> Any:
            """all_to_all of lists (gloo has no list form on torch 2.9): the tensors flattened into one, exchanged
            with gloo's alltoall_base, and split back."""
            flat_in = torch.cat([_on_host(t).reshape(-1) for t in inputs])
            flat_out = torch.empty(sum(t.numel() for t in outputs), dtype=outputs[0].dtype)
            sizes = [t.numel() for t in outputs]
            self._gloo.alltoall_base(flat_out, flat_in, sizes, [t.numel() for t in inputs], opts).wait()
            _copy_back(outputs, [part.view_as(t) for t, part in zip(outputs, flat_out.split(sizes))])
            return _done(outputs)

    for name, member in list(vars(HostProcessGroup).items()):
        if callable(member) and not name.startswith("_") or name in _COLLECTIVES:  # run, never traced: a call into c10d
            setattr(HostProcessGroup, name, torch.compiler.disable(_said(name, member) if name in _COLLECTIVES else member))
    return HostProcessGroup


_COLLECTIVES = {
    "broadcast",
    "allreduce",
    "allreduce_coalesced",
    "reduce",
    "allgather",
    "_allgather_base",
    "all_gather_single",
    "allgather_into_tensor_coalesced",
    "all_gather_single_coalesced",
    "reduce_scatter",
    "_reduce_scatter_base",
    "reduce_scatter_single",
    "reduce_scatter_tensor_coalesced",
    "reduce_scatter_single_coalesced",
    "gather",
    "scatter",
    "send",
    "recv",
    "alltoall_base",
    "alltoall",
}


def _said(name: str, method: Any) -> Any:
    """``method`` with its copies said to be the collective's (``c10d::allreduce``), for the device's accounting."""
    from neurondev.native.marks import collective

    def run(*args: Any, **kwargs: Any) -> Any:
        with collective(f"c10d::{name.strip('_')}"):
            return method(*args, **kwargs)

    run.__name__ = run.__qualname__ = name
    return run


_class: type | None = None


def HostProcessGroup(store: Any, rank: int, size: int, timeout: datetime.timedelta) -> Any:  # noqa: N802  (a class to its callers)
    """The host device's process group (its class is built when torch.distributed is first needed)."""
    global _class
    if _class is None:
        _class = _process_group_class()
    return _class(store, rank, size, timeout)


def register(device_type: str) -> bool:
    """Register the host device's process group with c10d for ``device_type`` and the CPU; False where
    torch was built without distributed support (nothing to register with)."""
    import torch.distributed as dist

    if not dist.is_available():
        return False
    if BACKEND not in dist.Backend.backend_list:
        dist.Backend.register_backend(BACKEND, HostProcessGroup, devices=[device_type, "cpu"])
    return True
