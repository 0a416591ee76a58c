"""Why each compile happened, in words, and what to write instead: one piece of advice per cause.

Dynamo's reason for a recompile is the guard that failed: ``lr == 0.1  # p = lr * g  # train.py:12 in
step`` (a Python number burned into the graph), ``tensor 'x' size mismatch at index 0. expected 8,
actual 5`` (a size that changed). Measured with torch 2.9 and torch_xla 2.9 (PJRT CPU): importing
torch_xla turns dynamo's automatic dynamic shapes off, so every new size is a new graph; a
dimension marked with ``torch._dynamo.mark_dynamic`` saves dynamo's retrace (one compile for sizes
8, 5, 6, 7) but XLA still compiles one program per size (4 there), and on Trainium each is a
neuronx-cc compile: bounded sizes (buckets) are what keeps compiles bounded.
"""

from __future__ import annotations

import dataclasses
import linecache
import re
from typing import Any

from neurondev._compat import guard_reason
from neurondev.trace.source import Located, SourceLine, source_line

__all__ = ["ADVICE", "KINDS", "Advice", "Cause", "advice_for", "cause_of"]

_PREFIX = re.compile(r"^\s*\d+/\d+:\s*")
_TENSOR = re.compile(
    r"tensor '(?P<name>.+?)' (?P<what>size|stride) mismatch at index (?P<dim>\d+)\. expected (?P<before>\d+), actual (?P<after>\d+)"
)
_VALUE = re.compile(r"^(?P<name>.+?)\s*==\s*(?P<before>[^#]+?)\s*(?:#|$)")
_READ_AT = re.compile(r"#\s*(?P<code>.*?)\s*#\s*(?P<file>[^#]+?):(?P<line>\d+) in (?P<function>\S+)\s*$")
_REFERENCE = re.compile(r"^[A-Za-z_][\w.]*(?:\[[^\]]+\][\w.]*)*$")  # a name, attributes, subscripts: a value the code reads
_COUNTED = re.compile(r"^(?P<what>len\((?P<inner>[^)]+)\))\s*==\s*(?P<before>\d+)")
_NUMBER = re.compile(r"^-?(?:\d+\.?\d*(?:e-?\d+)?|True|False)$")
_DECODE = re.compile(r"(input_ids|position_ids|cache_position|inputs_embeds)$")  # generate: the prompt, then one token a step
_CACHE = re.compile(r"cache|past_key|key_cache|value_cache|\.keys|\.values", re.I)

KINDS = ("first", "recompile", "recompile limit reached", "failed")


@dataclasses.dataclass(frozen=True)
class Cause(Located):
    """Why a compile happened: ``kind`` of cause ('first compile', 'python number', 'cache growth',
    'changing size', 'prompt to decode' (generate's second graph: expected), 'recompile limit', 'other'), the value that failed its guard (``lr``, ``x``), what
    it was and what it became, the guard in dynamo's words, and ``source``: the user's line where the
    value is read, when dynamo says."""

    kind: str
    value: str | None
    before: str | None
    after: str | None
    words: str
    source: SourceLine | None = None


@dataclasses.dataclass(frozen=True)
class Advice(Located):
    """What to write instead for one cause, said once with its line; advice, never verified here."""

    cause: str
    text: str
    source: SourceLine | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"cause": self.cause, "text": self.text, **self.source_dict()}


def cause_of(reason: str | None, *, index: int | None, limit: int | None, now: str | None, frame_file: str) -> Cause:
    """The cause of one compile from dynamo's reason (the failed guard); ``now``: the guarded value's new value."""
    if limit is not None:
        return Cause(
            "recompile limit", None, None, None, f"dynamo's recompile limit ({limit}) is reached: the function runs uncompiled from here on"
        )
    if not reason:
        return Cause(
            "first compile" if not index else "other", None, None, None, "first compile" if not index else "recompiled (no reason given)"
        )
    text, frames = guard_reason(reason)
    guard = _PREFIX.sub("", text).strip()
    tensor = _TENSOR.search(guard)
    if tensor is not None:
        name = _readable(tensor["name"])
        kind = "cache growth" if _CACHE.search(tensor["name"]) and int(tensor["after"]) == int(tensor["before"]) + 1 else "changing size"
        if _DECODE.search(name) and tensor["after"] == "1" and tensor["before"] != "1":
            kind = "prompt to decode"
        words = f"{name} changed {tensor['what']} at dimension {tensor['dim']}: {tensor['before']} -> {tensor['after']}"
        return Cause(kind, name, tensor["before"], tensor["after"], words, None)
    value = _VALUE.match(guard)
    read_at = source_line(*frames[-1]) if frames else _read_at(guard, frame_file)
    if value is not None and _NUMBER.match(value["before"].strip()) and _REFERENCE.match(_readable(value["name"])):
        name, before, after = _readable(value["name"]), _short(value["before"]), _short(now)
        words = f"{name} was {before} when traced{f' and is {after}' if after else ''}: a Python number burned into the graph"
        return Cause("python number", name, before, after, words, read_at)
    counted = _COUNTED.match(guard)
    if counted is not None:
        words = f"{counted['what']} was {counted['before']} when traced: the call passes other values now"
        return Cause("other", _readable(counted["inner"]), counted["before"], None, words, read_at)
    return Cause("other", None, None, None, guard.split("#")[0].strip()[:200], read_at)


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


def advice_for(cause: Cause, sizes: list[int]) -> str | None:
    """What to write instead for a cause (None for a first compile)."""
    if cause.kind == "python number":
        return (
            f"pass {cause.value} as a tensor (torch.tensor({cause.value}) on the device, updated in place) so the graph reads it "
            "instead of baking it in, or keep it constant"
        )
    if cause.kind == "cache growth":
        return (
            "a cache that grows by one position per call is a new shape every step: use a static cache "
            "(cache_implementation='static' in transformers generate, or a preallocated buffer written at an index)"
        )
    if cause.kind == "changing size":
        buckets = _buckets(sizes)
        return (
            f"{cause.value} takes {len(set(sizes))} sizes ({', '.join(map(str, sorted(set(sizes))))}): pad to a few bucket sizes "
            f"({', '.join(map(str, buckets))}), or drop the short last batch (DataLoader(drop_last=True)); "
            "torch._dynamo.mark_dynamic saves dynamo's retrace only, XLA still compiles one program per size"
        )
    if cause.kind == "recompile limit":
        return (
            "from here the function runs uncompiled: every op is traced lazily on XLA on every call; raising "
            "torch._dynamo.config.recompile_limit only delays the cost: remove the cause of the recompiles above"
        )
    return None


def _buckets(sizes: list[int]) -> list[int]:
    """Powers of two covering the sizes seen."""
    buckets = sorted({1 << max(size - 1, 0).bit_length() for size in sizes if size > 0})
    return buckets or sizes


ADVICE = ("python number", "cache growth", "changing size", "recompile limit")
