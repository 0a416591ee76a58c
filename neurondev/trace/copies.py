"""Copies of the user's objects for a trace: the function's own state and every argument, copied together.

A function may train a model (``loss.backward(); opt.step()``), append to a KV cache, write into a
dataclass or change a callable object's own state. It is traced and run on copies: one deep copy
of (the function's state, args, kwargs) with one memo, so that an optimizer still refers to the
copied model's parameters and a cache to its copied tensors. Tensors are then put on the trace's
device (a module with ``.to``, tensors inside other objects one by one). The global RNG state is
given back afterwards, and the environment too (``kept_global_state``).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
import sys
import types
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch

from neurondev._compat.fx_internals import DYNAMIC_MARKS, dynamic_dims, keystr, tree_flatten_with_path, tree_unflatten
from neurondev.errors import CaptureInputError
from neurondev.trace import process
from neurondev.trace.capture_notes import CaptureNote

if TYPE_CHECKING:
    from neurondev.trace.namespaces import Namespaces

__all__ = ["MovedInput", "fresh_function", "kept_global_state", "own_namespaces", "traced_copies"]

_MAX_DEPTH = 12


@dataclasses.dataclass(frozen=True)
class MovedInput:
    """An input (or module state) that was not on the trace's device and was copied there."""

    path: str
    device: str


def traced_copies(
    fn: Callable[..., Any],
    args: tuple,
    kwargs: dict,
    device: torch.device,
    moved: list[MovedInput],
    notes: list[CaptureNote],
    namespaces: Namespaces | None = None,
) -> tuple[Callable[..., Any], tuple, dict]:
    """(fn, args, kwargs) as copies on ``device``: nothing the trace does reaches the user's objects.

    A plain function keeps its closure (with a code object of its own, see ``fresh_function``) and
    reads its globals from ``namespaces`` when given (copies: see ``neurondev.trace.namespaces``),
    else from its module; a module, a bound method's object or a callable object is copied with the
    arguments (a module's classes rebuilt in ``namespaces`` when given). What cannot be deep-copied
    is traced as it is, said in ``notes``.
    """
    memo: dict[int, Any] = {}
    moved_arguments: list[MovedInput] = []
    seeded_args = _seed_tensors(args, "args", memo, moved_arguments, notes, device)
    seeded_kwargs = _seed_tensors(kwargs, "kwargs", memo, moved_arguments, notes, device)
    state = fn if _has_state(fn) else None
    try:
        state_copy, args_copy, kwargs_copy = copy.deepcopy((state, args, kwargs), memo)
    except Exception as error:  # a lock, a generator, a C object without a copy: trace what we can copy
        notes.append(CaptureNote("arguments copied apart", error=f"{type(error).__name__}: {error}"))
        state_copy, args_copy, kwargs_copy = state, seeded_args, seeded_kwargs
    walker = _Mover(device, moved, notes)
    if state is None:
        traced_fn = fresh_function(namespaces.entry(fn) if namespaces is not None else fn)
    else:
        traced_fn = _in_namespaces(walker.move(state_copy, _state_name(fn)), namespaces)
    moved.extend(moved_arguments)  # the function's own state first, then the arguments in order
    return traced_fn, walker.move(args_copy, "args"), walker.move(kwargs_copy, "kwargs")


def _in_namespaces(state: Any, namespaces: Namespaces | None) -> Any:
    """A copied module (or a method bound to one) with its classes rebuilt in the copied namespaces."""
    if namespaces is None:
        return state
    if isinstance(state, torch.nn.Module):
        namespaces.swap(state)
        return state
    if isinstance(state, types.MethodType) and isinstance(state.__self__, torch.nn.Module):
        namespaces.swap(state.__self__)
        return getattr(state.__self__, state.__name__)
    return state


@contextlib.contextmanager
def own_namespaces(fn: Callable[..., Any]) -> Iterator[Namespaces | None]:
    """Copies of the namespaces of ``fn``'s module while the block runs, when its code is the user's
    (library code is run as it is); None otherwise."""
    from neurondev.trace.namespaces import copied_namespaces, in_user_code

    if not in_user_code(fn):
        yield None
        return
    with copied_namespaces(fn) as namespaces:
        yield namespaces


def _has_state(fn: Callable[..., Any]) -> bool:
    """A module, a bound method (its object), or a callable object: state the call may change."""
    return not isinstance(fn, (types.FunctionType, types.BuiltinFunctionType, type)) and not callable(getattr(fn, "__wrapped__", None))


def _state_name(fn: Any) -> str:
    return "module" if isinstance(fn, torch.nn.Module) else "self" if isinstance(fn, types.MethodType) else "fn"


def fresh_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The same Python function with its own code object (same file and lines); others unchanged.

    Dynamo keeps compiled code on the code object of each frame it compiles: a new code object
    keeps neurondev's entries off the user's own function.
    """
    if not isinstance(fn, types.FunctionType):
        return fn
    fresh = types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    fresh.__kwdefaults__ = copy.copy(fn.__kwdefaults__)
    fresh.__qualname__ = fn.__qualname__
    return fresh


def _seed_tensors(
    tree: Any, prefix: str, memo: dict[int, Any], moved: list[MovedInput], notes: list[CaptureNote], device: torch.device
) -> Any:
    """Copy every tensor of a nested structure onto ``device`` (its deep-copy memo set, so that the
    deep copy hands these copies on), recording the ones that were elsewhere."""
    leaves, spec = tree_flatten_with_path(tree)
    copies = []
    for path, value in leaves:
        copied = _tensor_copy(value, prefix + keystr(path), moved, notes, device) if isinstance(value, torch.Tensor) else value
        if copied is not value:
            memo[id(value)] = copied
            memo.setdefault(id(memo), []).append(value)  # deepcopy's own rule: keep what the memo names alive
        copies.append(copied)
    return tree_unflatten(copies, spec)


def _tensor_copy(value: torch.Tensor, path: str, moved: list[MovedInput], notes: list[CaptureNote], device: torch.device) -> torch.Tensor:
    if value.device.type == "meta" and device.type != "meta":
        raise CaptureInputError(
            f"input {path} is a meta tensor: it has a shape but no values, and tracing runs the function; "
            f"pass a tensor with values of the same shape, e.g. torch.randn{tuple(value.shape)}"
        )
    if value.device.type != device.type:
        moved.append(MovedInput(path, str(value.device)))
    copied = value.detach().to(device, copy=True)
    _keep_dynamic_marks(value, copied, path, notes)
    return copied.requires_grad_(value.requires_grad)


def _keep_dynamic_marks(value: torch.Tensor, copied: torch.Tensor, path: str, notes: list[CaptureNote]) -> None:
    """Carry ``torch._dynamo.mark_dynamic`` (and its relatives) over to the traced copy."""
    marks = {name: getattr(value, name) for name in DYNAMIC_MARKS if hasattr(value, name)}
    for name, mark in marks.items():
        setattr(copied, name, copy.copy(mark))
    dims = dynamic_dims(marks)
    if dims is not None:
        notes.append(CaptureNote("dynamic marks kept", path=path, dims=tuple(dims)))


class _Mover:
    """Puts every tensor inside copied objects on the trace's device, in place (they are copies)."""

    def __init__(self, device: torch.device, moved: list[MovedInput], notes: list[CaptureNote]) -> None:
        self.device, self.moved, self.notes = device, moved, notes
        self.seen: set[int] = set()

    def move(self, value: Any, path: str, depth: int = 0) -> Any:
        if isinstance(value, torch.Tensor):
            return self._tensor(value, path)
        if id(value) in self.seen or depth > _MAX_DEPTH or _atomic(value):
            return value
        self.seen.add(id(value))
        if isinstance(value, torch.nn.Module):
            return self._module(value, path)
        if isinstance(value, list):
            value[:] = [self.move(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value)]
        elif isinstance(value, tuple):
            items = [self.move(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value)]
            return value if all(a is b for a, b in zip(items, value)) else _same_kind(value, items)
        elif isinstance(value, dict):
            for key in list(value):
                value[key] = self.move(value[key], f"{path}[{key!r}]", depth + 1)
        elif hasattr(value, "__dict__"):
            self._attributes(value, path, depth)
        return value

    def _tensor(self, value: torch.Tensor, path: str) -> torch.Tensor:
        if value.device.type == self.device.type or value.device.type == "meta":
            return value
        self.moved.append(MovedInput(path, str(value.device)))
        return value.detach().to(self.device).requires_grad_(value.requires_grad)

    def _module(self, module: torch.nn.Module, path: str) -> torch.nn.Module:
        for name, tensor in [*module.named_parameters(), *module.named_buffers()]:
            if tensor.device.type != self.device.type:
                self.moved.append(MovedInput(f"{path}.{name}", str(tensor.device)))
        return module.to(self.device)

    def _attributes(self, value: Any, path: str, depth: int) -> None:
        for name, item in list(vars(value).items()):
            moved = self.move(item, f"{path}.{name}", depth + 1)
            if moved is not item:
                object.__setattr__(value, name, moved)


def _atomic(value: Any) -> bool:
    """Values with nothing to move inside: numbers, strings, types, functions, modules, dtypes, devices."""
    return value is None or isinstance(
        value, (int, float, complex, bool, str, bytes, type, types.FunctionType, types.ModuleType, torch.dtype, torch.device)
    )


def _same_kind(original: tuple, items: list[Any]) -> tuple:
    """A tuple (or named tuple) like ``original`` holding ``items``."""
    return type(original)(*items) if hasattr(original, "_fields") else type(original)(items)


@contextlib.contextmanager
def kept_global_state(generators: tuple[torch.Generator, ...] = ()) -> Iterator[None]:
    """Give the global random state, the user's own ``generators`` and the environment back afterwards.

    Tracing runs the user's function (dropout, ``torch.rand``) and runs draw again; none of that may
    move the user's own random stream (torch's CPU generator, XLA's when loaded, and any
    ``torch.Generator`` the program draws from: ``trace.generators``). Torch sets
    variables while tracing (inductor's ``TORCHINDUCTOR_CACHE_DIR``): they go; only what starting
    the XLA runtime set stays (the running runtime reads it: ``PJRT_DEVICE``, ``XLA_FLAGS``, ...).
    """
    cpu = torch.get_rng_state()
    xla = _xla_rng_state()
    own = [(generator, generator.get_state()) for generator in generators]
    environment = dict(os.environ)
    try:
        yield
    finally:
        torch.set_rng_state(cpu)
        _set_xla_rng_state(xla)
        for generator, state in own:
            generator.set_state(state)
        _restore_environment(environment)


def _restore_environment(environment: dict[str, str]) -> None:
    kept = process.runtime_environment()
    for key in [key for key in os.environ if key not in environment and key not in kept]:
        del os.environ[key]
    for key, value in environment.items():
        if os.environ.get(key) != value and key not in kept:
            os.environ[key] = value


def _xla_rng_state() -> int | None:
    if "torch_xla" not in sys.modules:
        return None
    import torch_xla.core.xla_model as xm

    return int(xm.get_rng_state())


def _set_xla_rng_state(state: int | None) -> None:
    if "torch_xla" not in sys.modules:
        return
    import torch_xla.core.xla_model as xm

    # torch_xla was loaded inside the block (by a run): its stream goes back to where it started.
    restore = state if state is not None else process.initial_xla_rng()
    if restore is not None:
        xm.set_rng_state(restore)
