"""What neurondev changed in the process on purpose, so that giving the user's state back leaves it:
the environment the XLA runtime was started with, and XLA's random state when neurondev loaded it.

Starting the XLA runtime sets ``PJRT_DEVICE`` (when neurondev chose it) and whatever importing
torch_xla sets (``XLA_FLAGS``, ...): the running runtime reads them, so they stay. The runtime
(``neurondev.xla.runtime``) records them here, where the code that gives state back reads them.
"""

from __future__ import annotations

__all__ = ["initial_xla_rng", "note_initial_xla_rng", "note_runtime_environment", "runtime_environment"]

_environment: set[str] = set()
_initial_xla_rng: list[int | None] = [None]


def note_runtime_environment(keys: set[str] | frozenset[str]) -> None:
    _environment.update(keys)


def runtime_environment() -> frozenset[str]:
    """The environment variables starting the XLA runtime set."""
    return frozenset(_environment)


def note_initial_xla_rng(state: int | None) -> None:
    _initial_xla_rng[0] = state


def initial_xla_rng() -> int | None:
    """XLA's random state when neurondev first loaded torch_xla (None: neurondev did not load it)."""
    return _initial_xla_rng[0]
