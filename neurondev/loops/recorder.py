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

This module holds the recorder and its records and hears dynamo's compiles and calls; what a frame is, as its user
knows it, is read in ``neurondev.loops.frames``; the step marker, the optimizers and torch_xla's counts are heard
through ``neurondev.loops.sync_points``; a native device's events are its accounting's (``neurondev.loops.attribution``
tells it, at each mark, whether the next stretch's costs come with their lines).
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from neurondev._compat import dynamo as dynamo_internals
from neurondev._compat import torch_xla_hooks
from neurondev.loops.annotations import BlockRange, profiler_range
from neurondev.loops.frames import graph_hash, in_torch, known_as, metrics_after, user_call, value_now, wrapped_name
from neurondev.loops.sync_points import after_import, optimizer_steps, settled, sync, unwrap_step_marker, wrap_step_marker, xla_counts
from neurondev.loops.workers import Workers, hear_workers
from neurondev.trace.source import in_neurondev, short_location

__all__ = ["CompileEvent", "Mark", "Recorder", "active"]

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
    seconds: float | None = None  # dynamo's own clock of the whole frame's compile (its CompilationMetrics)
    started: float | None = None  # when dynamo began it, by its clock (seconds since the epoch)


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
    grad: bool | None = None  # a call's: whether gradients were on (a training call) or off (an evaluation)


class EnoughCalls(BaseException):  # noqa: N818 (not an error: the end of a run asked for; BaseException: no except Exception stops it)
    """The run has made the calls it was asked to make (``Recorder.stop_after``): raised at the next call, before it."""


class Recorder:
    """Collects CompileEvents and Marks between ``start`` and ``stop`` (mutable: a Watch turns it into a frozen record)."""

    def __init__(self, *, native: Any = None, analysis: Any = None, sync_each_step: bool = False, stop_after: int | None = None) -> None:
        self.events: list[CompileEvent] = []
        self.looked_at: list[CompileEvent] = []  # frames dynamo made no graph of (skipped, or traced into nothing): no compiles
        self.other_threads: list[CompileEvent] = []  # compiles of threads other than the watched one: not the loop's
        self._graphless: dict[int, Any] = {}  # code dynamo made no graph of (a library's decorators around a forward)
        self.marks: list[Mark] = []
        self.thread = threading.get_ident()  # the thread that opened the watch (or called the watched function)
        self.hits = 0
        self.calls = 0  # calls of compiled functions on the watched thread (each a 'call' mark): counted, not searched for
        self.native = native  # the native device's accounting, when one is on for the loop (or once the loop loads its device)
        self.analysis = analysis  # torch_xla's analysis log, when it is on
        self.sync_each_step = sync_each_step
        self.stop_after = stop_after  # calls of compiled functions after which the run stops (the command's second runs)
        self._original: Callable[..., Any] | None = None
        self._previous_hook: Callable[[bool], bool] | None = None
        self._step_marker: Any = None
        self._put_back_calls: Callable[[], None] | None = None
        self._put_back_import: Callable[[], None] | None = None
        self._optimizer_hook: Any = None
        self._put_back_graphs: Callable[[], None] | None = None
        self._attribution: Any = None  # lines on or off, when the native device counts by itself (its own log)
        self._graph_hashes: list[str] = []
        self.workers: list[Workers] = []  # worker processes the script started (torch.multiprocessing): not watched
        self._put_back_workers: Callable[[], None] | None = None
        self._wrapper_code = dynamo_internals.compile_wrapper_code()
        # a mark's ``at`` plus this: seconds since the epoch (dynamo's and torch_xla's clocks)
        self.epoch = time.time() - time.perf_counter()
        self.on_mark: Callable[[], None] | None = None  # called after each step's mark (the command's journal of the record)
        self._block = BlockRange("neurondev: watched block")  # a range of the user's torch.profiler trace, when one records

    # --- the hooks ------------------------------------------------------------------------------
    def start(self) -> None:
        global _active
        self.thread = threading.get_ident()
        cls = dynamo_internals.compile_attempts_class()
        self._original = cls.__call__
        cls.__call__ = _observing(self, cls.__call__)
        self._previous_hook = dynamo_internals.set_guard_complete_hook(self._guarded)
        self._put_back_calls = dynamo_internals.observe_compiled_calls(lambda wrapper: self._called(*wrapped_name(wrapper)))
        self._step_marker = wrap_step_marker(self.synced)
        if self._step_marker is None:  # the watched code may import torch_xla itself: its syncs are seen from then
            self._put_back_import = after_import("torch_xla", self._torch_xla_loaded)
        self._optimizer_hook = optimizer_steps(self.optimizer_stepped)
        self._put_back_graphs = dynamo_internals.observe_backend_graphs(lambda gm: self._graph_hashes.append(graph_hash(gm)))
        self._put_back_workers = hear_workers(self.workers.append)
        _active = self
        self._block.start()
        self.mark("start")

    def stop(self) -> None:
        global _active
        self.mark("stop")
        self._block.stop()
        if self._attribution is not None:
            self._attribution.accounting.attributing = True  # the accounting as it was
        dynamo_internals.compile_attempts_class().__call__ = self._original
        dynamo_internals.set_guard_complete_hook(self._previous_hook)
        if self._put_back_calls is not None:
            self._put_back_calls()
        unwrap_step_marker(self._step_marker)
        if self._put_back_import is not None:
            self._put_back_import()
        self._optimizer_hook.remove()
        if self._put_back_graphs is not None:
            self._put_back_graphs()
        if self._put_back_workers is not None:
            self._put_back_workers()
        _active = None

    def mark(self, kind: str, function: str | None = None, key: str | None = None, grad: bool | None = None) -> None:
        """Read the counts now and note why. torch_xla runs programs asynchronously: at a step's boundary
        (a call, a sync, a step mark) the recorder first waits for the device's work in flight, so that
        each execution is counted in the step that launched it, not in the next one (nor in a step of its
        own after the loop's last sync). The block's start and end are settled by its owner."""
        if kind not in ("start", "stop"):
            settled()
        native = self.native.counts() if self.native is not None else None
        seen = len(self.native.events) if self.native is not None else 0
        offset = self.analysis.size() if self.analysis is not None else 0
        self.marks.append(
            Mark(kind, time.perf_counter(), len(self.events), self.hits, xla_counts(), native, offset, function, seen, key, grad)
        )
        self._attribute(kind, function, native)
        if self.on_mark is not None and kind not in ("start", "stop"):
            self.on_mark()

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
            self._step_marker = wrap_step_marker(self.synced)

    def _guarded(self, hit: bool) -> bool:
        self.hits += bool(hit) and self._watched_thread()
        return self._previous_hook(hit) if self._previous_hook is not None else hit

    def _watched_thread(self) -> bool:
        """Whether this is the thread the watch records (another thread's calls, syncs and steps are not the loop's)."""
        return threading.get_ident() == self.thread

    def _called(self, function: str, key: str | None) -> None:
        if not self._watched_thread():
            return
        if self.stop_after is not None and self.calls >= self.stop_after:
            raise EnoughCalls(self.stop_after)  # before the call: the run ends as if the script had
        if self.sync_each_step and self.calls:
            sync()  # the advice applied: the step before this call ends with a sync
        import torch

        self.calls += 1
        self.mark("call", function, key, torch.is_grad_enabled())

    def optimizer_stepped(self) -> None:
        if not self._watched_thread():
            return
        if self.sync_each_step and "torch_xla" in sys.modules:
            sync()  # the advice applied: each optimizer step ends with a sync
        self.mark("optimizer")

    def synced(self) -> None:
        """The user's torch_xla.sync(): one of torch_xla's dynamo bridge's own syncs is not one."""
        if not _bridge_sync() and self._watched_thread():
            self.mark("sync")

    # --- what a compile was ---------------------------------------------------------------------
    def observed(self, frame: Any, run: Callable[[], Any]) -> Any:
        """Run dynamo's compile of ``frame`` and keep what it did."""
        top = self._wrapper_frame(sys._getframe(1)) is not None  # a call of a compiled function, not a frame resumed after a break
        if self._attribution is not None:
            self._attribution.compiling()
        earlier = dynamo_internals.compilation_metrics()
        last, graphs, xla = (earlier[-1] if earlier else None), dynamo_internals.graphs_made(), xla_counts()
        hashed, (call_file, call_line) = len(self._graph_hashes), user_call(sys._getframe(1))
        error: BaseException | None = None
        try:
            with profiler_range(
                lambda: f"neurondev: dynamo compile of {known_as(frame)[0]} ({short_location(frame.f_code.co_filename, frame.f_lineno)})"
            ):
                return run()
        except BaseException as raised:
            error = raised
            raise
        finally:
            made = metrics_after(dynamo_internals.compilation_metrics(), last)
            event = self._event(frame, made[-1] if made else None, dynamo_internals.graphs_made() - graphs, error, top)
            hashes = tuple(self._graph_hashes[hashed:])
            if not in_neurondev(frame.f_code.co_filename):  # neurondev's own frames (a hook dynamo met) are not the user's compiles
                self._keep(dataclasses.replace(event, xla=xla, graph_hashes=hashes, call_file=call_file, call_line=call_line))
            if event.graphs == 0 and error is None:
                self._graphless[id(frame.f_code)] = frame.f_code

    def _keep(self, event: CompileEvent) -> None:
        """A compile is what the runtime compiled: a frame dynamo made a graph of, failed on, or gave up at its limit,
        on the watched thread; a frame it skipped or traced into nothing is only looked at (a logging call's frames
        after a break), another thread's compiles are that thread's."""
        if not self._watched_thread():
            self.other_threads.append(event)
        elif event.graphs or event.failed is not None or event.limit is not None:
            self.events.append(event)
        else:
            self.looked_at.append(event)

    def _wrapper_frame(self, frame: Any) -> Any:
        """torch.compile's wrapper frame, when the frames from ``frame`` up lead to it through none running compiled
        code: the frame being run (or compiled) is a call of a compiled function (a module's call goes through
        torch's own frames first, a model's forward through its library's decorators: transformers'), not a frame
        resumed after a break, nor one the compiled code calls after a break (the code of a frame dynamo made no graph
        of, a decorator, passes); None otherwise."""
        compiled: dict[int, Any] | None = None
        while frame is not None:
            code = frame.f_code
            if code is self._wrapper_code:
                return frame
            if not (in_torch(code.co_filename) or code.co_filename == __file__):
                compiled = dynamo_internals.transformed_codes() if compiled is None else compiled  # (only found here: rare)
                made_of = compiled.get(id(code))
                graphless = made_of is not None and self._graphless.get(id(made_of)) is made_of  # a decorator, no graph
                if (made_of is not None and not graphless) or dynamo_internals.resumed_function(code.co_name) is not None:
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
        elif error is not None and not dynamo_internals.is_skipped_frame(error):  # a frame dynamo skips is no compile
            failed = f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0][:200]}"
        index = getattr(metric, "cache_size", None)
        now, owner = value_now(reason, frame)
        event = CompileEvent(function, file, line, index, reason, graphs, limit, failed, now, owner, top, frame.f_lineno)
        seconds, started = dynamo_internals.compile_timing(metric)
        return dataclasses.replace(event, seconds=seconds, started=started)


def _observing(recorder: Recorder, original: Callable[..., Any]) -> Callable[..., Any]:
    def __call__(self: Any, frame: Any, cache_entry: Any, hooks: Any, frame_state: Any, *, skip: int = 0) -> Any:
        return recorder.observed(frame, lambda: original(self, frame, cache_entry, hooks, frame_state, skip=skip + 1))

    return __call__


def _bridge_sync() -> bool:
    """Whether the sync being made comes from torch_xla's dynamo bridge (syncing a graph's lazy inputs)."""
    frame: Any = sys._getframe(1)
    while frame is not None:
        file = frame.f_code.co_filename
        if "_dynamo" in file and "torch_xla" in file:
            return True
        if not (in_torch(file) or file in (__file__, torch_xla_hooks.__file__)):  # torch's frames, and our step marker's wrapper
            return False
        frame = frame.f_back
    return False


def active() -> Recorder | None:
    """The recorder of the watch that is on, if any (watches do not nest)."""
    return _active
