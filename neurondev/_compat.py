"""Every private torch / torch_xla / IPython hook neurondev uses, in one place, with the versions checked.

Each of these reaches into an internal that a release may move. They were checked against the
versions in ``CHECKED_WITH``; when one breaks, this is the only file to mend (one exception, read
in a hot loop, is named below: ``torch.fx.Node._args`` / ``._kwargs`` in ``fx/devices.py``).
"""

from __future__ import annotations

import collections
import contextlib
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.fx
import torch.utils._pytree as _pytree

__all__ = [
    "CHECKED_WITH",
    "TorchDispatchMode",
    "active_dispatch_modes",
    "dynamo_config",
    "dynamo_failure",
    "finished_work",
    "work_base",
    "dynamo_device_interface",
    "register_dynamo_device_interface",
    "run_backward_bare",
    "patched_xla_counter_increment",
    "privateuse1_name",
    "register_device_module",
    "wrap_xla_step_marker",
    "TESTED_ALONE",
    "TESTED_IPYTHON",
    "TESTED_PAIR",
    "DYNAMIC_MARKS",
    "ENTER_AUTOCAST",
    "dynamic_dims",
    "has_pytree_spec",
    "lifted_input_kind",
    "lifted_input_name",
    "lifted_state_attribute",
    "aot_autograd",
    "backend_key",
    "cache_entry_ids",
    "compilation_metrics",
    "compile_wrapper_code",
    "observe_compiled_calls",
    "observe_backend_graphs",
    "own_code_state",
    "compile_attempts_class",
    "compiled_code_objects",
    "concrete",
    "default_tolerances",
    "detect_fake_mode",
    "dispatch_handler",
    "dispatch_has_kernel",
    "dispatch_mode_keeps_compiled_code",
    "has_backend_fallback",
    "dynamo_break_of",
    "extract_compiled_graph",
    "forget_kernels",
    "graphs_made",
    "guard_reason",
    "ipython_cell_number",
    "is_recompile_limit",
    "kernel_route",
    "keystr",
    "lookup_backend",
    "make_boxed_func",
    "OpOverload",
    "OpOverloadPacket",
    "qualified_name",
    "reset_code",
    "resumed_function",
    "run_below_mode",
    "set_guard_complete_hook",
    "source_name",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_map",
    "tree_unflatten",
    "without_default_device",
]

# The one list of the versions tested here (requirements/ pins them; tests/test_suite_setup.py checks they agree):
TESTED_PAIR = ("2.9.0", "2.9.0")  # torch + torch-xla: requirements/constraints.txt
TESTED_ALONE = ("2.13.0",)  # torch without torch-xla (TorchNeuron's PyTorch): requirements/constraints-current.txt
TESTED_IPYTHON = "9.18.1"
CHECKED_WITH = {"torch": (TESTED_PAIR[0], *TESTED_ALONE), "torch_xla": TESTED_PAIR[1], "IPython": TESTED_IPYTHON}

# torch.utils._pytree: nested inputs and outputs (lists, tuples, dicts, dataclasses registered with torch)
tree_leaves = _pytree.tree_leaves
tree_map = _pytree.tree_map
tree_flatten = _pytree.tree_flatten
tree_flatten_with_path = _pytree.tree_flatten_with_path
tree_unflatten = _pytree.tree_unflatten
keystr = _pytree.keystr

# torch._ops: the classes of ATen operators in graphs made by aot_autograd and torch.export
OpOverload = torch._ops.OpOverload
OpOverloadPacket = torch._ops.OpOverloadPacket

# torch.fx.Node._args / ._kwargs, the fields behind its args / kwargs properties: the one private
# read that lives elsewhere, in the loop of neurondev.fx.devices.device_nodes (a call through here
# would cost what reading them directly saves: the property calls were half the pass's time on a
# 100k-node graph). tests/passes/test_device_rewriter_properties.py fails if a release moves them.

# Attributes torch._dynamo.mark_dynamic and its relatives set on a tensor.
DYNAMIC_MARKS = (
    "_dynamo_dynamic_indices",
    "_dynamo_unbacked_indices",
    "_dynamo_weak_dynamic_indices",
    "_dynamo_static_indices",
    "_dynamo_dynamic_range",
)


def dynamic_dims(marks: dict[str, Any]) -> list[int] | None:
    """The dimensions ``torch._dynamo.mark_dynamic`` marked, from a tensor's ``DYNAMIC_MARKS``; None if unmarked."""
    marked = marks.get("_dynamo_dynamic_indices")
    return sorted(marked) if marked is not None else None


# What dynamo writes into a graph for ``with torch.autocast(device_type=...)``.
ENTER_AUTOCAST = torch.amp.autocast_mode._enter_autocast

# How dynamo names the inputs it lifts: L_args_0_ / L_kwargs_x_ (arguments), ..._parameters_w_ /
# ..._buffers_b_ (module state), G_<module>_TABLE (a global), L_fn_closure_0_cell_contents (a
# closure cell), L_fn_table (an attribute of the traced callable).
_ARGUMENTS = ("L_args_", "L_kwargs_")
_STATE = re.compile(r"_(?:parameters|buffers)_(?P<attribute>.+?)_?$")  # model.h[0].ln_1.weight: ..._modules_ln_1_parameters_weight_
_INPUT = re.compile(r"^[lL]_(?P<name>.+?)_?$")


def lifted_input_kind(target: str) -> str:
    """Where a graph input dynamo lifted came from: 'argument', 'state' (a parameter or buffer),
    'global', 'closure', 'attribute', or 'other'."""
    if target.startswith(_ARGUMENTS):
        return "argument"
    if lifted_state_attribute(target) is not None:
        return "state"
    if target.startswith("G_"):
        return "global"
    if target.startswith("L_fn_closure_"):
        return "closure"
    if target.startswith("L_fn_"):
        return "attribute"
    return "other"


def lifted_state_attribute(target: str) -> str | None:
    """The attribute a lifted parameter or buffer input names (``weight``), None for other inputs."""
    match = _STATE.search(target)
    return match["attribute"] if match is not None else None


def lifted_input_name(target: str) -> str | None:
    """A lifted local input's name without dynamo's ``L_`` and trailing ``_`` (``args_0``, ``x``)."""
    match = _INPUT.match(target)
    return match["name"] if match is not None else None


def has_pytree_spec(gm: torch.fx.GraphModule) -> bool:
    """Whether ``gm`` flattens its inputs through a pytree spec (``_in_spec``, set by make_fx and export)."""
    return getattr(gm, "_in_spec", None) is not None


def concrete(value: Any) -> Any:
    """The number a symbolic size stands for while tracing (its hint), else the value itself.

    Dynamo passes a dimension marked dynamic to the graph as a ``torch.SymInt`` input; a run
    elsewhere needs the concrete size it had (a symbolic one reaching XLA crashes the process).
    """
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        hint = value.node.hint
        return hint if hint is not None else value
    return value


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


def qualified_name(target: Callable[..., Any]) -> str:
    """torch.fx's own name for a call target: 'torch.empty', 'torch.Tensor.to', '_operator.add'."""
    return torch.fx.node._get_qualified_name(target)


def detect_fake_mode(values: list[Any]) -> Any:
    """The FakeTensorMode of fake tensors among ``values`` (None when there is none)."""
    from torch._guards import detect_fake_mode as detect

    return detect(values)


def default_tolerances(actual: torch.Tensor, expected: torch.Tensor) -> tuple[float, float]:
    """(rtol, atol) that torch.testing.assert_close uses for these dtypes."""
    from torch.testing._comparison import default_tolerances as defaults

    return defaults(actual, expected)


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


def extract_compiled_graph(model: torch.fx.GraphModule, args: Any) -> Any:
    """What torch_xla's dynamo bridge (the openxla backend) compiles ``model`` into."""
    import torch_xla.core.dynamo_bridge as bridge

    return bridge.extract_compiled_graph(model, args)


def ipython_cell_number(file: str) -> int | None:
    """The execution count IPython gave the cell it compiled to ``file`` (None outside IPython)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    names = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
    return names.get(file)


def compiled_code_objects() -> list[Any]:
    """Every code object dynamo has compiled a frame of in this process (and that is still alive)."""
    from torch._dynamo import convert_frame

    return [code for ref in list(convert_frame.input_codes.seen) if (code := ref()) is not None]


def cache_entry_ids(code: Any) -> set[int]:
    """The identities of the cache entries dynamo keeps on ``code`` (one per compiled variant)."""
    from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list

    return {id(entry) for entry in _debug_get_cache_entry_list(code)}


def reset_code(code: Any) -> None:
    """Drop every cache entry dynamo keeps on ``code``."""
    from torch._C._dynamo.eval_frame import reset_code as reset

    reset(code)


def compile_attempts_class() -> Any:
    """The class whose ``__call__`` dynamo runs for every frame it compiles (on a cache miss), whatever
    the backend: ``ConvertFrameAssert(frame, cache_entry, hooks, frame_state, *, skip=0)``."""
    from torch._dynamo.convert_frame import ConvertFrameAssert

    return ConvertFrameAssert


def source_name(node: torch.fx.Node) -> str | None:
    """Where dynamo read a graph input from, as the user's code names it (``STATE`` for a global,
    ``self.table`` for an attribute, ``x`` for an argument); None when dynamo recorded no source.
    dynamo keeps it in ``node.meta['grapharg'].source.name`` (a method in torch 2.9, a property in 2.13)."""
    grapharg = node.meta.get("grapharg")
    name = getattr(getattr(grapharg, "source", None), "name", None)
    name = name() if callable(name) else name
    if not isinstance(name, str):
        return None
    name = re.sub(r"\b[LG]\['([^']+)'\]", r"\1", name)
    return _IMPORTED.sub(lambda m: "" if "neurondev_rebuilt" in m["module"] else f"{m['module']}.", name)


_IMPORTED = re.compile(r"__import_+(?P<module>\w+?)_*\.")  # a global read through its module: __import__config.SCALE


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

    original = _hook(OutputGraph, "call_user_compiler", "dynamo's call of a backend")

    def call_user_compiler(self: Any, gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        observer(gm)
        return original(self, gm, example_inputs)

    OutputGraph.call_user_compiler = call_user_compiler  # type: ignore[method-assign]

    def put_back() -> None:
        OutputGraph.call_user_compiler = original  # type: ignore[method-assign]

    return put_back


def _hook(owner: Any, name: str, what: str) -> Any:
    """``owner.name``, a private hook; TorchInternalsError naming it and the versions checked when it is gone."""
    found = getattr(owner, name, None)
    if found is None:
        from neurondev.errors import TorchInternalsError

        checked = f"torch {' and '.join(CHECKED_WITH['torch'])}, torch-xla {CHECKED_WITH['torch_xla']}"
        raise TorchInternalsError(
            f"neurondev needs {what} ({getattr(owner, '__name__', owner)}.{name}), which this install does not have "
            f"(torch {torch.__version__}); it was checked with {checked}: install one of those, or report it"
        )
    return found


try:  # torch.utils._python_dispatch: the base class of every dispatch mode (torch 2.9 to 2.13)
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError:  # pragma: no cover - a torch without it cannot account for native devices at all
    TorchDispatchMode = object  # type: ignore[misc,assignment]


def active_dispatch_modes() -> list[Any]:
    """The dispatch modes on torch's stack now, innermost last."""
    import torch.utils._python_dispatch as dispatch

    return list(_hook(dispatch, "_get_current_dispatch_mode_stack", "the stack of dispatch modes")())


def privateuse1_name() -> str:
    """The name PrivateUse1 goes by in this process ('privateuseone': no backend renamed it)."""
    return str(_hook(torch._C, "_get_privateuse1_backend_name", "PrivateUse1's backend name")())


def register_device_module(name: str, module: Any) -> None:
    """Register ``torch.<name>`` for an out-of-tree device (what ``torch.cuda`` is for CUDA)."""
    _hook(torch, "_register_device_module", "registering a device module")(name, module)


def finished_work(result: Any) -> Any:
    """A c10d Work already done, its future holding ``result`` (what a Python process group returns)."""
    import torch._C._distributed_c10d as c10d

    future: torch.futures.Future = torch.futures.Future()
    future.set_result(result)
    return _hook(c10d, "_create_work_from_future", "c10d's Work made from a future")(future)


def dynamo_device_interface() -> type:
    """dynamo's ``DeviceInterface``, the base of a device's interface for dynamo and inductor."""
    import torch._dynamo.device_interface as interfaces

    return _hook(interfaces, "DeviceInterface", "dynamo's device interface")


def register_dynamo_device_interface(name: str, interface: type) -> None:
    """Register ``interface`` for device type ``name`` with dynamo (what torch does for cuda and xpu)."""
    import torch._dynamo.device_interface as interfaces

    _hook(interfaces, "register_interface_for_device", "registering a device's interface with dynamo")(name, interface)


def work_base() -> type:
    """c10d's Work, as a base for a Python process group's own (one whose ``wait`` finishes the work)."""
    import torch.distributed as dist

    return _hook(dist, "_Work", "c10d's Work class")


def run_backward_bare(output: torch.Tensor) -> None:
    """``output.backward()`` through autograd's engine without the Python context torch 2.13 stashes in each
    backward's thread-local state (``torch.autograd.graph._engine_run_backward``): a graph task that holds no
    Python object, whose last reference a device's autograd thread may drop without the GIL."""
    engine = _hook(torch.autograd.Variable, "_execution_engine", "autograd's engine")
    engine.run_backward((output,), (torch.ones_like(output),), False, False, (), True, True)


def dynamo_config() -> Any:
    """dynamo's configuration module (``recompile_limit``, ``accumulated_recompile_limit``)."""
    import torch._dynamo

    return _hook(torch._dynamo, "config", "dynamo's configuration")


def dynamo_failure(error: BaseException) -> bool:
    """Raised while dynamo traced or compiled a frame (its own exceptions), not by the user's code running."""
    import torch._dynamo.exc as exc

    kinds = tuple(k for k in (getattr(exc, "TorchDynamoException", None), getattr(exc, "BackendCompilerFailed", None)) if k)
    return isinstance(error, kinds)


def wrap_xla_step_marker(after: Callable[[], None]) -> Callable[[], None]:
    """Call ``after()`` after each of torch_xla's step markers (what ``torch_xla.sync()`` and ``xm.mark_step()`` call);
    returns what puts the original back."""
    import torch_xla

    original = _hook(torch_xla._XLAC, "_xla_step_marker", "torch_xla's step marker")

    def step_marker(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        after()
        return result

    torch_xla._XLAC._xla_step_marker = step_marker

    def put_back() -> None:
        torch_xla._XLAC._xla_step_marker = original

    return put_back


@contextlib.contextmanager
def patched_xla_counter_increment(replacement: Callable[[Callable[[str, int], None]], Callable[[str, int], None]]) -> Iterator[None]:
    """Inside: torch_xla's counter increments go through ``replacement(original)``."""
    from unittest import mock

    import torch_xla

    original = _hook(torch_xla._XLAC, "_xla_increment_counter", "torch_xla's counter increment")
    with mock.patch.object(torch_xla._XLAC, "_xla_increment_counter", replacement(original)):
        yield
