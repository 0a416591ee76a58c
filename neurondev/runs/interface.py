"""The one interface every run goes through, whatever the device: a driver per stack (XLA, native PrivateUse1).

A graph run, a program run, the search for the first differing node and a trace on the device ask a
driver for the device, for counts (cumulative readings, subtracted around what they measure), to settle
in-flight work before reading them, to end a graph (XLA executes its lazy program there), to seed the
device's generator, to measure (XLA: keep the bridge from clearing counters; native: the accounting on),
to attribute what happens to a graph node, and for the backend that compiles the program as written.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

import torch
import torch.fx

from neurondev.runs.counts import Counts
from neurondev.runs.run_records import Seen

__all__ = ["STACKS", "Driver", "no_context"]

STACKS = ("xla", "native")


class Driver(Protocol):
    """What a run needs of a device stack; ``stack`` is 'xla' or 'native'."""

    stack: str
    program_label: str  # the backend of the program as written, as the card names it ('openxla')
    own_generator: str | None  # whose generator random values there draw from when not the CPU's ("XLA"), None: the CPU's

    def device(self) -> torch.device:
        """The device runs go to."""
        ...

    def describe(self) -> Mapping[str, str]:
        """Which runtime and device are in use, and why (versions too)."""
        ...

    def counts(self) -> Counts:
        """The cumulative counts now (never reset: the user's own figures stay)."""
        ...

    def settle(self) -> None:
        """Wait for the device's in-flight work, so that its counts are complete."""
        ...

    def sync(self) -> None:
        """The end of a graph or a call: run what is pending (XLA's lazy program), then settle."""
        ...

    def seed(self, seed: int) -> None:
        """Seed the CPU's and the device's generators alike."""
        ...

    def measuring(self, *, compiled: bool = False, whole: bool = False) -> contextlib.AbstractContextManager[Any]:
        """Around everything measured (``compiled``: around calls of compiled code): the counts are kept true inside.
        ``whole``: everything a compiled call does is counted, between its graphs too, even where this torch then
        compiles the code again (a call made only to be counted: ``needs_counting_call``)."""
        ...

    @property
    def needs_counting_call(self) -> bool:
        """Whether a call of compiled code is counted whole only by a call of its own (``measuring(whole=True)``)."""
        ...

    def at_node(self, node: torch.fx.Node) -> contextlib.AbstractContextManager[Any]:
        """What happens inside is attributed to ``node`` (its line and module)."""
        ...

    def program_backend(self) -> Callable[..., Any]:
        """The torch.compile backend of the program as written on this device."""
        ...

    def mark(self) -> int:
        """A position in what the driver saw, for ``located_since``."""
        ...

    def located_since(self, mark: int) -> Seen:
        """What was seen since ``mark`` with its lines: copies to the host and syncs, uploads and CPU fallbacks,
        each grouped by line (a native device; XLA's metrics have no lines: nothing)."""
        ...

    def unseen(self) -> str | None:
        """The compiler whose graphs a program run on this device cannot see into (None: nothing left out)."""
        ...


@contextlib.contextmanager
def no_context(*_: Any) -> Iterator[None]:
    """A context that does nothing (a driver with nothing to set up)."""
    yield
