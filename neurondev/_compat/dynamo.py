"""dynamo's internals: backends and aot_autograd, its caches of compiled code, its record of compiles and guards, and
the hooks a watch observes compiles and compiled calls through."""

from __future__ import annotations

import collections
import contextlib
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.fx

from neurondev._compat import hook

__all__ = [
    "aot_autograd",
    "cache_entry_ids",
    "compilation_metrics",
    "compile_attempts_class",
    "compile_timing",
    "compile_wrapper_code",
    "compiled_code_objects",
    "dynamo_break_of",
    "dynamo_config",
    "dynamo_failure",
    "forgotten_backend",
    "graphs_made",
    "guard_reason",
    "is_recompile_limit",
    "is_skipped_frame",
    "lookup_backend",
    "make_boxed_func",
    "observe_backend_graphs",
    "observe_compiled_calls",
    "own_code_state",
    "reset_code",
    "resumed_function",
    "set_guard_complete_hook",
    "transformed_codes",
]


def aot_autograd(**compilers: Any) -> Callable[..., Any]:
    """torch's aot_autograd backend factory (forward/backward compilers)."""
    from torch._dynamo.backends.common import aot_autograd as factory

    return factory(**compilers)


def make_boxed_func(fn: Callable[..., Any]) -> Callable[..., Any]:
    """aot_autograd's boxed calling convention (one list of arguments) for ``fn``."""
    from functorch.compile import make_boxed_func as boxed

    return boxed(fn)


def lookup_backend(name: str) -> Callable[..., Any]:
    """A torch.compile backend by its registered name ('openxla', 'eager', ...)."""
    from torch._dynamo.backends.registry import lookup_backend as lookup

    return lookup(name)


def dynamo_break_of(gm: torch.fx.GraphModule) -> tuple[str, Any] | None:
    """(reason, innermost user frame or None) when dynamo ended ``gm`` at a graph break of its own."""
    reason = getattr(gm, "compile_subgraph_reason", None)
    if reason is None or not reason.graph_break:
        return None
    frame = reason.user_stack[-1] if reason.user_stack else None
    return str(reason.reason), frame


def compiled_code_objects() -> list[Any]:
    """Every code object dynamo has compiled a frame of in this process (and that is still alive)."""
    from torch._dynamo import convert_frame

    return [code for ref in list(convert_frame.input_codes.seen) if (code := ref()) is not None]


def cache_entry_ids(code: Any) -> set[int]:
    """The identities of the cache entries dynamo keeps on ``code`` (one per compiled variant)."""
    from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list

    return {id(entry) for entry in _debug_get_cache_entry_list(code)}


def transformed_codes() -> dict[int, Any]:
    """The code objects dynamo made of the frames it compiled (each cache entry's), by identity, each with the code it
    was made of: a frame running one of them is running compiled code (and, after a graph break, the eager rest)."""
    from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list

    return {id(entry.code): code for code in compiled_code_objects() for entry in _debug_get_cache_entry_list(code)}


def reset_code(code: Any) -> None:
    """Drop every cache entry dynamo keeps on ``code``."""
    from torch._C._dynamo.eval_frame import reset_code as reset

    reset(code)


@contextlib.contextmanager
def forgotten_backend(backend: Any) -> Iterator[None]:
    """After the block, ``backend`` is out of dynamo's record of every backend torch.compile was given (``cached_backends``,
    kept only for ``torch._dynamo.reset`` to reset them, never cleared otherwise): a backend neurondev made for
    one trace would hold what it recorded (the copies of the inputs, the graphs, a model's copy) for the
    process's life, one more copy per explain."""
    try:
        yield
    finally:
        _forget(backend)


def _forget(backend: Any) -> None:
    from torch._dynamo import eval_frame

    cached = getattr(eval_frame, "cached_backends", None)
    if not isinstance(cached, dict):
        return
    for key, value in list(cached.items()):
        if value is backend or getattr(value, "compiler_fn", None) is backend:
            del cached[key]


def compile_attempts_class() -> Any:
    """The class whose ``__call__`` dynamo runs for every frame it compiles (on a cache miss), whatever
    the backend: ``ConvertFrameAssert(frame, cache_entry, hooks, frame_state, *, skip=0)``."""
    from torch._dynamo.convert_frame import ConvertFrameAssert

    return ConvertFrameAssert


@contextlib.contextmanager
def own_code_state() -> Iterator[None]:
    """Dynamo's automatic-dynamic memory (``torch._dynamo.pgo``'s code state, torch 2.9 to 2.15) empty inside
    the block and given back as it was after it. Dynamo keys it by (file, first line, name) of each frame,
    not by code object: without this, a trace of one shape after a trace of another made the second one's
    graphs dynamic, and neurondev's runs of the user's frames would change what the user's own
    ``torch.compile`` later decides."""
    try:
        import torch._dynamo.pgo as pgo
    except ImportError:  # an older dynamo keeps frame state on the code object: nothing to isolate
        yield
        return
    saved = (pgo._CODE_STATE, pgo._INIT_CODE_STATE)
    pgo._CODE_STATE = collections.defaultdict(pgo.CodeState)
    try:
        yield
    finally:
        pgo._CODE_STATE, pgo._INIT_CODE_STATE = saved


def compile_wrapper_code() -> Any:
    """The code object of torch.compile's wrapper (``_TorchDynamoContext.__call__``'s ``compile_wrapper``):
    a frame called by it is a call of a compiled function (its closure's ``fn``), not a frame resumed after a break."""
    from torch._dynamo.eval_frame import _TorchDynamoContext

    code = _TorchDynamoContext.__call__.__code__
    return next((const for const in code.co_consts if getattr(const, "co_name", None) == "compile_wrapper"), None)


_RESUME = re.compile(r"torch_dynamo_resume_in_(?P<name>\w+?)_at_(?P<line>\d+)$")


def resumed_function(code_name: str) -> tuple[str, int] | None:
    """(the function, the line of the break) for the code dynamo made to resume a frame after a graph break
    (``torch_dynamo_resume_in_step_at_12``); None for any other code."""
    match = _RESUME.match(code_name)
    return (match["name"], int(match["line"])) if match else None


def compilation_metrics() -> list[Any]:
    """Dynamo's record of each compile (``CompilationMetrics``: ``cache_size``, ``recompile_reason``, ...)."""
    from torch._dynamo.utils import get_compilation_metrics

    return get_compilation_metrics()


def compile_timing(metric: Any) -> tuple[float | None, float | None]:
    """Dynamo's own clock of one compile (a ``CompilationMetrics``, or None): the whole frame's seconds, and when it
    began (seconds since the epoch); None where this dynamo does not say."""
    seconds = getattr(metric, "entire_frame_compile_time_s", None)
    micros = getattr(metric, "start_time_us", None)
    return (
        float(seconds) if isinstance(seconds, (int, float)) else None,
        micros / 1e6 if isinstance(micros, (int, float)) else None,
    )


def graphs_made() -> int:
    """How many graphs dynamo has handed a backend in this process."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


_USER_STACK = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>[^\n]+)')


def guard_reason(reason: str) -> tuple[str, list[tuple[str, int, str]]]:
    """Dynamo's recompile reason split into the guard's own text and the user frames it names (innermost
    last). torch 2.9 writes ``lr == 0.1  # code  # …/train.py:12 in step``; torch 2.13 appends a
    ``User stack trace:`` block of ``File "...", line N, in f`` lines (whole paths) after it."""
    text, _, stack = reason.partition("\nUser stack trace:")
    frames = [(m["file"], int(m["line"]), m["function"].strip()) for m in _USER_STACK.finditer(stack)]
    return text.strip(), frames


def is_recompile_limit(error: BaseException) -> bool:
    """Whether dynamo refused a compile at its recompile limit: torch 2.9's ``RecompileLimitExceeded``; torch 2.13
    raises ``Unsupported("Dynamo recompile limit exceeded")`` (that class is gone)."""
    from torch._dynamo import exc

    limit_class = getattr(exc, "RecompileLimitExceeded", None)
    if limit_class is not None and isinstance(error, limit_class):
        return True
    text = str(error).lower()
    return "cache limit exceeded" in text or "recompile limit exceeded" in text


def is_skipped_frame(error: BaseException) -> bool:
    """Whether dynamo's error on a frame is one it skips the frame for and runs it as it is (``Unsupported``: a
    generator it cannot trace, a frame it must skip; ``ConvertFrame`` calls these soft failures), not a failed compile."""
    from torch._dynamo import exc

    return isinstance(error, exc.Unsupported) and not is_recompile_limit(error)


def set_guard_complete_hook(hook: Callable[[bool], bool] | None) -> Callable[[bool], bool] | None:
    """Dynamo's hook called with each guard check of a compiled frame (True: its compiled code runs);
    returns the hook that was set before."""
    from torch._C._dynamo.eval_frame import set_guard_complete_hook as setter

    return setter(hook)  # type: ignore[arg-type]


def observe_compiled_calls(observer: Callable[[Any], None]) -> Callable[[], None]:
    """Call ``observer(frame)`` with torch.compile's wrapper frame on every call of a compiled function, even once
    dynamo gave up on its frame (its recompile limit: the frame then runs uncompiled, and neither a compile nor a
    guard check sees the call). The wrapper asks ``eval_frame._callback_from_stance`` for its callback on each
    call (torch 2.9 to 2.13); returns what puts it back."""
    from torch._dynamo import eval_frame

    original = eval_frame._callback_from_stance
    wrapper = compile_wrapper_code()

    def _callback_from_stance(callback: Any) -> Any:
        caller = sys._getframe(1)
        if caller.f_code is wrapper:
            observer(caller)
        return original(callback)

    eval_frame._callback_from_stance = _callback_from_stance

    def put_back() -> None:
        eval_frame._callback_from_stance = original

    return put_back


def observe_backend_graphs(observer: Callable[[torch.fx.GraphModule], None]) -> Callable[[], None]:
    """Call ``observer(gm)`` with each graph dynamo hands a backend (``OutputGraph.call_user_compiler``), before the
    backend runs; returns the undo."""
    from torch._dynamo.output_graph import OutputGraph

    original = hook(OutputGraph, "call_user_compiler", "dynamo's call of a backend")

    def call_user_compiler(self: Any, gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        observer(gm)
        return original(self, gm, example_inputs)

    OutputGraph.call_user_compiler = call_user_compiler  # type: ignore[method-assign]

    def put_back() -> None:
        OutputGraph.call_user_compiler = original  # type: ignore[method-assign]

    return put_back


def dynamo_config() -> Any:
    """dynamo's configuration module (``recompile_limit``, ``accumulated_recompile_limit``)."""
    import torch._dynamo

    return hook(torch._dynamo, "config", "dynamo's configuration")


def dynamo_failure(error: BaseException) -> bool:
    """Raised while dynamo traced or compiled a frame (its own exceptions), not by the user's code running."""
    import torch._dynamo.exc as exc

    kinds = tuple(k for k in (getattr(exc, "TorchDynamoException", None), getattr(exc, "BackendCompilerFailed", None)) if k)
    return isinstance(error, kinds)
