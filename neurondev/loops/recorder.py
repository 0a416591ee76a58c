"""Record a loop while it runs: every dynamo compile of any frame, each call of compiled code, each user sync, and the counts at each.

While recording, dynamo's per-frame compile entry (``ConvertFrameAssert.__call__``, called on every
cache miss) runs through a wrapper that notes the frame, then calls it unchanged; dynamo's own
``CompilationMetrics`` give the compile's index and the guard that failed, and the caller tells a
top-level call (torch.compile's own wrapper called it) from a resumed frame after a graph break;
dynamo's guard-complete hook counts each run of compiled code (chained to any hook already set); each
call of a compiled function is seen at torch.compile's wrapper, also once dynamo's recompile limit has
it run uncompiled (no compile, no guard then).
When torch_xla is loaded (or once the watched code imports it), its step marker (``torch_xla.sync()``,
``xm.mark_step()``) is seen too, told apart from the syncs torch_xla's dynamo bridge makes itself, and so is
each step of any optimizer (torch's global post-step hook). At each of these moments (after waiting for
the programs in flight, so that each execution is counted in the step that launched it) the device's
counts are read (torch_xla's metrics; a native device's accounting where it can be on) with the place
in torch_xla's analysis file. Nothing else is changed: no dynamo reset, no config, no logging; the
hooks are put back when recording stops. What was recorded is turned into steps and verdicts by
``neurondev.loops.steps`` and ``neurondev.loops.record``, never here.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import sys
import time
import types
from collections.abc import Callable, Mapping
from typing import Any

from neurondev._compat import dynamo as dynamo_internals
from neurondev._compat import torch_xla_hooks
from neurondev.trace.source import in_neurondev, is_program_file

__all__ = ["CompileEvent", "Mark", "Recorder", "active", "known_as", "settled", "xla_counts"]

_GUARDED = re.compile(r"^\s*(?:\d+/\d+:\s*)?(?P<expression>.+?)\s*==\s*(?P<value>[^#\n]+?)\s*(?:#|$)", re.M)
_TORCH_PARTS = (f"{os.sep}torch{os.sep}", f"{os.sep}torch_xla{os.sep}")  # a folder of torch's, not a name holding "torch"
_active: Recorder | None = None


@dataclasses.dataclass(frozen=True)
class CompileEvent:
    """One compile dynamo attempted: the function as the user knows it (``LlamaForCausalLM.forward``, not a
    decorator's ``wrapped_func``) and where it is defined, the compile's index for that frame (0 first,
    then recompiles), dynamo's reason (the guard that failed), the graphs it made, the recompile limit when
    dynamo refused (the frame then runs uncompiled), the failure when it raised, the value a guarded
    expression holds now, whether the value belongs to a library object (``owner_file``), and whether the
    frame was called by torch.compile's wrapper (``top``: a call of a compiled function, not a resumed frame)."""

    function: str
    file: str
    line: int
    index: int | None
    reason: str | None
    graphs: int
    limit: int | None = None
    failed: str | None = None
    now: str | None = None
    owner_file: str | None = None
    top: bool = False
    frame_line: int | None = None
    xla: Any = dataclasses.field(default=None, compare=False)  # torch_xla's counts when the compile started
    graph_hashes: tuple[str, ...] = ()  # each graph dynamo made, by the hash of its code: what the compile made
    call_file: str | None = None  # the user's line that called the compiled code (a library's function compiled)
    call_line: int | None = None


@dataclasses.dataclass(frozen=True)
class Mark:
    """A moment the recorder read the device's counts: ``kind`` is 'start', 'call' (a top-level call of
    compiled code, ``function`` naming it), 'sync' (the user's torch_xla.sync / mark_step), 'optimizer' (an
    optimizer's step), 'step' (the user's ``w.step()``), 'call end' (a watched function's call returned) or 'stop'; ``compiles`` is how
    many compile events came before it, ``analysis`` where torch_xla's analysis file stood."""

    kind: str
    at: float
    compiles: int
    hits: int
    xla: Any = None
    native: Any = None
    analysis: int = 0
    function: str | None = None
    native_events: int = 0  # how many events the native accounting had seen
    key: str | None = None  # the called function's identity (its code's file and first line): two lambdas are two


class Recorder:
    """Collects CompileEvents and Marks between ``start`` and ``stop`` (mutable: a Watch turns it into a frozen record)."""

    def __init__(self, *, native: Any = None, analysis: Any = None, sync_each_step: bool = False) -> None:
        self.events: list[CompileEvent] = []
        self.marks: list[Mark] = []
        self.hits = 0
        self.native = native  # the native device's accounting, when one is on for the loop (or once the loop loads its device)
        self.analysis = analysis  # torch_xla's analysis log, when it is on
        self.sync_each_step = sync_each_step
        self._original: Callable[..., Any] | None = None
        self._previous_hook: Callable[[bool], bool] | None = None
        self._step_marker: Any = None
        self._put_back_calls: Callable[[], None] | None = None
        self._put_back_import: Callable[[], None] | None = None
        self._optimizer_hook: Any = None
        self._put_back_graphs: Callable[[], None] | None = None
        self._attribution: Any = None  # lines on or off, when the native device counts by itself (its own log)
        self._graph_hashes: list[str] = []
        self._wrapper_code = dynamo_internals.compile_wrapper_code()

    # --- the hooks ------------------------------------------------------------------------------
    def start(self) -> None:
        global _active
        cls = dynamo_internals.compile_attempts_class()
        self._original = cls.__call__
        cls.__call__ = _observing(self, cls.__call__)
        self._previous_hook = dynamo_internals.set_guard_complete_hook(self._guarded)
        self._put_back_calls = dynamo_internals.observe_compiled_calls(lambda wrapper: self._called(*_wrapped_name(wrapper)))
        self._step_marker = _wrap_step_marker(self)
        if self._step_marker is None:  # the watched code may import torch_xla itself: its syncs are seen from then
            self._put_back_import = _after_import("torch_xla", self._torch_xla_loaded)
        self._optimizer_hook = _optimizer_steps(self)
        self._put_back_graphs = dynamo_internals.observe_backend_graphs(lambda gm: self._graph_hashes.append(graph_hash(gm)))
        _active = self
        self.mark("start")

    def stop(self) -> None:
        global _active
        self.mark("stop")
        if self._attribution is not None:
            self._attribution.accounting.attributing = True  # the accounting as it was
        dynamo_internals.compile_attempts_class().__call__ = self._original
        dynamo_internals.set_guard_complete_hook(self._previous_hook)
        if self._put_back_calls is not None:
            self._put_back_calls()
        _unwrap_step_marker(self._step_marker)
        if self._put_back_import is not None:
            self._put_back_import()
        self._optimizer_hook.remove()
        if self._put_back_graphs is not None:
            self._put_back_graphs()
        _active = None

    def mark(self, kind: str, function: str | None = None, key: str | None = None) -> None:
        """Read the counts now and note why. torch_xla runs programs asynchronously: at a step's boundary
        (a call, a sync, a step mark) the recorder first waits for the device's work in flight, so that
        each execution is counted in the step that launched it, not in the next one (nor in a step of its
        own after the loop's last sync). The block's start and end are settled by its owner."""
        if kind not in ("start", "stop"):
            settled()
        native = self.native.counts() if self.native is not None else None
        seen = len(self.native.events) if self.native is not None else 0
        offset = self.analysis.size() if self.analysis is not None else 0
        self.marks.append(Mark(kind, time.perf_counter(), len(self.events), self.hits, xla_counts(), native, offset, function, seen, key))
        self._attribute(kind, function, native)

    def _attribute(self, kind: str, function: str | None, native: Any) -> None:
        """A device that counts by itself is told, at each mark, whether the next stretch's costs come with their lines."""
        if self.native is None or not hasattr(self.native, "attributing") or kind == "stop":
            return
        if self._attribution is None or self._attribution.accounting is not self.native:
            from neurondev.loops.attribution import Attribution

            self._attribution = Attribution(self.native)
        self._attribution.marked(kind, function, native)

    def _torch_xla_loaded(self) -> None:
        if self._step_marker is None:
            self._step_marker = _wrap_step_marker(self)

    def _guarded(self, hit: bool) -> bool:
        self.hits += bool(hit)
        return self._previous_hook(hit) if self._previous_hook is not None else hit

    def _called(self, function: str, key: str | None) -> None:
        if self.sync_each_step and any(mark.kind == "call" for mark in self.marks):
            _sync()  # the advice applied: the step before this call ends with a sync
        self.mark("call", function, key)

    def optimizer_stepped(self) -> None:
        if self.sync_each_step and "torch_xla" in sys.modules:
            _sync()  # the advice applied: each optimizer step ends with a sync
        self.mark("optimizer")

    def synced(self) -> None:
        """The user's torch_xla.sync(): one of torch_xla's dynamo bridge's own syncs is not one."""
        if not _bridge_sync():
            self.mark("sync")

    # --- what a compile was ---------------------------------------------------------------------
    def observed(self, frame: Any, run: Callable[[], Any]) -> Any:
        """Run dynamo's compile of ``frame`` and keep what it did."""
        top = self._wrapper_frame(sys._getframe(1)) is not None  # a call of a compiled function, not a frame resumed after a break
        if self._attribution is not None:
            self._attribution.compiling()
        earlier = dynamo_internals.compilation_metrics()
        last, graphs, xla = (earlier[-1] if earlier else None), dynamo_internals.graphs_made(), xla_counts()
        hashed, (call_file, call_line) = len(self._graph_hashes), _user_call(sys._getframe(1))
        error: BaseException | None = None
        try:
            return run()
        except BaseException as raised:
            error = raised
            raise
        finally:
            made = _after(dynamo_internals.compilation_metrics(), last)
            event = self._event(frame, made[-1] if made else None, dynamo_internals.graphs_made() - graphs, error, top)
            hashes = tuple(self._graph_hashes[hashed:])
            if not in_neurondev(frame.f_code.co_filename):  # neurondev's own frames (a hook dynamo met) are not the user's compiles
                self.events.append(dataclasses.replace(event, xla=xla, graph_hashes=hashes, call_file=call_file, call_line=call_line))

    def _wrapper_frame(self, frame: Any) -> Any:
        """torch.compile's wrapper frame, when the frames of torch and neurondev from ``frame`` up lead to it:
        the frame being run (or compiled) is a call of a compiled function (a module's call goes through
        torch's own frames first), not a frame resumed after a break; None otherwise."""
        while frame is not None:
            if frame.f_code is self._wrapper_code:
                return frame
            if not (_in_torch(frame.f_code.co_filename) or frame.f_code.co_filename == __file__):
                return None
            frame = frame.f_back
        return None

    def _event(self, frame: Any, metric: Any, graphs: int, error: BaseException | None, top: bool) -> CompileEvent:
        function, file, line = known_as(frame)
        reason = getattr(metric, "recompile_reason", None)
        limit = None
        failed = None
        if error is not None and dynamo_internals.is_recompile_limit(error):
            limit = int(dynamo_internals.dynamo_config().recompile_limit)
        elif error is not None:
            failed = f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0][:200]}"
        index = getattr(metric, "cache_size", None)
        now, owner = _value_now(reason, frame)
        return CompileEvent(function, file, line, index, reason, graphs, limit, failed, now, owner, top, frame.f_lineno)


def graph_hash(gm: Any) -> str:
    """A graph's identity across processes: the hash of its Python code (the same code, the same graph)."""
    import hashlib

    return hashlib.sha1(gm.code.encode()).hexdigest()[:12]


def _user_call(frame: Any) -> tuple[str | None, int | None]:
    """The user's line that called the frame being compiled: the first frame, from its caller outwards, of the program
    (not torch's, torch_xla's, neurondev's or the standard library's: a compiled nn.Module's forward is torch's, the
    loop's call is the user's)."""
    while frame is not None:
        if is_program_file(frame.f_code.co_filename):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None, None


def _after(metrics: list[Any], last: Any) -> list[Any]:
    """The records dynamo kept after ``last`` (it keeps the latest 64: count by identity, not by length)."""
    positions = [i for i, metric in enumerate(metrics) if metric is last]
    return metrics[positions[-1] + 1 :] if positions else (metrics if last is None else metrics[-1:])


def _observing(recorder: Recorder, original: Callable[..., Any]) -> Callable[..., Any]:
    def __call__(self: Any, frame: Any, cache_entry: Any, hooks: Any, frame_state: Any, *, skip: int = 0) -> Any:
        return recorder.observed(frame, lambda: original(self, frame, cache_entry, hooks, frame_state, skip=skip + 1))

    return __call__


def _wrap_step_marker(recorder: Recorder) -> Any:
    """Wrap torch_xla's step marker (what torch_xla.sync() and xm.mark_step() call), when torch_xla is loaded."""
    if "torch_xla" not in sys.modules:
        return None
    return torch_xla_hooks.wrap_xla_step_marker(recorder.synced)


def _optimizer_steps(recorder: Recorder) -> Any:
    """Mark each step of any optimizer (torch's global post-step hook); the handle removes it."""
    from torch.optim.optimizer import register_optimizer_step_post_hook

    return register_optimizer_step_post_hook(lambda optimizer, args, kwargs: recorder.optimizer_stepped())


def _after_import(name: str, loaded: Callable[[], None]) -> Callable[[], None]:
    """Call ``loaded`` once module ``name`` has been imported (by anyone, later); returns the undo."""
    import importlib.abc
    import importlib.machinery

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
            if fullname != name:
                return None
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is None or spec.loader is None:
                return spec
            execute = spec.loader.exec_module

            def exec_module(module: Any) -> None:
                execute(module)
                loaded()

            spec.loader.exec_module = exec_module  # type: ignore[method-assign]
            return spec

    finder = Finder()
    sys.meta_path.insert(0, finder)
    return lambda: sys.meta_path.remove(finder) if finder in sys.meta_path else None


def _unwrap_step_marker(put_back: Any) -> None:
    if put_back is not None:
        put_back()


def _bridge_sync() -> bool:
    """Whether the sync being made comes from torch_xla's dynamo bridge (syncing a graph's lazy inputs)."""
    frame: Any = sys._getframe(1)
    while frame is not None:
        file = frame.f_code.co_filename
        if "_dynamo" in file and "torch_xla" in file:
            return True
        if not (_in_torch(file) or file in (__file__, torch_xla_hooks.__file__)):  # torch's frames, and our step marker's wrapper
            return False
        frame = frame.f_back
    return False


def _sync() -> None:
    import torch_xla

    torch_xla.sync()


def active() -> Recorder | None:
    """The recorder of the watch that is on, if any (watches do not nest)."""
    return _active


def xla_counts() -> Any:
    """torch_xla's counters now, when the user's code has loaded torch_xla (never loaded here); else None."""
    if "torch_xla" not in sys.modules:
        return None
    from neurondev.xla import counters

    return counters.counts()


def settled() -> None:
    """Wait for the XLA device's work in flight, when the watched code is using one (never starts it)."""
    counts = xla_counts()
    if counts is None or not (counts.executions or counts.transfers_to_device):
        return
    from neurondev.xla import counters

    counters.settle()


def _wrapped_name(caller: Any) -> tuple[str, str | None]:
    """The function torch.compile's wrapper (the frame ``caller``) calls, as its user knows it, and its identity (its
    code's file and first line: two lambdas share a name, never a code object)."""
    fn = caller.f_locals.get("fn")
    owner = getattr(fn, "__self__", None)
    if _is_module(owner) or _is_module(fn):  # a compiled module: torch.compile wraps its call
        fn = getattr(type(owner if _is_module(owner) else fn), "forward", fn)
    function = getattr(fn, "__func__", fn)
    if isinstance(function, types.FunctionType):
        inner = _unwrapped(function)
        return _qualified(inner), f"{inner.__code__.co_filename}:{inner.__code__.co_firstlineno}"
    name = type(fn).__name__ if fn is not None else "compiled code"
    return name, name


def known_as(frame: Any) -> tuple[str, str, int]:
    """(qualified name, file, line) of the function a compiled frame is, as its user knows it: the
    function a decorator's (or torch's own) wrapper calls, or the function a resumed frame (after a break) belongs to."""
    code = frame.f_code
    if "<locals>" in code.co_qualname:
        wrapped = _wrapped(frame)
        if wrapped is not None:
            inner = wrapped.__code__
            return _qualified(wrapped), inner.co_filename, inner.co_firstlineno
    resumed = dynamo_internals.resumed_function(code.co_name)
    if resumed is not None:
        name, line = resumed
        return f"{name} (after the break at line {line})", code.co_filename, line
    return code.co_qualname, code.co_filename, code.co_firstlineno


def _qualified(function: types.FunctionType) -> str:
    return function.__qualname__


def _wrapped(frame: Any) -> types.FunctionType | None:
    """The function a wrapper's closure holds (a bound method's function: an nn.Module's forward), followed
    through further wrappers to one defined at a module's or a class's top level (``LlamaForCausalLM.forward``)."""
    locals_ = frame.f_locals
    found = [locals_.get(name) for name in frame.f_code.co_freevars]
    torch_wrapper = _in_torch(frame.f_code.co_filename)  # torch's own wrapper of a module call: the module's forward
    candidates = [_forward_of(value) if torch_wrapper else getattr(value, "__func__", value) for value in found if callable(value)]
    functions = [value for value in candidates if isinstance(value, types.FunctionType)]
    for function in functions:
        inner = _unwrapped(function)
        if "<locals>" not in inner.__code__.co_qualname and not _in_torch(inner.__code__.co_filename):
            return inner
    return functions[0] if functions else None


def _forward_of(value: Any) -> Any:
    """A module's ``forward`` function for a module (torch wraps module calls), a method's function, or the value."""
    forward = getattr(type(value), "forward", None) if _is_module(value) else None
    return forward if forward is not None else getattr(value, "__func__", value)


def _is_module(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.nn.Module)


def _in_torch(file: str) -> bool:
    return any(part in file for part in _TORCH_PARTS)


def _unwrapped(function: types.FunctionType, depth: int = 8) -> types.FunctionType:
    """Through ``functools.wraps`` (``__wrapped__``) and closures to a function whose own code is not a
    wrapper's (a wrapper made by ``functools.wraps`` carries the wrapped name, not its code)."""
    while depth and ("<locals>" in function.__code__.co_qualname or _in_torch(function.__code__.co_filename)):
        depth -= 1
        inner = getattr(function, "__wrapped__", None)
        if not isinstance(inner, types.FunctionType):
            in_torch = _in_torch(function.__code__.co_filename)  # torch's own wrapper of a module call: the module's forward
            cells = [cell.cell_contents for cell in function.__closure__ or () if _bound(cell)]
            values = [_forward_of(value) if in_torch else getattr(value, "__func__", value) for value in cells]
            inner = next((value for value in values if isinstance(value, types.FunctionType)), None)
        if inner is None:
            break
        function = inner
    return function


def _bound(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _value_now(reason: str | None, frame: Any) -> tuple[str | None, str | None]:
    """The value a guarded name (``lr == 0.1``) holds now, read from the frame, and the file of the class of
    the object that holds it when that is an attribute of a library's object; (None, None) for other guards."""
    text, _ = dynamo_internals.guard_reason(reason or "")
    match = _GUARDED.match(text)
    if match is None or "tensor '" in text:
        return None, None
    expression = re.sub(r"\b[LG]\['([^']+)'\]", r"\1", match["expression"].strip())
    try:
        tree = ast.parse(expression, mode="eval").body
        value = _evaluate(tree, frame.f_locals, frame.f_globals)
        owner = _evaluate(tree.value, frame.f_locals, frame.f_globals) if isinstance(tree, ast.Attribute) else None
    except Exception:  # a guard on something else than names, attributes and constant subscripts: not read
        return None, None
    owner_file = getattr(sys.modules.get(type(owner).__module__), "__file__", None) if owner is not None else None
    return repr(value)[:80], owner_file


def _evaluate(node: ast.AST, local: Mapping[str, Any], global_: Mapping[str, Any]) -> Any:
    """Names, attributes and constant subscripts only: nothing is called, nothing is changed."""
    if isinstance(node, ast.Name):
        return local[node.id] if node.id in local else global_[node.id]
    if isinstance(node, ast.Attribute):
        return getattr(_evaluate(node.value, local, global_), node.attr)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return _evaluate(node.value, local, global_)[node.slice.value]
    raise ValueError("not a plain reference")
