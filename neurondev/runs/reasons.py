"""Why values were not compared: a kind of reason and its facts, never a sentence (``render.sentences`` says it)."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch.fx

from neurondev.fx.random import random_nodes
from neurondev.runs.values import LeftOut
from neurondev.trace.source import source_of

__all__ = ["DRAWS", "KINDS", "NotCompared", "random_draws"]

KINDS = (
    "graph failed",  # ``graph`` ('rewritten', 'frozen') failed at ``node`` (on ``device``)
    "no cpu run",  # the graph does not run on CPU: ``error``
    "no cpu result",  # there is no CPU result to compare with
    "program failed",  # the program failed on the device
    "program did not run",  # an input the device cannot hold: ``error``
    "random",  # random node ``node`` (at ``where``, ``more`` others) draws as ``draws`` says
    "left out",  # every output was left out (``left_out``: what and why, as the comparison names them)
    "nothing to compare",
)
DRAWS = (
    "moved",  # on the host before the pass, on the device after
    "device",  # from ``device``'s own generator, which is not CPU's
    "cpu",  # from the CPU's generator, seeded as CPU's run was; compiled code may draw in another order
)


@dataclasses.dataclass(frozen=True)
class NotCompared:
    """Why values were not compared (a ``kind`` of ``KINDS``) and its facts."""

    kind: str
    graph: str | None = None
    node: str | None = None
    device: str | None = None
    error: str | None = None
    where: str | None = None
    more: int = 0
    draws: str | None = None
    left_out: tuple[LeftOut, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS or (self.draws is not None and self.draws not in DRAWS):
            raise ValueError(f"not a reason neurondev knows: {self.kind!r} (draws {self.draws!r}); one of {KINDS}")

    def to_dict(self) -> dict[str, Any]:
        facts = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        return {name: _plain(value) for name, value in facts.items() if value or name == "kind"}

    @property
    def comparable(self) -> bool:
        """False for random values (not comparable, never a difference); True for any other reason."""
        return self.kind != "random"


def random_draws(gm: torch.fx.GraphModule, names: set[str] | None, draws: str, device: str | None = None) -> NotCompared | None:
    """The graph's first random node (of ``names`` when given) and how many more, drawing as ``draws`` says; None
    when the graph draws nothing."""
    drawn = [node for node in random_nodes(gm) if names is None or node.name in names]
    if not drawn:
        return None
    source = source_of(drawn[0])
    where = source.where if source else None
    return NotCompared("random", node=drawn[0].name, where=where, more=len(drawn) - 1, draws=draws, device=device)


def _plain(value: Any) -> Any:
    """A fact as JSON data: a tuple as a list, each record in it as its fields (a ``LeftOut``)."""
    if isinstance(value, tuple):
        return [dataclasses.asdict(item) if dataclasses.is_dataclass(item) and not isinstance(item, type) else item for item in value]
    return value
