"""torch's dispatcher: dispatch keys and kernels, running an op's kernel below a dispatch mode, the mode stack and
the default device's mode."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.fx

from neurondev._compat import hook
from neurondev._compat.fx_internals import OpOverload

__all__ = [
    "active_dispatch_modes",
    "backend_key",
    "dispatch_handler",
    "dispatch_has_kernel",
    "dispatch_mode_keeps_compiled_code",
    "forget_kernels",
    "has_backend_fallback",
    "kernel_route",
    "run_below_mode",
    "without_default_device",
]


def dispatch_has_kernel(op: str, key: str) -> bool:
    """Whether ``op`` ('aten::addmm.out') has a kernel registered directly for dispatch key ``key`` ('PrivateUse1')."""
    return bool(torch._C._dispatch_has_kernel_for_dispatch_key(op, key))


_BELOW_PYTHON = torch._C._dispatch_keyset_full_after(torch._C.DispatchKey.Python)
_BACKEND_SELECT = torch._C.DispatchKey.BackendSelect
_UNDEFINED = torch._C.DispatchKey.Undefined
# where a backend key's entry comes from when the backend registered no kernel of its own, in the dispatcher's order
_COMPOSITES = tuple(
    getattr(torch._C.DispatchKey, key)
    for key in ("CompositeExplicitAutogradNonFunctional", "CompositeExplicitAutograd", "CompositeImplicitAutograd")
)


def run_below_mode(mode: Any, func: OpOverload, args: tuple, kwargs: dict, *, key: Any = None) -> Any:
    """Run ``func``'s kernel (what the dispatcher would run below the Python key) with ``mode`` pushed again, so
    that the ops the kernel calls reach ``mode`` too (an op the backend runs with a kernel of its own is run as
    it is: the device runs it, nothing beneath to see). A TorchDispatchMode alone sees only the outermost op of
    a call (a composite op's inner ops, a backend fallback's copies run beneath it). Called from ``mode``'s own
    ``__torch_dispatch__``; ``key``: the backend's dispatch key when the caller knows it (every tensor argument
    on one device), else worked out from the arguments. The kernel is called through ``OpOverload._op_dk``,
    which binds Python numbers to tensor arguments as the op's own call does (``redispatch`` refuses them)."""
    route = kernel_route(func, _backend_key(func, args, kwargs) if key is None else key)
    if route is None:
        return func(*args, **kwargs)
    from torch.utils._python_dispatch import _pop_mode, _push_mode

    _push_mode(mode)
    try:
        return func._op_dk(route, *args, **kwargs)
    finally:
        _pop_mode()


def kernel_route(func: OpOverload, key: Any) -> Any:
    """The key whose kernel ``run_below_mode`` runs for ``func`` at backend key ``key`` (None: the op runs as it
    is, the backend's own kernel), decided once per op and key (until ``forget_kernels``)."""
    route = _ROUTES.get((func, key), _UNKNOWN)
    if route is _UNKNOWN:
        route = _ROUTES[(func, key)] = _route(func.name(), key)
    return route


def dispatch_handler(handler: Callable[..., Any]) -> Callable[..., Any]:
    """A TorchDispatchMode's ``__torch_dispatch__`` kept out of dynamo. torch 2.13 wraps every mode's handler so
    (``TorchDispatchMode.__init_subclass__``); torch 2.9 does not, and an op dispatched from the Python between
    compiled graphs then has dynamo trace the handler itself (measured: a recompile under each host read)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    if hasattr(TorchDispatchMode, "_should_skip_dynamo"):
        return handler
    return torch._disable_dynamo(handler, recursive=True)


def forget_kernels() -> None:
    """Forget which kernel each op runs: a backend registered or removed kernels (the host device's fallbacks changed)."""
    _ROUTES.clear()


_ROUTES: dict[tuple[Any, Any], Any] = {}
_UNKNOWN = object()


def _route(op: str, key: Any) -> Any:
    """The key whose kernel to run below the mode for ``op`` at dispatch key ``key``, or None to run the op as it
    is: the backend's own kernel, or nothing below Python. BackendSelect's kernel picks the backend and goes on:
    always below the mode; a backend with no kernel of its own runs a composite kernel (which calls other ops),
    else its fallback."""
    if key is None:
        return None
    if key == _BACKEND_SELECT:
        return key
    try:
        if torch._C._dispatch_has_kernel_for_dispatch_key(op, key):
            return None
    except RuntimeError:  # not the dispatcher's (prim::device, a TorchScript operator meta tensors dispatch): it runs as it is
        return None
    return next((composite for composite in _COMPOSITES if torch._C._dispatch_has_kernel_for_dispatch_key(op, composite)), key)


def backend_key(tensor: torch.Tensor) -> Any:
    """The dispatch key below Python of a device tensor (PrivateUse1 for a PrivateUse1 backend's, CUDA for CUDA's)."""
    keys = torch._C._dispatch_keys(tensor) & _BELOW_PYTHON
    return keys.highestPriorityTypeId()


def _backend_key(func: OpOverload, args: tuple, kwargs: dict) -> Any:
    """The dispatch key the dispatcher would go on with after the Python key: the highest of the arguments'
    keys and the thread's included keys, less the excluded ones; BackendSelect only where the op has a kernel
    there (a factory op), as the dispatcher skips it otherwise. None when nothing is left."""
    keys = torch._C._dispatch_tls_local_include_set()
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            keys = keys | torch._C._dispatch_keys(value)
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, torch.Tensor):
                    keys = keys | torch._C._dispatch_keys(item)
    keys = (keys - torch._C._dispatch_tls_local_exclude_set()) & _BELOW_PYTHON
    if keys.has(_BACKEND_SELECT) and not torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), _BACKEND_SELECT):
        keys = keys.remove(_BACKEND_SELECT)
    key = keys.highestPriorityTypeId()
    return None if key == _UNDEFINED else key


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


def dispatch_mode_keeps_compiled_code() -> bool:
    """Whether a TorchDispatchMode that ignores compile internals, on while compiled code is called,
    leaves dynamo's cache alone. torch 2.9 compiles with the modes off and then fails its guards with the
    mode on (a recompile on every call, an empty reason); torch 2.13 does not (both measured here)."""
    return _version_at_least(torch.__version__, (2, 13))


def _version_at_least(version: str, wanted: tuple[int, int]) -> bool:
    major, minor = (int(part) for part in version.split("+")[0].split(".")[:2])
    return (major, minor) >= wanted


def has_backend_fallback(key: str) -> bool:
    """Whether a backend registered a fallback (a kernel for every op it has none for) under dispatch key ``key``."""
    return bool(torch._C._dispatch_has_backend_fallback(getattr(torch._C.DispatchKey, key)))


try:  # torch.utils._python_dispatch: the base class of every dispatch mode (torch 2.9 to 2.13)
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError:  # pragma: no cover - a torch without it cannot account for native devices at all
    TorchDispatchMode = object  # type: ignore[misc,assignment]


def active_dispatch_modes() -> list[Any]:
    """The dispatch modes on torch's stack now, innermost last."""
    import torch.utils._python_dispatch as dispatch

    return list(hook(dispatch, "_get_current_dispatch_mode_stack", "the stack of dispatch modes")())
