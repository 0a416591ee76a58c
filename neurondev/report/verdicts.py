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

from neurondev.rulebook import rule_of
from neurondev.runs.first_difference import NodeDifference
from neurondev.runs.reasons import NotCompared, random_draws
from neurondev.runs.run_records import RunRecord
from neurondev.runs.values import Comparison, compare_outputs

__all__ = ["Verdict", "cpu_verdict", "rewrite_verdict"]

_MATCHING = ("equal", "within tolerance", "fixed")


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One answer about values: ``status`` is 'equal', 'within tolerance', 'differ', 'fixed' (the
    rewrite repaired a wrong frozen run), 'not comparable' (random values) or 'not compared'.
    ``question`` is 'rewrite' or 'cpu'; ``reason``: why values were not compared (or are not comparable);
    ``frozen_differs``: the values differ from CPU's and the run before the pass differed too (not the rewrite).
    ``first_difference``: when a graph on XLA differs from CPU, the first node whose value differs
    while its inputs agree (where XLA departs from CPU), or None when that was not looked for.
    ``frozen``: for 'fixed', the frozen graph's own run against CPU (what the rewrite repaired)."""

    question: str
    status: str
    comparison: Comparison | None = None
    reason: NotCompared | None = None
    first_difference: NodeDifference | None = None
    frozen: Comparison | None = None
    frozen_differs: bool = False

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
            "reason": self.reason.to_dict() if self.reason is not None else None,
            "frozen_differs": self.frozen_differs,
            "comparison": comparison,
            "first_difference": self.first_difference.to_dict() if self.first_difference is not None else None,
            "frozen": self.frozen.to_dict() if self.frozen is not None else None,
        }


def rewrite_verdict(traced: torch.fx.GraphModule, before: RunRecord, after: RunRecord, rtol: float | None, atol: float | None) -> Verdict:
    """The run after the pass against the run before it, on the same device and with the same seed."""
    if after.error is not None:
        return Verdict("rewrite", "not compared", reason=NotCompared("graph failed", graph="rewritten", node=after.error.node))
    if before.error is not None:
        failed = NotCompared("graph failed", graph="frozen", node=before.error.node, device=before.device)
        return Verdict("rewrite", "not compared", reason=failed)
    moved = {name for name in before.node_devices if before.device_type(name) != after.device_type(name)}
    random = random_draws(traced, moved, "moved", after.device)
    if random is not None:
        return Verdict("rewrite", "not comparable", reason=random)
    comparison = compare_outputs(after.outputs, before.outputs, rtol=rtol, atol=atol)
    if comparison.matches is None:
        left_out = (
            NotCompared("left out", left_out=tuple(comparison.left_out)) if comparison.left_out else NotCompared("nothing to compare")
        )
        return Verdict("rewrite", "not compared", comparison, reason=left_out)
    if comparison.matches:
        return Verdict("rewrite", comparison.status, comparison)
    if before.matches_reference is False and after.matches_reference is True and before.comparison is not None:
        return Verdict("rewrite", "fixed", comparison, frozen=before.comparison)
    return Verdict("rewrite", "differ", comparison)


def cpu_verdict(
    traced: torch.fx.GraphModule,
    before: RunRecord | None,
    after: RunRecord,
    generator: str | None = "XLA",
) -> Verdict:
    """The run after the pass on the device against the same graph run eagerly on CPU (``generator``: whose
    generator random values on the device draw from when not the CPU's, None when they are the CPU's)."""
    if after.error is not None:
        return Verdict("cpu", "not compared", reason=NotCompared("graph failed", graph="rewritten", node=after.error.node))
    random = random_draws(traced, None, "device", generator) if generator else None
    if random is not None:
        return Verdict("cpu", "not comparable", reason=random)
    if after.comparison is None:
        return Verdict("cpu", "not compared", reason=after.not_compared)
    status = after.comparison.status
    both = before is not None and before.error is None and before.matches_reference is False
    return Verdict("cpu", status, after.comparison, frozen_differs=status == "differ" and both)
