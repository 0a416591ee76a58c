"""WatchData: every compile across a loop (or the calls of a watched function), step by step, why, and what to write instead.

``with neurondev.watch() as w: loop()`` records while the block runs; when the block exits (an exception
inside still leaves the record, and propagates unchanged) the record is frozen: ``w.record``, a
``WatchRecord`` no later call changes. ``w = neurondev.watch(fn)`` wraps a callable: each call is
recorded as one step and the frozen record is made again after each call. Tables, the summary, the
card and JSON are the layers' above (``render.display.WatchDisplay``; the public ``neurondev.Watch`` is
composed in ``neurondev.results``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self

from neurondev._compat.out_of_tree import privateuse1_name
from neurondev.errors import InvalidOptionError, NestedWatchError, NotCallableError
from neurondev.loops.causes import Advice
from neurondev.loops.record import CALL_COLUMNS, COMPILE_COLUMNS, STEP_COLUMNS, Compile, Gap, WatchRecord, raised_by, snapshot
from neurondev.loops.recorder import Recorder, active
from neurondev.loops.sync_points import settled
from neurondev.trace.source import display_name

__all__ = ["CALL_COLUMNS", "COMPILE_COLUMNS", "STEP_COLUMNS", "Compile", "WatchData"]

_NO_XLA = Gap("torch_xla not loaded")


class WatchData:
    """A watch over a loop, or over the calls of a function (``neurondev.watch(fn)``); see the module docstring."""

    def __init__(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        sync_each_step: bool = False,
        xla_analysis: bool = False,
        record: WatchRecord | None = None,
    ) -> None:
        """``record``: a finished watch that shows it (a watch the command ran, say), instead of a watch to run."""
        if fn is not None and not callable(fn):
            raise NotCallableError(
                f"watch takes the function to watch, or nothing (with neurondev.watch(): ...), got {type(fn).__name__}; "
                "pass the function itself: neurondev.watch(step), not neurondev.watch(step(x))"
            )
        for name, value in (("sync_each_step", sync_each_step), ("xla_analysis", xla_analysis)):
            if not isinstance(value, bool):
                raise InvalidOptionError(f"{name} is True or False, got {value!r}")
        self._fn = fn
        self._options: dict[str, Any] = {"sync_each_step": sync_each_step, "xla_analysis": xla_analysis}
        self._recorder: Recorder | None = None
        self._unhook: Callable[[], None] = _nothing
        self._gaps: dict[str, Gap | None] = {}
        if record is not None and (fn is not None or not isinstance(record, WatchRecord)):
            raise InvalidOptionError(
                f"record is the WatchRecord of a finished watch (w.record), with no function, got {type(record).__name__}"
                f"{' and a function' if fn is not None else ''}: neurondev.Watch(record=w.record)"
            )
        self._state = "new" if record is None else "done"
        self._record: WatchRecord | None = record
        self.name = record.name if record is not None else "the block" if fn is None else display_name(fn)
        if fn is not None:
            self.__wrapped__ = fn
            self.__doc__ = getattr(fn, "__doc__", None)

    _OWN = frozenset({"_fn", "_options", "_recorder", "_unhook", "_gaps", "_state", "_record", "name", "__wrapped__", "__doc__"})

    def __setattr__(self, name: str, value: Any) -> None:
        """Its own attributes only: a Watch takes no new ones (what it found is ``record``, a frozen snapshot)."""
        if name not in self._OWN:
            raise AttributeError(f"a Watch takes no new attributes ({name!r}); what it found is w.record, a frozen snapshot")
        object.__setattr__(self, name, value)

    @classmethod
    def of(cls, record: WatchRecord) -> Self:
        """A finished watch that shows ``record`` (the command's, with its advice checked by a second run)."""
        return cls(record=record)

    # --- recording ------------------------------------------------------------------------------
    def __enter__(self) -> Self:
        if self._fn is not None:
            raise InvalidOptionError("a watch of a function records its calls: call it (w(x)); use neurondev.watch() for a block")
        if self._state != "new":
            raise InvalidOptionError("this watch has recorded its block already: start another with neurondev.watch()")
        self._start()
        return self

    def __exit__(self, kind: Any, error: BaseException | None, trace: Any) -> None:
        self._stop(error)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fn is None:
            raise NotCallableError("neurondev.watch() is a context manager: write `with neurondev.watch() as w:` around the loop")
        self._start()
        error: BaseException | None = None
        try:
            return self._fn(*args, **kwargs)
        except BaseException as raised:
            error = raised
            raise
        finally:
            self._stop(error)

    def step(self) -> None:
        """Mark the end of a step of the loop (steps are then yours, not the calls of the compiled function)."""
        if self._state != "recording" or self._recorder is None or self._fn is not None:
            raise InvalidOptionError("w.step() marks a step of the loop inside `with neurondev.watch() as w:`, while it records")
        self._recorder.mark("step")

    def _start(self) -> None:
        if active() is not None:
            raise NestedWatchError("a watch is already on: watches do not nest (the outer one sees every compile); remove the inner one")
        settled()  # work launched before the block (or the call) finishes, and is counted, before it
        if self._recorder is None:
            self._recorder = self._new_recorder()
        if self._recorder.native is not None:
            self._recorder.native.__enter__()
        else:
            self._unhook = _when_a_device_loads(self._device_loaded)
        self._recorder.start()
        self._state = "recording"

    def _device_loaded(self) -> None:
        """The watched code loaded a native device (renamed PrivateUse1, as TorchNeuron's import and
        neurondev.host_device() do): its accounting starts now, for what runs on it from here."""
        native, self._gaps["native"] = _native_accounting()
        if native is not None and self._recorder is not None and self._recorder.native is None and self._state == "recording":
            native.__enter__()
            self._recorder.native = native

    def _stop(self, error: BaseException | None) -> None:
        settled()  # the block's (or the call's) executions counted as its own (it waits, and changes no value)
        self._unhook()
        self._unhook = _nothing
        recorder = self._recorder
        assert recorder is not None
        recorder.stop()
        if recorder.native is not None:
            recorder.native.__exit__(None, None, None)
        self._state = "done"
        raised = raised_by(error, len(recorder.events))
        gaps = {**self._gaps, "xla": _NO_XLA if recorder.marks[-1].xla is None else None}
        self._record = snapshot(recorder, name=self.name, watched_function=self._fn is not None, gaps=gaps, raised=raised)

    def _new_recorder(self) -> Recorder:
        from neurondev.xla import analysis

        if self._options["xla_analysis"]:
            analysis.enable()
        on, state, level = analysis.status()
        self._gaps["analysis"] = None if on else Gap("analysis to stderr" if state == "to stderr" else "analysis off", level=level)
        native, self._gaps["native"] = _native_accounting()
        log = analysis.open_log()
        stop = self._options.get("stop_after")
        recorder = Recorder(native=native, analysis=log, sync_each_step=self._options["sync_each_step"], stop_after=stop)
        recorder.on_mark = self._options.get("on_mark")
        return recorder

    # --- what was recorded (the frozen record, or, while recording, what is there so far) ------------
    @property
    def record(self) -> WatchRecord:
        """The frozen record (made when the block exits, and after each call of a watched function)."""
        if self._record is not None and self._state in ("done", "new"):
            return self._record
        if self._recorder is None:
            raise InvalidOptionError("this watch has recorded nothing yet: run the block (or call the function) first")
        marks = self._recorder.marks
        gaps = {**self._gaps, "xla": _NO_XLA if marks and marks[-1].xla is None else None}
        return snapshot(self._recorder, name=self.name, watched_function=self._fn is not None, gaps=gaps, raised=None)

    @property
    def state(self) -> str:
        """'new', 'recording' or 'done'."""
        return self._state

    @property
    def compiles_read(self) -> tuple[Compile, ...]:
        return self.record.compiles

    @property
    def compiles(self) -> Any:
        """A pandas DataFrame, one row per compile (``COMPILE_COLUMNS``)."""
        import pandas

        return pandas.DataFrame([c.row() for c in self.record.compiles], columns=list(COMPILE_COLUMNS))

    @property
    def steps(self) -> Any:
        """A pandas DataFrame, one row per step (``STEP_COLUMNS``): compiles, XLA programs and their triggers, transfers."""
        import pandas

        return pandas.DataFrame(self.record.step_rows(), columns=list(STEP_COLUMNS))

    def cost_table(self) -> Any:
        """A pandas DataFrame, one row per line and cause (``COST_COLUMNS``), the costliest first: the rule, where, the
        cause, whose clock timed it (dynamo's or torch_xla's), events, seconds, share of the watched wall time, per step."""
        import pandas

        from neurondev.loops.costs import COST_COLUMNS, costs

        return pandas.DataFrame([cost.row() for cost in costs(self.record)], columns=list(COST_COLUMNS))

    @property
    def calls(self) -> Any:
        """A pandas DataFrame, one row per call of the watched function (``CALL_COLUMNS``); empty for a block."""
        import pandas

        return pandas.DataFrame(self.record.call_rows(), columns=list(CALL_COLUMNS))

    @property
    def steady_state(self) -> int | str:
        """The step (call) after which nothing compiled, dynamo or XLA (0: nothing compiled at all), "never" (the
        last step compiled, a function's last call did, or dynamo gave up at its recompile limit), or "one step"."""
        return self.record.steady_state

    @property
    def reached_steady_state(self) -> bool:
        return self.record.reached_steady_state

    @property
    def advice(self) -> tuple[Advice, ...]:
        return self.record.advice

    @property
    def xla_gap(self) -> Gap | None:
        """Why the XLA figures are empty, when they are (``Gap``; ``render.sentences.gap_text`` says it)."""
        return self.record.xla_gap

    @property
    def seconds(self) -> float:
        return self.record.seconds

    def __repr__(self) -> str:
        if self._recorder is None and self._record is None:
            return f"<Watch of {self.name}: not run yet>"
        record = self.record
        return (
            f"<Watch of {self.name}: {len(record.compiles)} compile(s), {len(record.steps)} step(s), steady state: {record.steady_state}>"
        )


def _nothing() -> None:
    pass


def _when_a_device_loads(loaded: Callable[[], None]) -> Callable[[], None]:
    """Call ``loaded`` after the watched code renames PrivateUse1 (a native device loading); returns the undo."""
    import torch.utils
    import torch.utils.backend_registration as registration

    original = registration.rename_privateuse1_backend

    def rename_privateuse1_backend(backend_name: str) -> None:
        original(backend_name)
        loaded()

    registration.rename_privateuse1_backend = torch.utils.rename_privateuse1_backend = rename_privateuse1_backend

    def undo() -> None:
        registration.rename_privateuse1_backend = torch.utils.rename_privateuse1_backend = original

    return undo


def _native_accounting() -> tuple[Any, Gap | None]:
    """An accounting of the native device loaded in this process for the loop (None: there is none), and the gap when
    it cannot count (none: the observer counts on every torch, around compiled code too)."""
    name = privateuse1_name()
    if name == "privateuseone":
        return None, None
    from neurondev.native.choice import accounting_for

    return accounting_for(name), None
