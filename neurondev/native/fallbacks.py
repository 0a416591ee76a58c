"""Which ATen ops fall back to the CPU on a native device: the ones its backend registered no kernel for.

A PrivateUse1 backend (TorchNeuron, the host test device) registers kernels for the ops it runs and a
boxed fallback for the rest, which copies the inputs to the host, runs the CPU kernel and copies the
results back (``at::native::cpu_fallback``). Which op takes which path is in the dispatcher's tables,
not in the op's name: an op with a kernel of its own runs on the device; one that decomposes
(CompositeImplicitAutograd, CompositeExplicitAutograd) runs as the ops it calls; a structured op's
functional and in-place forms run through its ``out`` form, which is the one that falls back or not
(while the functional ops generated from in-place and view ops, ``copy`` or ``slice_copy``, are made
of other ops, their ``out`` forms too).
"""

from __future__ import annotations

import functools

from neurondev._compat import OpOverload, dispatch_has_kernel, has_backend_fallback

__all__ = ["KEY", "forget", "generation", "host_op", "name_of", "out_form"]

KEY = "PrivateUse1"
_DECOMPOSED = ("CompositeImplicitAutograd", "CompositeExplicitAutograd")
_THROUGH_OUT = "CompositeExplicitAutogradNonFunctional"


def name_of(func: OpOverload) -> str:
    """'aten::addmm' for aten.addmm.default, 'aten::add.Tensor' for aten.add.Tensor."""
    schema = func._schema
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name


@functools.cache
def host_op(func: OpOverload) -> str | None:
    """The op the backend runs on the host for ``func`` ('aten::addmm.out' when aten.addmm.default goes
    through its out form), or None when the device runs it (a kernel of its own, or the ops it decomposes into)."""
    if not has_backend_fallback(KEY):
        return None
    name = name_of(func)
    if dispatch_has_kernel(name, KEY) or any(dispatch_has_kernel(name, key) for key in _DECOMPOSED):
        return None
    if dispatch_has_kernel(name, _THROUGH_OUT):
        out = out_form(func)
        if out is None or dispatch_has_kernel(out, KEY) or any(dispatch_has_kernel(out, key) for key in _DECOMPOSED):
            return None  # a structured op whose out form the device runs, or an op made of others (copy, *_copy, *_scatter)
        return out
    return name


def forget() -> None:
    """Forget what was decided: a backend registered or removed kernels (the host device's fallback set changed)."""
    global _generation
    host_op.cache_clear()
    _generation += 1


def generation() -> int:
    """How many times ``forget()`` was called: a cache of ``host_op``'s answers is stale once it changes."""
    return _generation


_generation = 0


@functools.cache
def out_form(func: OpOverload) -> str | None:
    """The ``out=`` overload a structured op's functional or in-place form calls ('aten::addmm.out' for
    aten.addmm.default and aten.addmm_.default): the overload of the same name whose arguments, out aside,
    are the same."""
    import torch

    base = func.overloadpacket.__name__.rstrip("_")
    packet = getattr(torch.ops.aten, base, None)
    if packet is None:
        return None
    wanted = [argument.name for argument in func._schema.arguments]
    for overload in packet.overloads():
        schema = getattr(packet, overload)._schema
        outs = [argument for argument in schema.arguments if argument.is_out]
        if outs and [a.name for a in schema.arguments if not a.is_out] == wanted:
            return f"{schema.name}.{schema.overload_name}"
    return None
