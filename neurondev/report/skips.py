"""Why a stage of explain did not run: a kind and its facts, never a sentence (``render.sentences.skip_text``)."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["SKIP_KINDS", "Skip"]

SKIP_KINDS = (
    "run off",  # run=False
    "no graph",  # nothing was recorded
    "traced on meta",  # the weights are shapes without values
    "no device",  # device, error: the runtime did not start
    "from a capture",  # no function to run or trace
    "not needed",  # nothing here needs the device
    "ran elsewhere",  # device, target: a rerun for another kind of device
    "exported",  # an exported program's ATen graph is not compared line by line
)


@dataclasses.dataclass(frozen=True)
class Skip:
    """Why a stage did not run: a kind of ``SKIP_KINDS``, the device it is about and, for a runtime that
    did not start, its error; for a rerun elsewhere, the target to explain again with."""

    kind: str
    device: str | None = None
    error: str | None = None
    target: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in SKIP_KINDS:
            raise ValueError(f"Skip kind must be one of {SKIP_KINDS}, got {self.kind!r}")

    def to_dict(self) -> dict[str, Any]:
        return {key: value for key, value in dataclasses.asdict(self).items() if value is not None}
