"""The exact accounting of a native device, a dispatch mode: every copy across devices, every sync and every CPU fallback, nested, with the line.

Python runs at every op here (the mode's floor: 1.9x on small ops, measured), so this is the path for a device that
keeps no log of its own (CUDA, a new backend), and an opt-in for one that does (``NEURONDEV_ACCOUNTING=mode``):
``native.logged`` counts from the device's own log and runs Python only at events.

A ``TorchDispatchMode`` alone sees only the outermost op of a call. This one runs each op that touches
the device with itself pushed again below the Python key (``_compat.dispatcher.run_below_mode``), so it sees the ops
the kernel calls in turn: the ``index_select`` inside ``nn.Embedding``, the ``cat`` inside ``stack``,
sdpa's ``_softmax``. An op the device has no kernel for (the dispatcher routes it to the backend's own
fallback, ``at::native::cpu_fallback`` on the host test device) fell back: it runs out of the mode's sight,
and its device inputs and results are its cost, the bytes that fallback copies (the device's log agrees).
A copy is counted once, at the outermost copy op (``_to_copy``, ``copy_``, aot's functional ``copy``,
``_copy_from``; ``lift_fresh`` of a tensor built on the host and uploaded), with its direction and bytes;
a sync is a host read of a device value (``_local_scalar_dense``: ``.item()``, ``bool(x)``; ``equal``).
Each is attributed to the graph node running it (an interpreter sets ``node``) or else to the innermost
line of the program's code on the Python stack, with the outermost op the program called. The mode
ignores compile internals: compiled frames still compile under it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import torch
import torch.fx

from neurondev._compat.dispatcher import TorchDispatchMode, backend_key, dispatch_handler, kernel_route, run_below_mode
from neurondev._compat.fx_internals import OpOverload
from neurondev.native.events import ACTIVE, EVENT_KINDS, DeviceEvent, Totals, Whereabouts, caller, name_of
from neurondev.native.marks import current_collective
from neurondev.runs.counts import Counts

__all__ = ["Accounting", "DeviceEvent", "EVENT_KINDS", "name_of"]

_aten = torch.ops.aten
_COPY, _LIFT, _SYNC = "copy", "lift", "sync"
# copy ops: where the bytes come from and go to, as (argument index or "out")
_ENDS: dict[Any, tuple[int | str, int | str]] = {
    _aten._to_copy.default: (0, "out"),
    _aten.copy_.default: (1, 0),
    _aten.copy.default: (1, "out"),  # aot_autograd's functional copy_: the result has self's device
    _aten._copy_from.default: (0, 1),
    _aten._copy_from_and_resize.default: (0, 1),
}
_KINDS: dict[Any, str] = {
    **dict.fromkeys(_ENDS, _COPY),
    _aten.lift_fresh.default: _LIFT,
    _aten._local_scalar_dense.default: _SYNC,
    _aten.equal.default: _SYNC,
}
_MOVES = (_COPY, _LIFT)
_TO = _aten.to  # a view op (it may return its input) that copies otherwise: its copy is seen inside it


class _Frame:
    """An op running on the device, while the ops its kernel calls run: whether it fell back, and what that copied."""

    __slots__ = ("func", "kind", "fallback_bytes")

    def __init__(self, func: OpOverload, kind: str | None) -> None:
        self.func = func
        self.kind = kind
        self.fallback_bytes: int | None = None  # what its fallback copied; None: it did not fall back


class Accounting(TorchDispatchMode, Whereabouts):
    """Counts what the program does on device type ``device_type`` while the mode is on; ``events``
    lists each event, ``counts()`` reads the cumulative totals (subtract two readings)."""

    sees_between_graphs_always = False  # a mode makes torch 2.9's dynamo compile again: see dispatch_mode_keeps_compiled_code

    def __init__(self, device_type: str, *, modules: dict[int, str] | None = None) -> None:
        TorchDispatchMode.__init__(self)
        Whereabouts.__init__(self, modules)
        self.device_type = device_type
        self.events: list[DeviceEvent] = []
        self._lock = threading.Lock()
        self._totals = Totals()
        self._running = threading.local()  # per thread: the ops running on the device, outermost first
        self._key: Any = None  # the device's dispatch key, once the mode is on

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return True

    def counts(self) -> Counts:
        with self._lock:
            return self._totals.reading()

    def __enter__(self) -> Accounting:
        entered = super().__enter__()
        ACTIVE.append(self)
        return entered

    def __exit__(self, *exc: Any) -> None:
        ACTIVE.remove(self)
        super().__exit__(*exc)

    def __torch_dispatch__(self, func: OpOverload, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        args = _numbers_bound(func, args)
        if not self._touches_device(args, kwargs):
            return func(*args, **kwargs)  # the op costs the device nothing, and nothing beneath it does
        kind = _kind_of(func)
        key = self._device_key(args, kwargs)  # a 0-dim host tensor beside (a scalar) leaves the device's key the dispatcher's
        route = kernel_route(func, key)  # None before the device's key is known (a factory that names the device)
        if kind is None and route is None:
            return func(*args, **kwargs)  # the device's own kernel: nothing beneath it to see, nothing to count
        running = self._stack()
        frame = _Frame(func, kind)
        running.append(frame)
        try:
            if route is not None and route == key:
                out = self._fall_back(frame, func, args, kwargs)
            elif kind in _MOVES or (func.is_view and func.overloadpacket is not _TO) or _lazy_bits(args):
                out = func(*args, **kwargs)  # a copy is counted whole; a view aliases its input; a lazy conjugate or negative
                # needs torch's own path through its Conjugate and Negative keys, which a kernel run below the mode skips
            else:
                out = run_below_mode(self, func, args, kwargs, key=key)
        finally:
            running.pop()
        self._account(frame, running, args, out)
        return out

    def _fall_back(self, frame: _Frame, func: OpOverload, args: tuple, kwargs: dict) -> Any:
        """An op the device has no kernel for runs its backend's fallback (the CPU's kernel on host copies), out of the
        mode's sight: what it copies is its inputs on the device, to the host, and its results back (an in-place or
        out= argument is a result). Not seen from within: cpu_fallback hands ``_to_cpu`` a Python number's wrapped
        tensor, which a mode gets as a number and cannot pass on (``Expected 'List[Tensor]'``)."""
        out = func(*args, **kwargs)
        # its inputs on the device, and its results (a tuple's, a list's: one level down)
        frame.fallback_bytes = sum(_nbytes(t) for t in self._device_tensors((*args, *kwargs.values(), out)))
        return out

    def _touches_device(self, args: tuple, kwargs: dict) -> bool:
        """Whether an op touches the device: a tensor of it among the arguments (or in a list of them), or ``device=``
        naming it (a factory)."""
        device_type, tensor, sequences = self.device_type, torch.Tensor, (list, tuple)
        for values in (args, kwargs.values()):
            for value in values:
                for item in value if isinstance(value, sequences) else (value,):
                    if isinstance(item, tensor) and item.device.type == device_type:
                        return True
        named = kwargs.get("device")
        return isinstance(named, torch.device) and named.type == device_type

    def _device_key(self, args: tuple, kwargs: dict) -> Any:
        """The device's dispatch key, read once from the first device tensor an op gets (None before there is one: a
        factory that names the device)."""
        if self._key is None:
            first = next(self._device_tensors((*args, *kwargs.values())), None)
            self._key = backend_key(first) if first is not None else None
        return self._key

    def _stack(self) -> list[_Frame]:
        running = getattr(self._running, "frames", None)
        if running is None:
            running = self._running.frames = []
        return running

    # --- what each op cost ---------------------------------------------------------------------
    def _account(self, frame: _Frame, outer: list[_Frame], args: tuple, out: Any) -> None:
        if frame.fallback_bytes is not None:
            self._add("fallback", frame.func, frame.fallback_bytes, outer)
        kind = frame.kind
        if kind is None:
            return
        if any(f.kind in _MOVES for f in outer):  # a copy inside a copy: counted once, at the outermost
            return
        elif kind is _SYNC:  # once, at the outermost host read, unless the op fell back (its copies wait already)
            if frame.fallback_bytes is None and not any(f.kind is _SYNC for f in outer) and _reads_data(frame.func, args):
                self._add("sync", frame.func, 0, outer)
        elif kind is not _LIFT or not outer:  # inside lift_fresh_copy, a graph's constant already on the device
            self._copy(frame.func, kind, args, out, outer)

    def _copy(self, func: OpOverload, kind: str, args: tuple, out: Any, outer: list[_Frame]) -> None:
        moved = self._direction(func, kind, args, out)
        if moved is None:
            return
        direction, nbytes = moved
        self._add(direction, func, nbytes, outer)

    def _direction(self, func: OpOverload, kind: str, args: tuple, out: Any) -> tuple[str, int] | None:
        """A copy's direction and bytes; None where it crosses no boundary (on the device, or on the host)."""
        if kind is _LIFT:  # torch.tensor([...], device=...): built on the host, uploaded (unseen) before lift_fresh,
            return "copy to device", _nbytes(out)  # which the mode sees only on the device (it passes host ops by)
        source_at, destination_at = _ENDS[func]
        source, destination = (out if at == "out" else args[int(at)] for at in (source_at, destination_at))
        if self._on_device(source) and _on_host(destination):
            return "copy to host", _nbytes(source)
        if self._on_device(destination) and _on_host(source):
            return "copy to device", _nbytes(source)
        return None

    def _add(self, kind: str, func: OpOverload, nbytes: int, outer: list[_Frame]) -> None:
        node, module, source = self.where(caller(2))
        called = name_of(outer[0].func) if outer else None
        event = DeviceEvent(kind, name_of(func), nbytes, node, module, source, called, current_collective())
        with self._lock:
            self.events.append(event)
            self._totals.add(event)

    # --- which values are on the device --------------------------------------------------------
    def _on_device(self, value: Any) -> bool:
        return isinstance(value, torch.Tensor) and value.device.type == self.device_type

    def _device_tensors(self, values: Iterable[Any]) -> Iterator[torch.Tensor]:
        """The device tensors among an op's arguments (ATen arguments are tensors, lists of tensors or plain values)."""
        for value in values:
            if isinstance(value, (list, tuple)):
                yield from (item for item in value if self._on_device(item))
            elif self._on_device(value):
                yield value


Accounting.__torch_dispatch__ = dispatch_handler(Accounting.__torch_dispatch__)  # type: ignore[method-assign]


@functools.lru_cache(maxsize=4096)
def _kind_of(func: OpOverload) -> str | None:
    """What an op is to the accounting: a copy, an upload, the fallback's move to the host, a sync (a host read of a
    device value, or an op whose output's size depends on its data: PyTorch's own tags; the device must finish
    and hand the size to the host, as CUDA's nonzero does inside its kernel), or nothing (None)."""
    kind = _KINDS.get(func)
    if kind is None and (_SIZED_BY_DATA & set(func.tags) or func in _INDEXING):  # indexing: a sync with a boolean mask
        return _SYNC
    return kind


_SIZED_BY_DATA = {torch.Tag.data_dependent_output, torch.Tag.dynamic_output_shape}
_INDEXING = {_aten.index.Tensor, _aten.index_put.default, _aten.index_put_.default, _aten._index_put_impl_.default}


def _reads_data(func: OpOverload, args: tuple) -> bool:
    """Whether a sync-kind op (one that touches the device: its tensors are its arguments) read a device value on
    the host here: yes, but for indexing (``self``, ``indices``, ...) only with a boolean mask among the indices
    (integer indices give a size known without the data)."""
    return func not in _INDEXING or any(_is_mask(index) for index in args[1])


def _is_mask(index: Any) -> bool:
    return isinstance(index, torch.Tensor) and index.dtype in (torch.bool, torch.uint8)


def _lazy_bits(args: tuple) -> bool:
    """A tensor argument with a lazy conjugate or negative bit (``x.mH`` of a complex matrix)."""
    for value in args:
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, torch.Tensor) and (item.is_conj() or item.is_neg()):
                return True
    return False


@functools.lru_cache(maxsize=4096)
def _tensor_positions(func: OpOverload) -> tuple[int, ...]:
    """The positions of an op's Tensor arguments (a wrapped Python number comes to a mode there as a number)."""
    return tuple(i for i, argument in enumerate(func._schema.arguments) if isinstance(argument.type, torch.TensorType))


def _numbers_bound(func: OpOverload, args: tuple) -> tuple:
    """``args`` with each Python number at a Tensor argument (a kernel's wrapped number: ``at::remainder(t, 5)``, which a
    mode is handed as ``5`` and cannot pass back) as a 0-dim CPU tensor of the dtype the number has beside the op's first
    tensor, so that the op computes what it did: the same common dtype, the number cast to it."""
    positions = _tensor_positions(func)
    if not any(i < len(args) and isinstance(args[i], (bool, int, float, complex)) for i in positions):
        return args
    first = next((a for a in args if isinstance(a, torch.Tensor)), None)
    bound = list(args)
    for i in positions:
        if i < len(bound) and isinstance(bound[i], (bool, int, float, complex)):
            number = bound[i]
            dtype = torch.result_type(first, number) if first is not None else None
            bound[i] = torch.tensor(number, dtype=dtype)
    return tuple(bound)


def _nbytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


def _on_host(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == "cpu"
