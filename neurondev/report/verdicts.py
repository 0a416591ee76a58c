"""Two questions about values, never merged: did the rewrite change them, and does XLA agree with CPU.

The first compares the graph after the pass with the graph before it, run on the same XLA device
with the same random seed. The second compares the graph after the pass on XLA with the same graph
run eagerly on CPU. A model whose XLA kernels are wrong (torch_xla's grouped mm in MoE experts)
passes the first and fails the second; a frozen graph whose own XLA run was wrong is fixed by the
rewrite. Random ops are named, never called a difference.
"""

from __future__ import annotations

import dataclasses

import torch.fx

from neurondev.fx.random import random_nodes
from neurondev.rulebook import rule_of
from neurondev.runs.first_difference import NodeDifference
from neurondev.runs.run_records import RunRecord
from neurondev.runs.values import Comparison, compare_outputs
from neurondev.trace.source import source_of

__all__ = ["Verdict", "cpu_verdict", "random_reason", "rewrite_verdict"]

_MATCHING = ("equal", "within tolerance", "fixed")


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One answer about values: ``status`` is 'equal', 'within tolerance', 'differ', 'fixed' (the
    rewrite repaired a wrong frozen run), 'not comparable' (random values) or 'not compared'.
    ``question`` is 'rewrite' or 'cpu'; ``reason`` says why, or what a difference rests on.
    ``first_difference``: when a graph on XLA differs from CPU, the first node whose value differs
    while its inputs agree (where XLA departs from CPU), or None when that was not looked for.
    ``frozen``: for 'fixed', the frozen graph's own run against CPU (what the rewrite repaired)."""

    question: str
    status: str
    comparison: Comparison | None = None
    reason: str | None = None
    first_difference: NodeDifference | None = None
    frozen: Comparison | None = None

    @property
    def matches(self) -> bool | None:
        """True when the values agree, False when they differ, None when nothing could be compared."""
        if self.status in _MATCHING:
            return True
        return False if self.status == "differ" else None

    @property
    def rule(self) -> str | None:
        """ND208 when the values differ; None otherwise (no finding)."""
        return rule_of("verdict", self.status)

    def to_dict(self) -> dict[str, object]:
        comparison = self.comparison.to_dict() if self.comparison is not None else None
        return {
            "rule": self.rule,
            "question": self.question,
            "status": self.status,
            "matches": self.matches,
            "reason": self.reason,
            "comparison": comparison,
            "first_difference": self.first_difference.to_dict() if self.first_difference is not None else None,
            "frozen": self.frozen.to_dict() if self.frozen is not None else None,
        }


def random_reason(gm: torch.fx.GraphModule, names: set[str] | None, where: str) -> str | None:
    """'random node rand (f.py:3) ...' for the first random node (of ``names`` when given)."""
    drawn = [node for node in random_nodes(gm) if names is None or node.name in names]
    if not drawn:
        return None
    source = source_of(drawn[0])
    more = f" and {len(drawn) - 1} more" if len(drawn) > 1 else ""
    return f"random node {drawn[0].name} ({source.where if source else 'no source line'}){more} {where}"


def rewrite_verdict(traced: torch.fx.GraphModule, before: RunRecord, after: RunRecord, rtol: float | None, atol: float | None) -> Verdict:
    """The run after the pass against the run before it, on the same device and with the same seed."""
    if after.error is not None:
        return Verdict("rewrite", "not compared", reason=f"the rewritten graph failed at {after.error.node}")
    if before.error is not None:
        return Verdict("rewrite", "not compared", reason=f"the frozen graph failed on {before.device} at {before.error.node}")
    moved = {name for name in before.node_devices if before.device_type(name) != after.device_type(name)}
    random = random_reason(traced, moved, "draws on the host before the pass and on XLA after")
    if random is not None:
        return Verdict("rewrite", "not comparable", reason=random)
    comparison = compare_outputs(after.outputs, before.outputs, rtol=rtol, atol=atol)
    if comparison.matches is None:
        return Verdict("rewrite", "not compared", comparison, reason=", ".join(comparison.left_out) or "nothing to compare")
    if comparison.matches:
        return Verdict("rewrite", comparison.status, comparison)
    if before.matches_reference is False and after.matches_reference is True and before.comparison is not None:
        return Verdict("rewrite", "fixed", comparison, frozen=before.comparison)
    return Verdict("rewrite", "differ", comparison)


def cpu_verdict(
    traced: torch.fx.GraphModule,
    before: RunRecord | None,
    after: RunRecord,
    generator: str | None = "draws from XLA's generator, which is not CPU's",
) -> Verdict:
    """The run after the pass on the device against the same graph run eagerly on CPU (``generator``: why
    random values on the device are not the CPU's, None when they are)."""
    if after.error is not None:
        return Verdict("cpu", "not compared", reason=f"the rewritten graph failed at {after.error.node}")
    random = random_reason(traced, None, generator) if generator else None
    if random is not None:
        return Verdict("cpu", "not comparable", reason=random)
    if after.comparison is None:
        return Verdict("cpu", "not compared", reason=after.not_compared)
    status = after.comparison.status
    both = before is not None and before.error is None and before.matches_reference is False
    reason = (
        "the run before the pass differs from CPU too: not the rewrite (an XLA kernel or lowering)" if status == "differ" and both else None
    )
    return Verdict("cpu", status, after.comparison, reason)
