"""torch_xla's internals: its dynamo bridge, its step marker and its counters."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.fx

from neurondev._compat import hook

__all__ = ["extract_compiled_graph", "patched_xla_counter_increment", "wrap_xla_step_marker"]


def extract_compiled_graph(model: torch.fx.GraphModule, args: Any) -> Any:
    """What torch_xla's dynamo bridge (the openxla backend) compiles ``model`` into."""
    import torch_xla.core.dynamo_bridge as bridge

    return bridge.extract_compiled_graph(model, args)


def wrap_xla_step_marker(after: Callable[[], None]) -> Callable[[], None]:
    """Call ``after()`` after each of torch_xla's step markers (what ``torch_xla.sync()`` and ``xm.mark_step()`` call);
    returns what puts the original back."""
    import torch_xla

    original = hook(torch_xla._XLAC, "_xla_step_marker", "torch_xla's step marker")

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

    original = hook(torch_xla._XLAC, "_xla_increment_counter", "torch_xla's counter increment")
    with mock.patch.object(torch_xla._XLAC, "_xla_increment_counter", replacement(original)):
        yield
