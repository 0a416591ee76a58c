"""torch's function-mode stack: the user's default device (``torch.set_default_device``, ``with torch.device(...)``)
set aside while neurondev traces."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

__all__ = ["without_default_device"]


@contextlib.contextmanager
def without_default_device() -> Iterator[None]:
    """The user's default device (``torch.set_default_device``, ``with torch.device(...)``: a DeviceContext on the
    torch function mode stack) set aside while inside, and put back as it was. Factory calls without a device
    then make CPU tensors, and no ``device=`` is written into a traced graph for them."""
    from torch.utils._device import DeviceContext

    stack = [torch._C._pop_torch_function_stack() for _ in range(torch._C._len_torch_function_stack())][::-1]
    try:
        for mode in stack:
            if not isinstance(mode, DeviceContext):
                torch._C._push_on_torch_function_stack(mode)
        yield
    finally:
        for _ in range(torch._C._len_torch_function_stack()):
            torch._C._pop_torch_function_stack()
        for mode in stack:
            torch._C._push_on_torch_function_stack(mode)
