"""What to write instead, in words: a fix in the user's code for each kind of device pin, host value, CPU kernel and
CPU fallback, or the backend where none exists (the records say what was found; these say what to do)."""

from __future__ import annotations

from neurondev.fx.pins import DevicePin
from neurondev.trace.inputs import HostValue

__all__ = ["BACKEND_FIX", "CPU_KERNEL_FIX", "LIBRARY_NOTE", "fallback_advice", "fix_for", "host_value_fix", "short_fix"]

CPU_KERNEL_FIX = (
    "a CPU trace at ATen level chose this CPU kernel and XLA runs it on the host (a break no device rewrite "
    "removes): trace on XLA (neurondev.compare_traces, or explain(native=True)) or compile at dynamo level "
    'through the neurondev backend (torch.compile(model, backend="neurondev")), which lets XLA choose'
)


def host_value_fix(value: HostValue) -> str:
    """What to write instead of a tensor read from outside the model: a buffer for an attribute, else an argument."""
    if value.kind == "attribute":
        name = value.origin.rsplit(".", 1)[-1]
        return f"register it as a buffer in __init__ (self.register_buffer({name!r}, ...)): model.to(device) then moves it"
    return f"pass {value.origin} in as an argument, or make it a buffer of the module: a tensor outside the model does not move with model.to(device)"


BACKEND_FIX = (
    "no spelling of this keeps the device symbolic under dynamo: compile through the neurondev backend "
    '(torch.compile(fn, backend="neurondev")), which rewrites it to XLA'
)

# torch constructor -> the Tensor method that follows the tensor's device at run time
_NEW_METHODS = {
    "torch.empty": "x.new_empty(size)",
    "torch.zeros": "x.new_zeros(size)",
    "torch.ones": "x.new_ones(size)",
    "torch.full": "x.new_full(size, value)",
    "torch.tensor": "x.new_tensor(data)",
}
_LIKE = {
    "torch.rand": "torch.rand_like(x)",
    "torch.randn": "torch.randn_like(x)",
    "torch.empty_strided": "x.new_empty_strided(size, stride)",
}


LIBRARY_NOTE = "in library code (no line of yours to change): " + BACKEND_FIX


def short_fix(pin: DevicePin) -> str:
    """A few words for the pin table's "write instead" column (the sentence is ``fix_for``)."""
    function = pin.function
    if function == "torch.autocast":
        return "device_type='xla', or the neurondev backend"
    if pin.kind == "assertion":
        return "rewritten with the pin above"
    if pin.location == "method":
        return f"drop .{function.rpartition('.')[2]}()"
    if function in _NEW_METHODS:
        return _NEW_METHODS[function].replace("(size)", "(...)").replace("(size, value)", "(...)")
    if function in _LIKE and pin.kind != "literal":
        return f"{_LIKE[function]}, or the neurondev backend"
    if pin.location.startswith("arg") and function.endswith(".to"):
        return ".to(dtype) alone, or the neurondev backend"
    return "the neurondev backend"


def fix_for(pin: DevicePin) -> str:
    """One sentence: what to write in the user's code instead of this pin."""
    function, kind, location = pin.function, pin.kind, pin.location
    if function == "torch.autocast":
        return (
            "torch.autocast(device_type=x.device.type) is decided while tracing: write the device type the model runs on "
            "(device_type='xla'), or compile through the neurondev backend, which rewrites it"
        )
    if kind == "assertion":
        return "a device check torch.export wrote for a .to()/constructor above; it is rewritten with them"
    if location == "method":
        return "the value is moved to the host on purpose: drop the .cpu()/.cuda(), or move that host work out of the compiled function"
    if function in _NEW_METHODS:
        pinned = (
            f"the device written in {function}(..., device=...) puts it there whatever x's device is"
            if kind == "literal"
            else f"{function}(..., device=x.device) is frozen to the device seen while tracing"
        )
        return (
            f"write {_NEW_METHODS[function]} (x being the tensor whose device you mean): a Tensor method follows x's "
            f"device at run time, while {pinned}"
        )
    if function in _LIKE and kind != "literal":
        return f"write {_LIKE[function]} when the shape is x's; otherwise {BACKEND_FIX}"
    if kind == "literal":
        return "the device is written out in your code: remove it (or use the tensor's own device) so nothing pins it to the host"
    if location.startswith("arg") and function.endswith(".to"):
        return "for a dtype change write x.to(dtype) without a device; for a move between tensors, " + BACKEND_FIX
    return BACKEND_FIX


# Ops that fall back to the CPU whose cause is in the program, with what to write instead; any other
# fallback is the backend's own gap (its operator table runs the op on the CPU): nothing to write instead.
_FALLBACK_INSTEAD = {
    "aten::nonzero": "a data-dependent size: use a mask (torch.where(mask, x, 0)) instead of indices, or move the step after the device work",
    "aten::masked_select": "a data-dependent size: multiply by the mask (x * mask) or use torch.where, keeping the shape",
    "aten::unique": "a data-dependent size: compute it on the host once, outside the compiled step, or use torch.bincount with a fixed size",
    "aten::_unique2": "a data-dependent size: compute it on the host once, outside the compiled step, or use torch.bincount with a fixed size",
    "aten::histc": "torch.bincount(x.long(), minlength=bins) keeps it on the device on most backends",
    "aten::_local_scalar_dense": "a host read of a device value (.item(), bool(x)): keep the value a tensor",
}


def fallback_advice(op: str) -> str:
    """What to write instead of an op that falls back to the CPU, or that nothing in the program causes it."""
    base = op.split(".")[0]
    return _FALLBACK_INSTEAD.get(base) or (
        "nothing to write instead: the backend has no kernel for it and runs it on the CPU (two copies and a sync per call); "
        "report it to the backend, or keep the op out of the step"
    )
