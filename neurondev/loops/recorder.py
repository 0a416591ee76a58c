"""Record every dynamo compile of any frame, whatever the backend, and torch_xla's counts around each.

While recording, dynamo's per-frame compile entry (``ConvertFrameAssert.__call__``, called on every
cache miss) runs through a wrapper that notes the frame, then calls it unchanged; dynamo's own
``CompilationMetrics`` give the compile's index and the guard that failed; dynamo's guard-complete
hook counts the entries of compiled code (chained to any hook already set). Nothing else is changed:
no dynamo reset, no config, no logging. Everything is put back when recording stops.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import sys
import time
import types
from collections.abc import Callable, Mapping
from typing import Any

from neurondev import _compat

__all__ = ["CallRecord", "CompileEvent", "Recorder", "active", "known_as", "settled", "since", "xla_counts"]

_RESUME = re.compile(r"torch_dynamo_resume_in_(?P<name>\w+?)_at_(?P<line>\d+)$")
_GUARDED = re.compile(r"^\s*(?:\d+/\d+:\s*)?(?P<expression>.+?)\s*==\s*(?P<value>[^#]+?)\s*(?:#|$)")
_active: Recorder | None = None


@dataclasses.dataclass(frozen=True)
class CompileEvent:
    """One compile dynamo attempted: the function as the user knows it (``LlamaForCausalLM.forward``,
    not a decorator's ``wrapped_func``) and where it is defined, the compile's index for that frame (0
    first, then recompiles), dynamo's reason (the guard that failed), the graphs it made, the
    recompile limit when dynamo refused (the frame then runs uncompiled), the value now held by a
    guarded expression (``lr``), when it started, torch_xla's counts then, and the watched call it
    happened in."""

    function: str
    file: str
    line: int
    index: int | None
    reason: str | None
    graphs: int
    limit: int | None = None
    failed: str | None = None
    now: str | None = None
    at: float = 0.0
    xla: Any = None
    call: int | None = None
    hits_before: int = 0


@dataclasses.dataclass(frozen=True)
class CallRecord:
    """One call of a watched function: its number, the compiles in it, torch_xla's counts before and after, seconds."""

    call: int
    compiles: int
    graphs: int
    xla: Any
    seconds: float


class Recorder:
    """Collects CompileEvents (and, for a watched callable, CallRecords) between ``start`` and ``stop``."""

    def __init__(self) -> None:
        self.events: list[CompileEvent] = []
        self.calls: list[CallRecord] = []
        self.hits = 0
        self.call: int | None = None
        self.started_at = self.stopped_at = 0.0
        self.xla_at_start: Any = None
        self.xla_at_stop: Any = None
        self._original: Callable[..., Any] | None = None
        self._previous_hook: Callable[[bool], bool] | None = None

    # --- the hooks ------------------------------------------------------------------------------
    def start(self) -> None:
        global _active
        cls = _compat.compile_attempts_class()
        self._original = cls.__call__
        cls.__call__ = _observing(self, cls.__call__)
        self._previous_hook = _compat.set_guard_complete_hook(self._guarded)
        _active = self
        if not self.started_at:  # a watched function starts at each call: the record starts at the first
            self.started_at, self.xla_at_start = time.perf_counter(), xla_counts()

    def stop(self) -> None:
        global _active
        self.stopped_at, self.xla_at_stop = time.perf_counter(), xla_counts()
        _compat.compile_attempts_class().__call__ = self._original
        _compat.set_guard_complete_hook(self._previous_hook)
        _active = None

    def _guarded(self, hit: bool) -> bool:
        self.hits += bool(hit)
        return self._previous_hook(hit) if self._previous_hook is not None else hit

    # --- what a compile was ---------------------------------------------------------------------
    def observed(self, frame: Any, run: Callable[[], Any]) -> Any:
        """Run dynamo's compile of ``frame`` and keep what it did."""
        earlier = _compat.compilation_metrics()
        last, graphs = (earlier[-1] if earlier else None), _compat.graphs_made()
        at, xla, hits = time.perf_counter(), xla_counts(), self.hits
        error: BaseException | None = None
        try:
            return run()
        except BaseException as raised:
            error = raised
            raise
        finally:
            made = _after(_compat.compilation_metrics(), last)
            self.events.append(self._event(frame, made[-1] if made else None, _compat.graphs_made() - graphs, error, at, xla, hits))

    def _event(self, frame: Any, metric: Any, graphs: int, error: BaseException | None, at: float, xla: Any, hits: int) -> CompileEvent:
        function, file, line = known_as(frame)
        reason = getattr(metric, "recompile_reason", None)
        limit = None
        failed = None
        if error is not None and _compat.is_recompile_limit(error):
            import torch

            limit = int(torch._dynamo.config.recompile_limit)
        elif error is not None:
            failed = f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0][:200]}"
        index = getattr(metric, "cache_size", None)
        return CompileEvent(function, file, line, index, reason, graphs, limit, failed, _value_now(reason, frame), at, xla, self.call, hits)


def _after(metrics: list[Any], last: Any) -> list[Any]:
    """The records dynamo kept after ``last`` (it keeps the latest 64: count by identity, not by length)."""
    positions = [i for i, metric in enumerate(metrics) if metric is last]
    return metrics[positions[-1] + 1 :] if positions else (metrics if last is None else metrics[-1:])


def _observing(recorder: Recorder, original: Callable[..., Any]) -> Callable[..., Any]:
    def __call__(self: Any, frame: Any, cache_entry: Any, hooks: Any, frame_state: Any, *, skip: int = 0) -> Any:
        return recorder.observed(frame, lambda: original(self, frame, cache_entry, hooks, frame_state, skip=skip + 1))

    return __call__


def active() -> Recorder | None:
    """The recorder of the watch that is on, if any (watches do not nest)."""
    return _active


def xla_counts() -> Any:
    """torch_xla's counters now, when the user's code has loaded torch_xla (never loaded here); else None."""
    if "torch_xla" not in sys.modules:
        return None
    from neurondev.xla import counters

    return counters.counts()


def since(before: Any, after: Any) -> Any:
    """``after - before`` of two counter readings; a reading taken before torch_xla was loaded counts as zero
    (nothing had run on XLA yet); None when torch_xla was never loaded."""
    if after is None:
        return None
    if before is None:
        from neurondev.runs.counts import Counts

        before = Counts()
    return after - before


def settled() -> None:
    """Wait for the XLA device's work in flight, when the watched code is using one (never starts it)."""
    counts = xla_counts()
    if counts is None or not (counts.executions or counts.transfers_to_device):
        return
    from neurondev.xla import counters

    counters.settle()


def known_as(frame: Any) -> tuple[str, str, int]:
    """(qualified name, file, line) of the function a compiled frame is, as its user knows it: the
    function a decorator's wrapper calls, or the function a resumed frame (after a break) belongs to."""
    code = frame.f_code
    if "<locals>" in code.co_qualname:
        wrapped = _wrapped(frame)
        if wrapped is not None:
            inner = wrapped.__code__
            return wrapped.__qualname__, inner.co_filename, inner.co_firstlineno
    resumed = _RESUME.match(code.co_name)
    if resumed:
        return f"{resumed['name']} (after the break at line {resumed['line']})", code.co_filename, int(resumed["line"])
    return code.co_qualname, code.co_filename, code.co_firstlineno


def _wrapped(frame: Any) -> types.FunctionType | None:
    """The function a wrapper's closure holds, followed through further wrappers to one defined at a
    module's or a class's top level (``LlamaForCausalLM.forward``)."""
    locals_ = frame.f_locals
    found = [locals_.get(name) for name in frame.f_code.co_freevars]
    candidates = [getattr(value, "__func__", value) for value in found if callable(value)]
    functions = [value for value in candidates if isinstance(value, types.FunctionType)]
    for function in functions:
        inner = _unwrapped(function)
        if "<locals>" not in inner.__code__.co_qualname:
            return inner
    return functions[0] if functions else None


def _unwrapped(function: types.FunctionType, depth: int = 8) -> types.FunctionType:
    """Through ``functools.wraps`` (``__wrapped__``) and closures to a function whose own code is not a
    wrapper's (a wrapper made by ``functools.wraps`` carries the wrapped name, not its code)."""
    while depth and "<locals>" in function.__code__.co_qualname:
        depth -= 1
        inner = getattr(function, "__wrapped__", None)
        if not isinstance(inner, types.FunctionType):
            cells = [cell.cell_contents for cell in function.__closure__ or () if _bound(cell)]
            inner = next((value for value in cells if isinstance(value, types.FunctionType)), None)
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


def _value_now(reason: str | None, frame: Any) -> str | None:
    """The value a guarded name (``lr == 0.1``) holds now, read from the frame; None for other guards."""
    match = _GUARDED.match(reason or "")
    if match is None or "tensor '" in (reason or ""):
        return None
    expression = re.sub(r"\b[LG]\['([^']+)'\]", r"\1", match["expression"].strip())
    try:
        value = _evaluate(ast.parse(expression, mode="eval").body, frame.f_locals, frame.f_globals)
    except Exception:  # a guard on something else than names, attributes and constant subscripts: not read
        return None
    return repr(value)[:80]


def _evaluate(node: ast.AST, local: Mapping[str, Any], global_: Mapping[str, Any]) -> Any:
    """Names, attributes and constant subscripts only: nothing is called, nothing is changed."""
    if isinstance(node, ast.Name):
        return local[node.id] if node.id in local else global_[node.id]
    if isinstance(node, ast.Attribute):
        return getattr(_evaluate(node.value, local, global_), node.attr)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return _evaluate(node.value, local, global_)[node.slice.value]
    raise ValueError("not a plain reference")
