"""What the recorder hears from the device and the optimizers: torch_xla's step marker (wrapped once torch_xla is
loaded, also when the watched code imports it later), each optimizer step, torch_xla's counts at each such moment and
the wait for the work in flight before they are read."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from neurondev._compat import torch_xla_hooks

__all__ = ["after_import", "optimizer_steps", "settled", "sync", "unwrap_step_marker", "wrap_step_marker", "xla_counts"]


def wrap_step_marker(synced: Callable[[], None]) -> Any:
    """Call ``synced`` after torch_xla's step marker (what torch_xla.sync() and xm.mark_step() call), when torch_xla is
    loaded; what puts it back (None when torch_xla is not loaded)."""
    if "torch_xla" not in sys.modules:
        return None
    return torch_xla_hooks.wrap_xla_step_marker(synced)


def optimizer_steps(stepped: Callable[[], None]) -> Any:
    """Call ``stepped`` after each step of any optimizer (torch's global post-step hook); the handle removes it."""
    from torch.optim.optimizer import register_optimizer_step_post_hook

    return register_optimizer_step_post_hook(lambda optimizer, args, kwargs: stepped())


def after_import(name: str, loaded: Callable[[], None]) -> Callable[[], None]:
    """Call ``loaded`` once module ``name`` has been imported (by anyone, later); returns the undo."""
    import importlib.abc
    import importlib.machinery

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
            if fullname != name:
                return None
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is None or spec.loader is None:
                return spec
            execute = spec.loader.exec_module

            def exec_module(module: Any) -> None:
                execute(module)
                loaded()

            spec.loader.exec_module = exec_module  # type: ignore[method-assign]
            return spec

    finder = Finder()
    sys.meta_path.insert(0, finder)
    return lambda: sys.meta_path.remove(finder) if finder in sys.meta_path else None


def unwrap_step_marker(put_back: Any) -> None:
    if put_back is not None:
        put_back()


def sync() -> None:
    import torch_xla

    torch_xla.sync()


def xla_counts() -> Any:
    """torch_xla's counters now, when the user's code has loaded torch_xla (never loaded here); else None."""
    if "torch_xla" not in sys.modules:
        return None
    from neurondev.xla import counters

    return counters.counts()


def settled() -> None:
    """Wait for the XLA device's work in flight, when the watched code is using one (never starts it)."""
    counts = xla_counts()
    if counts is None or not (counts.executions or counts.transfers_to_device):
        return
    from neurondev.xla import counters

    counters.settle()
