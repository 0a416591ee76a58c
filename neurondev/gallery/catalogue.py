"""The gallery: named device-placement patterns, each explained, with its measured outcome stored.

Used by the notebooks, the tests, the benchmarks and the command line. ``list()`` is a table of
them, ``get(name)`` one; ``Example.open()`` gives ``(fn, args, kwargs)`` ready for ``explain``.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch

from neurondev.errors import UnknownExampleError
from neurondev.gallery import patterns
from neurondev.gallery.groups import gloo_group, world_name
from neurondev.gallery.patterns import collective_function, seed_function
from neurondev.report.fixes.records import Fix

__all__ = ["CATALOGUE", "Example", "Outcome", "collective_function", "describe_fixes", "get", "gloo_group", "list", "seed_function"]


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What tracing on CPU and running on XLA does to a pattern, as measured on the PJRT CPU device.

    ``pins``: (target, location, kind) per pin. Before the pass: ``breaks_before`` (nodes where the
    lazy graph was cut), ``fails_at`` (the node a failing run stopped at), ``uploads_before``
    (nodes that copy host data up on every call). After the default pass there is never a break;
    ``uploads_after`` lists what still uploads (host-built values no rewrite removes).
    """

    pins: tuple[tuple[str, str, str], ...] = ()
    breaks_before: tuple[str, ...] = ()
    fails_at: str | None = None
    uploads_before: tuple[str, ...] = ()
    uploads_after: tuple[str, ...] = ()
    outputs_equal: bool = True

    @property
    def freezes(self) -> bool:
        return bool(self.pins)

    def before(self) -> str:
        """'fails at n', 'N break(s) at ...', 'uploads at ...' or 'clean'."""
        if self.fails_at:
            return f"fails at {self.fails_at}"
        if self.breaks_before:
            return f"{len(self.breaks_before)} break(s) at {', '.join(self.breaks_before)}"
        if self.uploads_before:
            return f"no break; uploads at {', '.join(self.uploads_before)}"
        return "clean"

    def after(self) -> str:
        uploads = f"; uploads at {', '.join(self.uploads_after)}" if self.uploads_after else ""
        return f"0 breaks{uploads}; outputs {'equal' if self.outputs_equal else 'differ'}"


@dataclasses.dataclass(frozen=True)
class Example:
    """A named pattern with a paragraph a newcomer can follow, what to write instead, its outcome, and
    ``fix``: the fixed statement explain writes and verifies for it (``describe_fixes``), or why none.

    ``build()`` returns ``(fn, args, kwargs)``; ``open()`` is a context manager around it for
    patterns that need something set up while they run (the collective's process group).
    """

    name: str
    title: str
    description: str
    build: Callable[[], tuple[Callable, tuple, dict]]
    outcome: Outcome
    instead: str = ""
    fix: str = ""  # what explain writes for the pattern's lines: the verified fix, or why there is none
    needs: tuple[str, ...] = ()
    slow: bool = False
    context: Callable[[], Any] | None = None

    @contextlib.contextmanager
    def open(self) -> Iterator[tuple[Callable, tuple, dict]]:
        with self.context() if self.context else contextlib.nullcontext():
            yield self.build()


def _inputs(*shapes: tuple[int, ...]) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(0)
    return tuple(torch.randn(*shape, generator=generator) for shape in shapes)


def _pattern(fn: Callable, *shapes: tuple[int, ...]) -> Callable[[], tuple[Callable, tuple, dict]]:
    return lambda: (fn, _inputs(*shapes), {})


def _collective() -> tuple[Callable, tuple, dict]:
    return collective_function(1, world_name()), (torch.arange(64, dtype=torch.float32),), {}


def _gpt2() -> tuple[Callable, tuple, dict]:
    from neurondev.gallery.models import tiny_gpt2

    return tiny_gpt2()


def _module() -> tuple[Callable, tuple, dict]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        module = patterns.BufferInForward(8)
    return module, _inputs((4, 8)), {}


_FROZEN = "frozen"
_NEW = "x.new_{}(...) follows x at run time; torch.{}(..., device=x.device) is frozen while tracing"


def _gallery() -> builtins.list[Example]:
    return [
        Example(
            "seed",
            "torch.empty(device=x.device) filled by copy_",
            "The seed document's pattern. A buffer is made 'on the same device as x' and the result is "
            "copied into it. Traced on CPU, x.device is cpu, so the graph says device=cpu. On XLA, the "
            "relu*2 is an XLA value and copy_ must bring it to the host buffer: the lazy XLA graph is cut "
            "there (one execution, one transfer to the host) and the output lands on CPU.",
            _pattern(seed_function, (64,)),
            Outcome(pins=(("torch.empty", "kwarg", _FROZEN),), breaks_before=("copy_",)),
            instead=_NEW.format("empty", "empty"),
            fix="out = x.new_empty(64, dtype=torch.float32)",
        ),
        Example(
            "collective",
            "reduce_scatter_tensor copied into a buffer made on x's device",
            "The seed document's collective example (one rank here): the reduced result of "
            "_c10d_functional.reduce_scatter_tensor is XLA data, the output buffer was frozen to cpu, "
            "so copy_ cuts the graph exactly as in the seed example. Run with two ranks in "
            "neurondev.gallery.ranks.run_on_ranks(world_size=2).",
            _collective,
            Outcome(pins=(("torch.empty", "kwarg", _FROZEN),), breaks_before=("copy_",)),
            instead=_NEW.format("empty", "empty"),
            fix="output = input_tensor.new_empty(input_tensor.shape[0] // world_size, dtype=torch.float32)",
            context=gloo_group,
        ),
        Example(
            "arange",
            "torch.arange(n, device=x.device) as positions",
            "Positions made with torch.arange on x's device. Frozen to cpu, the arange is built on the "
            "host on every call and uploaded where it meets x (no break, but a transfer per call). "
            "Rewritten, it is built on the device inside the XLA graph.",
            _pattern(patterns.arange_positions, (3, 8)),
            Outcome(pins=(("torch.arange", "kwarg", _FROZEN),), uploads_before=("mul",)),
            instead="no Tensor.new_arange exists: compile through the neurondev backend",
            fix="no spelling: compile through the neurondev backend",
        ),
        Example(
            "zeros",
            "torch.zeros(n, device=x.device) as an accumulator",
            "An accumulator of zeros on x's device receives a result by copy_. Frozen, it is a host "
            "tensor: copy_ pulls the XLA result down (a break).",
            _pattern(patterns.zeros_accumulator, (3, 8)),
            Outcome(pins=(("torch.zeros", "kwarg", _FROZEN),), breaks_before=("copy_",)),
            instead=_NEW.format("zeros", "zeros"),
            fix="total = x.new_zeros(x.shape[-1], dtype=torch.float32)",
        ),
        Example(
            "ones",
            "torch.ones(n, device=x.device) scaled in place",
            "Weights of ones are multiplied in place by an XLA value. An in-place op on a host tensor "
            "with a device operand makes XLA execute and hand the value down: a break at mul_.",
            _pattern(patterns.ones_weights, (3, 8)),
            Outcome(pins=(("torch.ones", "kwarg", _FROZEN),), breaks_before=("mul_",)),
            instead=_NEW.format("ones", "ones"),
            fix="weights = x.new_ones(x.shape[-1], dtype=torch.float32)",
        ),
        Example(
            "full",
            "torch.full(shape, v, device=x.device) updated in place",
            "torch.full on x's device, then add_ of a reduction of x: the same in-place story as ones.",
            _pattern(patterns.full_like_scale, (3, 8)),
            Outcome(pins=(("torch.full", "kwarg", _FROZEN),), breaks_before=("add_",)),
            instead=_NEW.format("full", "full"),
            fix="scale = x.new_full((x.shape[-1],), 0.5, dtype=torch.float32)",
        ),
        Example(
            "tensor",
            "torch.tensor([...], device=x.device): a table of constants",
            "A small table written as a Python list. Frozen, it is uploaded where it meets x; rewritten, "
            "it is still built from host data on every call (torch.tensor of a list is data from Python), "
            "so one upload per call remains: no rewrite can remove it, and the run attributes it to "
            "the node. Register it as a buffer or pass it in to keep it on the device.",
            _pattern(patterns.tensor_table, (3, 4)),
            Outcome(pins=(("torch.tensor", "kwarg", _FROZEN),), uploads_before=("mul",), uploads_after=("table",)),
            instead="x.new_tensor(data) follows x; better, create the table once (a buffer) and pass it in",
            fix="table = x.new_tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float32)",
        ),
        Example(
            "str-device",
            "device=str(x.device)",
            "Turning the device into a string does not help: str(x.device) is evaluated while tracing "
            "and becomes the constant 'cpu'. The pass keeps the format: 'cpu' becomes 'xla'.",
            _pattern(patterns.str_device, (3, 8)),
            Outcome(pins=(("torch.zeros", "kwarg", _FROZEN),), breaks_before=("copy_",)),
            instead=_NEW.format("zeros", "zeros"),
            fix="out = x.new_zeros(x.shape, dtype=torch.float32)",
        ),
        Example(
            "literal-cpu",
            'device="cpu" written out',
            "A device written in the code is not frozen by tracing, it was always there. On XLA it "
            "puts the buffer on the host all the same: copy_ cuts the graph.",
            _pattern(patterns.literal_cpu, (3, 8)),
            Outcome(pins=(("torch.zeros", "kwarg", "literal"),), breaks_before=("copy_",)),
            instead="x.new_zeros(...) with the tensor whose device you mean (without device= it is made on the default device: the host)",
            fix="bias = x.new_zeros(x.shape[-1], dtype=torch.float32)",
        ),
        Example(
            "to-other-device",
            "y.to(x.device): positional",
            "Moving one tensor to another's device with a positional argument. The kwargs-only pass of "
            "the seed document does not see it (there is no device= kwarg); the default pass rewrites "
            "it. Frozen, the value goes to the host and back: a break and an upload.",
            _pattern(patterns.to_other_tensors_device, (8,), (8,)),
            Outcome(pins=(("Tensor.to", "arg[1]", _FROZEN),), breaks_before=("moved",), uploads_before=("add",)),
            instead="compile through the neurondev backend (no spelling keeps the device symbolic)",
            fix="no spelling: compile through the neurondev backend",
        ),
        Example(
            "to-device-dtype",
            "mask.to(x.device, torch.float32)",
            "The two-argument form Tensor.to(device, dtype), common for masks. Positional, so only the default pass rewrites it.",
            _pattern(patterns.to_device_and_dtype, (8,), (8,)),
            Outcome(pins=(("Tensor.to", "arg[1]", _FROZEN),), breaks_before=("weights",), uploads_before=("mul",)),
            instead="x.to(dtype) alone when only the dtype changes; otherwise the neurondev backend",
            fix="weights = (mask > 0).to(torch.float32)",
        ),
        Example(
            "device-object",
            "torch.device(x.device.type) built and passed on",
            "Building a torch.device from x's does not escape tracing either: dynamo evaluates it to the "
            "constant device(type='cpu') and the constructor gets it as its device= kwarg.",
            _pattern(patterns.device_object, (8,)),
            Outcome(pins=(("torch.empty", "kwarg", _FROZEN),), breaks_before=("copy_",)),
            instead="torch.empty_like(x) or x.new_empty(shape)",
            fix="buffer = x.new_empty(x.shape, dtype=torch.float32)",
        ),
        Example(
            "cpu-midway",
            ".cpu() in the middle of a computation",
            "An explicit .cpu() in the middle of the graph moves the value to the host on purpose: on XLA "
            "it is a break. The default pass turns it into .to('xla'); check that nothing needed the host.",
            _pattern(patterns.cpu_midway, (4, 8)),
            Outcome(pins=(("Tensor.cpu", "method", "literal"),), breaks_before=("scores",)),
            instead="drop the .cpu(), or move the host work out of the compiled function",
            fix="scores = (x @ x.T)",
        ),
        Example(
            "causal-mask",
            "torch.triu(torch.ones(n, n, device=x.device)) as an attention mask",
            "The causal mask of attention. Frozen, the mask is a host tensor; masked_fill of XLA scores "
            "with a host mask fails outright on XLA ('Expected XLA tensor'). Rewritten, it runs with "
            "no break.",
            _pattern(patterns.causal_mask, (6, 8)),
            Outcome(pins=(("torch.ones", "kwarg", _FROZEN),), fails_at="masked_fill"),
            instead=_NEW.format("ones", "ones") + " (or torch.ones_like on a square tensor)",
            fix="mask = torch.triu(x.new_ones(n, n, dtype=torch.float32), diagonal=1).bool()",
        ),
        Example(
            "rotary",
            "rotary-embedding positions from two aranges",
            "Rotary embeddings build inverse frequencies and positions with torch.arange on x's device. "
            "Frozen, both are host tensors: every product with them uploads (four uploads per call, no "
            "break). Rewritten, the whole computation stays in one XLA graph.",
            _pattern(patterns.rotary_positions, (6, 8)),
            Outcome(
                pins=(("torch.arange", "kwarg", _FROZEN), ("torch.arange", "kwarg", _FROZEN)),
                uploads_before=("mul_1", "mul_2", "mul_3", "mul_4"),
            ),
            instead="compute the frequencies once (a buffer), or compile through the neurondev backend",
            fix="no spelling: compile through the neurondev backend",
        ),
        Example(
            "kv-cache",
            "a KV-cache-style buffer allocated per step and filled in place",
            "A cache made with torch.zeros on x's device, written by index assignment and copy_. Frozen, "
            "each write of an XLA value into the host cache cuts the graph: two breaks per step.",
            _pattern(patterns.kv_cache_step, (4, 8)),
            Outcome(pins=(("torch.zeros", "kwarg", _FROZEN),), breaks_before=("setitem", "copy_")),
            instead="x.new_zeros(shape), or allocate the cache once outside and pass it in",
            fix="cache = x.new_zeros(2 * x.shape[0], x.shape[1], dtype=torch.float32)",
        ),
        Example(
            "module-buffer",
            "an nn.Module that creates a buffer in forward",
            "A module that makes its running state in forward with device=x.device instead of "
            "register_buffer. The module's parameters are inputs of the graph; the state is frozen to "
            "cpu, so copy_ of the linear layer's output cuts the graph.",
            _module,
            Outcome(pins=(("torch.zeros", "kwarg", _FROZEN),), breaks_before=("copy_",), uploads_before=("add",)),
            instead="register_buffer in __init__ (it moves with model.to(device)), or x.new_zeros",
            fix="state = x.new_zeros(x.shape[-1], dtype=torch.float32)",
        ),
        Example(
            "no-device-upload",
            "torch.arange(n).to(x): no device at all",
            "A constructor with no device, then .to(x). Nothing is pinned (there is no device argument "
            "to rewrite), yet the arange is built on the host on every call and uploaded: the run "
            "attributes the upload to its node, before and after the pass alike.",
            _pattern(patterns.no_device_upload, (3, 8)),
            Outcome(uploads_before=("steps",), uploads_after=("steps",)),
            instead="torch.arange(n, device=x.device) through the neurondev backend builds it on the device",
            fix="nothing to fix in your code",
        ),
        Example(
            "like-and-new",
            "zeros_like, new_zeros, empty_like: patterns that do not freeze",
            "torch.zeros_like(x), x.new_zeros(shape) and torch.empty_like(x) take their device from x "
            "when the graph runs, not while it is traced: the graph holds no device at all. This is what "
            "to write: nothing to rewrite, no break, no upload.",
            _pattern(patterns.like_and_new, (3, 8)),
            Outcome(),
            instead="this is already the fix",
            fix="nothing to fix in your code",
        ),
        Example(
            "gpt2",
            "a tiny random-weight GPT-2 from transformers",
            "Real model code: transformers' GPT-2 (2 layers, hidden 64, random weights, no download) makes "
            "positions and masks with torch.arange(device=...) and moves masks with .to(device). Frozen, "
            "the run fails at the position embedding ('Expected XLA tensor'); the kwargs-only pass leaves "
            "three positional .to() pins, each a break per call; the default pass leaves none.",
            _gpt2,
            Outcome(
                pins=(
                    ("torch.arange", "kwarg", _FROZEN),
                    ("Tensor.to", "arg[1]", _FROZEN),
                    ("torch.arange", "kwarg", "variable"),
                    ("torch.arange", "kwarg", "variable"),
                    ("torch.arange", "kwarg", "variable"),
                    ("torch.arange", "kwarg", "variable"),
                    ("Tensor.to", "arg[1]", _FROZEN),
                    ("Tensor.to", "arg[1]", _FROZEN),
                ),
                fails_at="position_embeds",
            ),
            instead="compile the model through the neurondev backend",
            fix="nothing to fix in your code",
            needs=("transformers",),
            slow=True,
        ),
    ]


CATALOGUE: dict[str, Example] = {example.name: example for example in _gallery()}


def describe_fixes(fixes: Iterable[Fix]) -> str:
    """One line for the gallery: each verified fixed statement, or the status and advice of one without."""
    said: builtins.list[str] = []
    for fix in fixes:
        text = fix.after if fix.verified and fix.after is not None else f"{fix.status}: {fix.advice}"
        if text not in said:
            said.append(text)
    return "; ".join(said) or "nothing to fix in your code"


def get(name: str) -> Example:
    """The example called ``name``; UnknownExampleError (a KeyError too) listing the known names otherwise."""
    try:
        return CATALOGUE[name]
    except (KeyError, TypeError):
        raise UnknownExampleError(
            f"no example {name!r}; known: {', '.join(CATALOGUE)} (neurondev.examples.list() describes them)"
        ) from None


def list():  # noqa: A001 - the gallery's public name, examples.list()
    """The gallery as a pandas.DataFrame: name, title, whether it freezes, pins, before, after, what to write,
    and the fix explain writes and verifies for the pattern's own lines."""
    import pandas

    rows = [
        {
            "name": e.name,
            "title": e.title,
            "freezes": e.outcome.freezes,
            "pins": ", ".join(f"{t} ({loc}, {kind})" for t, loc, kind in e.outcome.pins) or "none",
            "before": e.outcome.before(),
            "after": e.outcome.after(),
            "instead": e.instead,
            "verified fix": e.fix,
        }
        for e in CATALOGUE.values()
    ]
    return pandas.DataFrame(rows).set_index("name")
