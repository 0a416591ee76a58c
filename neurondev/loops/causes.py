"""Why each compile happened (a kind of cause and its facts) and what to write instead: one piece of advice per cause.

Dynamo's reason for a recompile is the guard that failed: ``lr == 0.1  # p = lr * g  # train.py:12 in
step`` (a Python number burned into the graph), ``tensor 'x' size mismatch at index 0. expected 8,
actual 5`` (a size that changed). Measured with torch 2.9 and torch_xla 2.9 (PJRT CPU): importing
torch_xla turns dynamo's automatic dynamic shapes off, so every new size is a new graph; a
dimension marked with ``torch._dynamo.mark_dynamic`` saves dynamo's retrace (one compile for sizes
8, 5, 6, 7) but XLA still compiles one program per size (4 there), and on Trainium each is a
neuronx-cc compile: bounded sizes (buckets) are what keeps compiles bounded.
"""

from __future__ import annotations

import collections
import dataclasses
import linecache
import re
from collections.abc import Sequence
from typing import Any

from neurondev._compat.dynamo import guard_reason
from neurondev.loops.recorder import CompileEvent
from neurondev.rulebook import Ruled
from neurondev.trace.source import Located, SourceLine, is_program_file, is_user_file, source_line

__all__ = [
    "GRAD_MODE",
    "ADVICE",
    "CHECK_KINDS",
    "EXPECTED",
    "KINDS",
    "PROGRAM_ADVICE",
    "Advice",
    "AdviceCheck",
    "Cause",
    "Recurring",
    "advice_for",
    "by_what_sizes_do",
    "cause_of",
]

_PREFIX = re.compile(r"^\s*\d+/\d+:\s*")
_TENSOR = re.compile(
    r"tensor '(?P<name>.+?)' (?P<what>size|stride) mismatch at index (?P<dim>\d+)\. expected (?P<before>\d+), actual (?P<after>\d+)"
)
_VALUE = re.compile(r"^(?P<name>.+?)\s*==\s*(?P<before>[^#]+?)\s*(?:#|$)")
_READ_AT = re.compile(r"#\s*(?P<code>.*?)\s*#\s*(?P<file>[^#]+?):(?P<line>\d+) in (?P<function>\S+)\s*$")
_REFERENCE = re.compile(r"^[A-Za-z_][\w.]*(?:\[[^\]]+\][\w.]*)*$")  # a name, attributes, subscripts: a value the code reads
_COUNTED = re.compile(r"^(?P<what>len\((?P<inner>[^)]+)\))\s*==\s*(?P<before>\d+)")
_NUMBER = re.compile(r"^-?(?:\d+\.?\d*(?:e-?\d+)?|True|False)$")

KINDS = ("first", "recompile", "recompile limit reached", "failed")


@dataclasses.dataclass(frozen=True)
class Cause(Located, Ruled):
    """Why a compile happened: ``kind`` of cause ('first compile', 'python number', 'flag' (a bool: one graph per
    value, expected), 'library value' (a library's own attribute), 'cache growth', 'changing size', 'prompt to
    decode' (generate's second graph: expected), 'recompile limit', 'other') and its facts: the value that failed
    its guard (``lr``, ``x``), what it was and what it became, ``source`` (the line of the program where the value
    is read, when dynamo says), ``measure`` (what of it changed: 'size', 'stride', 'len'), ``dim`` (the tensor's
    dimension), ``library`` (whose value it is), ``limit`` (dynamo's recompile limit reached) and ``guard`` (the
    failed guard as dynamo wrote it, for a cause of no known kind). ``render.sentences`` says it in words."""

    RECORD = "cause"

    kind: str
    value: str | None
    before: str | None
    after: str | None
    source: SourceLine | None = None
    measure: str | None = None
    dim: int | None = None
    library: str | None = None
    limit: int | None = None
    guard: str | None = None

    def to_dict(self) -> dict[str, Any]:
        facts = {"measure": self.measure, "dim": self.dim, "library": self.library, "limit": self.limit, "guard": self.guard}
        return {
            "rule": self.rule,
            "kind": self.kind,
            "value": self.value,
            "before": self.before,
            "after": self.after,
            **facts,
            **self.source_dict(),
        }


CHECK_KINDS = ("verified", "not enough", "did not finish")


@dataclasses.dataclass(frozen=True)
class AdviceCheck:
    """How a second run with the advice's mechanical fix applied went: ``kind`` ('verified': steady after step
    ``steady`` of ``steps``; 'not enough': it still compiled from step ``since``; 'did not finish'), and the fix
    that was applied (``fix``: 'sync each step', a torch_xla.sync() at the end of each step)."""

    kind: str
    fix: str = "sync each step"
    steady: int | None = None
    since: int | None = None
    steps: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Recurring:
    """How XLA's programs recur: ``per_step`` (the program counts of the steps that compile), from ``since``,
    or one new program every ``period`` steps; ``unit`` is 'step' or 'call'."""

    per_step: tuple[int, ...]
    since: int | None
    period: int | None = None
    unit: str = "step"

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "per_step": list(self.per_step)}


@dataclasses.dataclass(frozen=True)
class Advice(Located):
    """What to write instead for one cause, said once with its line: ``cause`` (a kind of ``Cause`` in
    ``ADVICE``, or XLA's side in ``PROGRAM_ADVICE``) and its facts: ``function`` (the compiled function),
    ``value`` (what changed), ``sizes`` and ``buckets`` (a changing size's sizes and the buckets that cover them),
    ``recurring`` (XLA's programs), ``inputs`` (a growing lazy graph's input counts), ``programs`` (XLA's
    programs by kind), ``analysed`` (whether torch_xla's analysis named their triggers); ``check`` says how
    a second run with its fix went (None: not checked). ``render.sentences.advice_text`` says it in words."""

    cause: str
    function: str | None = None
    value: str | None = None
    sizes: tuple[int, ...] = ()
    buckets: tuple[int, ...] = ()
    recurring: Recurring | None = None
    inputs: tuple[int, ...] = ()
    programs: tuple[tuple[str, int], ...] = ()
    analysed: bool = True
    source: SourceLine | None = None
    check: AdviceCheck | None = None
    on_xla: bool = True  # XLA runs the loop: a size is a program of its own (on a native device, dynamo's graph alone)

    @property
    def verified(self) -> bool:
        """A second run with the fix applied reached a steady state."""
        return self.check is not None and self.check.kind == "verified"

    def to_dict(self) -> dict[str, Any]:
        facts = {"function": self.function, "value": self.value, "sizes": list(self.sizes), "buckets": list(self.buckets)}
        xla = {
            "recurring": None if self.recurring is None else self.recurring.to_dict(),
            "inputs": list(self.inputs),
            "programs": dict(self.programs),
            "analysed": self.analysed,
        }
        checked = {"check": None if self.check is None else self.check.to_dict(), "verified": self.verified}
        return {"cause": self.cause, **facts, **xla, **self.source_dict(), **checked}


def cause_of(event: CompileEvent) -> Cause:
    """The cause of one compile from dynamo's reason (the failed guard) and what the recorder read with it."""
    reason, index = event.reason, event.index
    if event.limit is not None:
        return Cause("recompile limit", None, None, None, limit=event.limit)
    if not reason:
        return Cause("first compile" if not index else "other", None, None, None)
    text, frames = guard_reason(reason)
    guard = _PREFIX.sub("", text).strip()
    if guard.startswith("GLOBAL_STATE changed: grad_mode"):  # gradients on, then off: training, then evaluation
        return Cause("flag", GRAD_MODE, None, None)
    tensor = _TENSOR.search(guard)
    if tensor is not None:
        return _tensor_cause(tensor)
    value = _VALUE.match(guard)
    read_at = _read_where(guard, frames, event)
    if value is not None and _NUMBER.match(value["before"].strip()) and _REFERENCE.match(_readable(value["name"])):
        return _value_cause(_readable(value["name"]), _short(value["before"]), _short(event.now), read_at, event)
    counted = _COUNTED.match(guard)
    if counted is not None:
        if index == 1 and _in_library(event.file):  # expected: no line of the library's to chase
            return Cause("prompt to decode", _readable(counted["inner"]), counted["before"], None, measure="len")
        return Cause("other", _readable(counted["inner"]), counted["before"], None, read_at, measure="len")
    return Cause("other", None, None, None, read_at, guard=guard.split("#")[0].strip()[:200])


def _tensor_cause(tensor: re.Match[str]) -> Cause:
    """A size or stride that changed: what the size does across the compiles (a cache growing, the prompt then one
    token) is read from all of them (``by_what_sizes_do``), never from the tensor's name."""
    name = _readable(tensor["name"])
    return Cause("changing size", name, tensor["before"], tensor["after"], measure=tensor["what"], dim=int(tensor["dim"]))


def by_what_sizes_do(events: Sequence[CompileEvent], causes: Sequence[Cause]) -> list[Cause]:
    """The causes with each changing size read from what it does across a function's compiles: the first call's size
    against the rest when the second call's is 1 (the prompt, then one token a step: 'prompt to decode'), a size that
    grows by one from one compile to the next, twice or more ('cache growth'), whatever the tensor is called."""
    read = list(causes)
    changes: dict[tuple[str, str | None, int | None], list[int]] = collections.defaultdict(list)
    for position, (event, cause) in enumerate(zip(events, causes)):
        if cause.kind == "changing size" and cause.measure == "size":
            changes[(event.function, cause.value, cause.dim)].append(position)
    for positions in changes.values():
        first = positions[0]
        if events[first].index == 1 and read[first].after == "1" and read[first].before != "1":
            read[first] = dataclasses.replace(read[first], kind="prompt to decode")
            positions = positions[1:]
        sizes = [(int(read[p].before or 0), int(read[p].after or 0)) for p in positions]
        growing = all(after == before + 1 for before, after in sizes)
        continuous = all(earlier[1] == later[0] for earlier, later in zip(sizes, sizes[1:]))
        if len(sizes) >= 2 and growing and continuous:
            for p in positions:
                read[p] = dataclasses.replace(read[p], kind="cache growth")
    decoded = {(events[p].function, read[p].value) for p in range(len(read)) if read[p].kind == "prompt to decode"}
    for position, (event, cause) in enumerate(zip(events, read)):  # the stride follows the size: (1, 6) then (1, 1)
        if cause.kind == "changing size" and cause.measure == "stride" and (event.function, cause.value) in decoded and cause.after == "1":
            read[position] = dataclasses.replace(cause, kind="prompt to decode")
    return read


def _value_cause(name: str, before: str | None, after: str | None, read_at: SourceLine | None, event: CompileEvent) -> Cause:
    """A guarded Python value: a flag (True/False: two expected graphs), a library's own attribute (the user
    cannot make it a tensor), or a number burned into the graph."""
    if before in ("True", "False"):
        return Cause("flag", name, before, after, read_at)
    if event.owner_file is not None and _in_library(event.owner_file):
        return Cause("library value", name, before, after, read_at, library=_library_of(event.owner_file))
    return Cause("python number", name, before, after, read_at)


def _read_where(guard: str, frames: list[tuple[str, int, str]], event: CompileEvent) -> SourceLine | None:
    """The line that reads the guarded value: the innermost frame of the program's code dynamo names (not
    torch's own: a flag read inside torch's dropout is read for the user's module)."""
    program = [frame for frame in frames if is_program_file(frame[0])]
    if program:
        return source_line(*program[-1])
    named = _read_at(guard, event.file)
    if named is not None and not is_program_file(named.file):  # read inside torch (a flag read by torch's dropout): the user's use of it
        return _use_in(event, _VALUE.match(guard))
    return named


def _use_in(event: CompileEvent, value: re.Match[str] | None) -> SourceLine:
    """The first line of the compiled function that uses the object the guarded value belongs to
    (``self.drop`` for ``self.drop.training``), else the function's own line."""
    owner = _readable(value["name"]).rsplit(".", 1)[0] if value is not None else ""
    for number in range(event.line, event.line + 200):
        text = linecache.getline(event.file, number)
        if not text:
            break
        if owner and owner in text and not text.lstrip().startswith("def "):
            return source_line(event.file, number, event.function.rsplit(".", 1)[-1])
    return source_line(event.file, event.line, event.function.rsplit(".", 1)[-1])


def _in_library(file: str | None) -> bool:
    return bool(file) and not is_user_file(file) and is_program_file(file or "")


def _library_of(file: str) -> str:
    """The distribution a library file belongs to: 'transformers' for .../site-packages/transformers/cache_utils.py."""
    parts = re.split(r"[\\/]", file)
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return parts[parts.index(marker) + 1].removesuffix(".py")
    return "the library"


def _short(value: str | None) -> str | None:
    """A number as people write it (0.09, not 0.09000000000000001); anything else as it is."""
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return value.strip()
    return value.strip() if value.strip() in ("True", "False") or number.is_integer() and "." not in value else f"{number:.6g}"


def _readable(name: str) -> str:
    """``kwargs['cache'].layers[0].keys`` -> ``cache.layers[0].keys``; ``L['x']`` -> ``x``."""
    name = re.sub(r"^(?:L|G)\['([^']+)'\]", r"\1", name.strip())
    name = re.sub(r"\._(?:modules|parameters|buffers)\['([^']+)'\]", r".\1", name)
    return re.sub(r"^(?:kwargs|args)\['([^']+)'\]", r"\1", name)


def _read_at(guard: str, frame_file: str) -> SourceLine | None:
    """The line dynamo names for a guard (``# code  # …/train.py:12 in step``), its file found whole."""
    found = _READ_AT.search(guard)
    if found is None:
        return None
    named, line = found["file"].strip(), int(found["line"])
    file = (
        frame_file if frame_file.endswith(named) else next((f for f in linecache.cache if isinstance(f, str) and f.endswith(named)), named)
    )
    return source_line(file, line, found["function"], found["code"])


def advice_for(cause: Cause, function: str, sizes: list[int], *, on_xla: bool = True) -> Advice | None:
    """What to write instead for a cause of ``function``'s compiles (None for a cause that needs none: a first
    compile, generate's prompt to decode, a guard of no known kind, sizes that are the buckets already); ``sizes``: a
    changing value's sizes; ``on_xla``: XLA runs the loop (its one program per size is said)."""
    if cause.kind not in ADVICE or cause.value == GRAD_MODE:  # training and evaluation: a graph each, nothing to change
        return None
    seen = tuple(sorted(set(sizes))) if cause.kind == "changing size" else ()
    buckets = tuple(_buckets(list(seen))) if seen else ()
    if seen and buckets == seen:
        return None  # padded to these buckets already: each is compiled once, and that is the advice done
    return Advice(cause.kind, function, cause.value, seen, buckets, source=cause.source, on_xla=on_xla)


def _buckets(sizes: list[int]) -> list[int]:
    """Powers of two covering the sizes seen."""
    buckets = sorted({1 << max(size - 1, 0).bit_length() for size in sizes if size > 0})
    return buckets or sizes


GRAD_MODE = "torch.is_grad_enabled()"  # the flag dynamo guards as GLOBAL_STATE: gradients on (training) or off (evaluation)
ADVICE = ("python number", "cache growth", "changing size", "recompile limit", "flag", "library value")
PROGRAM_ADVICE = (
    "lazy state growing",
    "stop check",
    "host read",
    "program per size",
    "number in program",
    "size in program",
    "xla programs",
)  # XLA's side: what its programs say
EXPECTED = ("first compile", "prompt to decode", "flag")  # compiles a loop is expected to make once each
