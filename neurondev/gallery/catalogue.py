"""The gallery: named device-placement patterns, each explained, with its measured outcome stored.

Used by the notebooks, the tests, the benchmarks and the command line. ``list()`` is a table of
them, ``get(name)`` one; ``Example.open()`` gives ``(fn, args, kwargs)`` ready for ``explain``.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import json
from collections.abc import Callable, Iterable, Iterator
from importlib import resources
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


_BUILDERS: dict[str, Callable[[], tuple[Callable, tuple, dict]]] = {"collective": _collective, "gpt2": _gpt2, "module": _module}
_CONTEXTS: dict[str, Callable[[], Any]] = {"gloo_group": gloo_group}
_ENTRY_KEYS = {"name", "title", "description", "build", "outcome", "instead", "fix", "needs", "slow", "context"}


def _build(spec: dict[str, Any]) -> Callable[[], tuple[Callable, tuple, dict]]:
    """A pattern of ``patterns.py`` called on seeded random inputs of the given shapes, or a named builder."""
    if "builder" in spec:
        return _BUILDERS[spec["builder"]]
    return _pattern(getattr(patterns, spec["pattern"]), *(tuple(shape) for shape in spec["shapes"]))


def _outcome(data: dict[str, Any]) -> Outcome:
    return Outcome(
        pins=tuple(tuple(pin) for pin in data.get("pins", ())),
        breaks_before=tuple(data.get("breaks_before", ())),
        fails_at=data.get("fails_at"),
        uploads_before=tuple(data.get("uploads_before", ())),
        uploads_after=tuple(data.get("uploads_after", ())),
        outputs_equal=data.get("outputs_equal", True),
    )


def _example(entry: dict[str, Any]) -> Example:
    unknown = (set(entry) - _ENTRY_KEYS) | (set(entry.get("outcome", {})) - {f.name for f in dataclasses.fields(Outcome)})
    if unknown:
        raise ValueError(f"catalogue.json: {entry.get('name')!r} has unknown keys {sorted(unknown)}")
    context = entry.get("context")
    return Example(
        name=entry["name"],
        title=entry["title"],
        description=entry["description"],
        build=_build(entry["build"]),
        outcome=_outcome(entry.get("outcome", {})),
        instead=entry.get("instead", ""),
        fix=entry.get("fix", ""),
        needs=tuple(entry.get("needs", ())),
        slow=entry.get("slow", False),
        context=_CONTEXTS[context] if context else None,
    )


def _gallery() -> builtins.list[Example]:
    """The gallery's entries, kept as data in ``catalogue.json`` next to this file."""
    text = resources.files("neurondev.gallery").joinpath("catalogue.json").read_text(encoding="utf-8")
    return [_example(entry) for entry in json.loads(text)]


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
