"""The XLA driver of the run layer: torch_xla's device, its metrics as counts, torch_xla.sync() at a graph's end."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.fx

from neurondev.runs.counts import Counts
from neurondev.runs.interface import no_context
from neurondev.runs.run_records import Seen
from neurondev.xla import counters, runtime

__all__ = ["XlaDriver"]


class XlaDriver:
    """Runs on the XLA device torch_xla selects (Neuron's, or PJRT's: the CPU device here)."""

    stack = "xla"
    program_label = "openxla"
    own_generator: str | None = "XLA"

    def device(self) -> torch.device:
        return runtime.device()

    def describe(self) -> Mapping[str, str]:
        return runtime.describe()

    def counts(self) -> Counts:
        return counters.counts()

    def settle(self) -> None:
        counters.settle()

    def sync(self) -> None:
        counters.sync()

    def seed(self, seed: int) -> None:
        import torch_xla.core.xla_model as xm

        torch.manual_seed(seed)
        xm.set_rng_state(seed)

    def measuring(self, *, compiled: bool = False, whole: bool = False) -> contextlib.AbstractContextManager[Any]:
        return counters.keep_counters()

    needs_counting_call = False  # torch_xla's metrics count every call whole

    def at_node(self, node: torch.fx.Node) -> contextlib.AbstractContextManager[Any]:
        return no_context(node)

    def program_backend(self) -> Callable[..., Any]:
        from neurondev._compat.dynamo import lookup_backend

        return lookup_backend("openxla")

    def mark(self) -> int:
        return 0

    def located_since(self, mark: int) -> Seen:
        return Seen()  # torch_xla's metrics count per process, without lines

    def unseen(self) -> str | None:
        return None
