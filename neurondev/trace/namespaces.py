"""The user's code run in copies of its modules' namespaces: rebinding a global never reaches their module.

A function traced or run by neurondev (explain runs the user's function several times) may assign
a global of its module (``CALLS += 1``). Run as it is, every trace and run would write into the
user's module. Here the functions of the modules involved are rebuilt in copies of their namespaces
(a function keeps its code, or gets fixed code when fix verification gives some; its globals are
the copy's), an nn.Module class gets a subclass whose methods are rebuilt so, a class with a fixed
method (a custom ``autograd.Function``) likewise, and a module object in a namespace becomes a copy
with the rebuilt names. Dynamo writes globals through ``sys.modules[__name__]``, so each copied
namespace is registered there under a fresh name while the block runs. Nothing at module level runs
again, and the user's modules, functions and objects stay as they were; tensors in them are copied too
(a global counter the program increments stays the user's); objects the globals refer to (a list, a
dict) are shared, not copied.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import itertools
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from neurondev.errors import CannotRebuildError
from neurondev.trace.source import is_user_file

__all__ = ["Namespaces", "copied_namespaces", "in_user_code"]

_FRESH = itertools.count()


@contextlib.contextmanager
def copied_namespaces(
    fn: Callable[..., Any],
    codes: dict[tuple[str, str], list[types.CodeType]] | None = None,
    modules: Sequence[types.ModuleType | None] = (),
) -> Iterator[Namespaces]:
    """The namespaces of ``fn``'s module (and of ``modules``) copied while the block runs, their
    functions rebuilt (with ``codes``: {(file, qualified name): fixed codes of that name} where given)."""
    namespaces = Namespaces(codes or {})
    try:
        namespaces.prepare(fn, list(modules))
        yield namespaces
    finally:
        for name in namespaces.registered:
            sys.modules.pop(name, None)


def in_user_code(fn: Any) -> bool:
    """Whether ``fn``'s code (a module's ``forward``, a method's function) is in the user's own files."""
    code = getattr(getattr(_function_behind(fn), "__code__", None), "co_filename", None)
    return is_user_file(code)


def _function_behind(fn: Any) -> Any:
    if isinstance(fn, torch.nn.Module):
        return vars(type(fn)).get("forward") or type(fn).forward
    return getattr(fn, "__func__", fn)


class Namespaces:
    """Copies of the namespaces involved, the functions and classes defined in them rebuilt, and the
    names that referred to the originals pointed at the rebuilt ones."""

    def __init__(self, codes: dict[tuple[str, str], list[types.CodeType]]) -> None:
        self.codes = codes
        self.namespaces: dict[int, dict[str, Any]] = {}  # id(original globals) -> the copy
        self.replaced: dict[int, Any] = {}  # id(original function, class or module) -> rebuilt
        self.registered: list[str] = []  # the copies' module names in sys.modules, while the block runs
        self.module_names: dict[int, str] = {}  # id(original globals) -> the module's own name
        self.building: set[int] = set()  # functions being rebuilt (a closure may hold its own function)

    def prepare(self, fn: Callable[..., Any], modules: list[types.ModuleType | None]) -> None:
        """Copy ``fn``'s module's namespace and those of ``modules``; rebuild what is defined there."""
        entry_globals = _globals_of(fn)
        for namespace in [entry_globals] + [vars(m) for m in modules if m is not None]:
            self._copy(namespace)
        for original_id, copied in list(self.namespaces.items()):
            self._rebuild_definitions(self.module_names.get(original_id), copied)
        for copied in self.namespaces.values():
            for name, value in list(copied.items()):
                if id(value) in self.replaced:
                    copied[name] = self.replaced[id(value)]
                elif isinstance(value, torch.Tensor):  # a host tensor the program writes (a counter) stays the user's
                    copied[name] = _tensor_copy(value)

    def entry(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` rebuilt: a function in the copied namespaces, a module as a deep copy of rebuilt classes."""
        return self._entry(fn)

    def _copy(self, namespace: dict[str, Any]) -> dict[str, Any]:
        """The copy of a namespace; a module's is the namespace of a new module object, which then
        stands for the module wherever a copied namespace refers to it (``layers.helper(x)``)."""
        if id(namespace) in self.namespaces:
            return self.namespaces[id(namespace)]
        name = namespace.get("__name__")
        module = sys.modules.get(name) if isinstance(name, str) else None
        if isinstance(name, str) and module is not None and vars(module) is namespace:
            # a module of its own name: dynamo writes globals through sys.modules[__name__], so the copy's
            # writes must land in the copy, never in the user's module
            fresh = f"_neurondev_rebuilt_{next(_FRESH)}_{name}"
            proxy = types.ModuleType(fresh)
            proxy.__dict__.update(namespace)
            proxy.__dict__["__name__"] = fresh
            sys.modules[fresh] = proxy
            self.registered.append(fresh)
            self.replaced[id(module)] = proxy
            self.module_names[id(namespace)] = name
            copied = proxy.__dict__
        else:
            copied = dict(namespace)
        self.namespaces[id(namespace)] = copied
        return copied

    def _rebuild_definitions(self, module_name: str | None, copied: dict[str, Any]) -> None:
        """Functions, nn.Module classes and classes with a fixed method (a custom ``autograd.Function``)
        defined in this namespace's module, rebuilt in the copy."""
        for value in list(copied.values()):
            if inspect.isfunction(value) and id(value.__globals__) in self.namespaces and id(value) not in self.replaced:
                self.replaced[id(value)] = self.function(value)
            elif self._to_subclass(value, module_name):
                self.replaced[id(value)] = self._subclass(value)

    def _to_subclass(self, value: Any, module_name: str | None) -> bool:
        """A class of this module to rebuild: an nn.Module class, or one with a fixed method."""
        if not inspect.isclass(value) or value.__module__ != module_name or id(value) in self.replaced:
            return False
        return _is_module_class(value) or self._has_fixed_method(value)

    def _has_fixed_method(self, cls: type) -> bool:
        codes = [function.__code__ for member in vars(cls).values() if (function := _function_of(member)) is not None]
        return any(self._code_for(code) is not code for code in codes)

    def _code_for(self, code: types.CodeType) -> types.CodeType:
        """The fixed code of the function ``code`` is (of its name, the one starting nearest its line), or ``code``."""
        fixed = self.codes.get((code.co_filename, code.co_qualname))
        if not fixed:
            return code
        return min(fixed, key=lambda candidate: abs(candidate.co_firstlineno - code.co_firstlineno))

    def function(self, fn: types.FunctionType) -> types.FunctionType:
        """``fn`` with its fixed code (when its file was fixed) and the copied globals, closure and defaults its own."""
        code = self._code_for(fn.__code__)
        if code.co_freevars != fn.__code__.co_freevars:
            raise CannotRebuildError(f"the fixed {fn.__qualname__} closes over other names than the original")
        self.building.add(id(fn))
        try:
            closure = self._cells(fn.__closure__)
        finally:
            self.building.discard(id(fn))
        rebuilt_fn = types.FunctionType(code, self._copy(fn.__globals__), fn.__name__, fn.__defaults__, closure)
        rebuilt_fn.__kwdefaults__ = copy.copy(fn.__kwdefaults__)
        rebuilt_fn.__qualname__ = fn.__qualname__
        return rebuilt_fn

    def _cells(self, closure: tuple[types.CellType, ...] | None) -> tuple[types.CellType, ...] | None:
        """New cells: a ``nonlocal`` the rebuilt function assigns stays its own, and a function held in
        the closure (a helper passed in) is rebuilt too when it comes from a namespace involved."""
        if closure is None:
            return None
        cells = []
        for cell in closure:
            try:
                value = cell.cell_contents
            except ValueError:  # a cell not bound yet
                cells.append(types.CellType())
                continue
            if inspect.isfunction(value) and id(value.__globals__) in self.namespaces and id(value) not in self.building:
                value = self.replaced.get(id(value)) or self.replaced.setdefault(id(value), self.function(value))
            cells.append(types.CellType(value))
        return tuple(cells)

    def _subclass(self, cls: type) -> type:
        """A subclass whose methods (static and class methods too) are rebuilt from the fixed code."""
        methods: dict[str, Any] = {}
        for name, member in vars(cls).items():
            function = _function_of(member)
            if function is not None:
                rebuilt_fn = self.function(function)
                methods[name] = type(member)(rebuilt_fn) if isinstance(member, (staticmethod, classmethod)) else rebuilt_fn
        return type(cls.__name__, (cls,), {**methods, "__module__": cls.__module__, "__qualname__": cls.__qualname__})

    def _entry(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if id(fn) in self.replaced:
            return self.replaced[id(fn)]
        if isinstance(fn, torch.nn.Module):
            return self._module(fn)
        if inspect.ismethod(fn) and isinstance(fn.__self__, torch.nn.Module):
            return getattr(self._module(fn.__self__), fn.__name__)
        if inspect.isfunction(fn):  # defined inside another function (a closure), or not bound to a name
            return self.function(fn)
        raise CannotRebuildError(f"neurondev rebuilds functions, methods and nn.Modules from fixed code, not {type(fn).__name__}")

    def _module(self, module: torch.nn.Module) -> torch.nn.Module:
        """A deep copy whose submodules of a rebuilt class are of the rebuilt subclass."""
        copied = copy.deepcopy(module)
        self.swap(copied)
        return copied

    def swap(self, copied: torch.nn.Module) -> None:
        """Give the submodules of ``copied`` (a copy: it is changed in place) the rebuilt classes."""
        for sub in copied.modules():
            cls = type(sub)
            fixed = self.replaced.get(id(cls))
            if fixed is None and id(_globals_of_class(cls)) in self.namespaces:
                fixed = self.replaced.setdefault(id(cls), self._subclass(cls))
            if fixed is not None:
                sub.__class__ = fixed


def _tensor_copy(value: torch.Tensor) -> torch.Tensor:
    copied = value.detach().clone()
    return (
        torch.nn.Parameter(copied, value.requires_grad)
        if isinstance(value, torch.nn.Parameter)
        else copied.requires_grad_(value.requires_grad)
    )


def _function_of(member: Any) -> types.FunctionType | None:
    """The Python function of a class attribute: a method, a staticmethod's or a classmethod's; else None."""
    function = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
    return function if inspect.isfunction(function) else None


def _is_module_class(value: Any) -> bool:
    """An nn.Module class: the classes whose instances a traced call holds (other classes are left as they are)."""
    return inspect.isclass(value) and issubclass(value, torch.nn.Module)


def _globals_of(fn: Callable[..., Any]) -> dict[str, Any]:
    if isinstance(fn, torch.nn.Module):
        return _globals_of_class(type(fn))
    return getattr(getattr(fn, "__func__", fn), "__globals__", {})


def _globals_of_class(cls: type) -> dict[str, Any]:
    forward = vars(cls).get("forward")
    return getattr(forward, "__globals__", {})
