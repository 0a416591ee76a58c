"""Values in words: how a device's outputs compare with the CPU's, why they were not compared, and the verdicts
on a rewrite and on a graph run."""

from __future__ import annotations

from collections.abc import Sequence

from neurondev.render.describe import describe
from neurondev.report.verdicts import Verdict
from neurondev.runs.first_difference import NodeDifference
from neurondev.runs.program_records import ProgramRun
from neurondev.runs.reasons import NotCompared
from neurondev.runs.values import Comparison, LeftOut, Mismatch

__all__ = [
    "comparison_text",
    "left_out_text",
    "mismatch_text",
    "node_difference_text",
    "not_compared_text",
    "reason_text",
    "values_text",
    "verdict_text",
]

_MISMATCH = {
    "count": "outputs DIFFER in structure: {left} vs {right} values",
    "value": "values DIFFER at {where}: {left} vs {right}",
    "type": "outputs DIFFER at {where}: {left} vs {right}",
    "shape": "shapes DIFFER at {where}: {left} vs {right}",
    "dtype": "dtypes DIFFER at {where}: {left} vs {right}",
}


@describe.register
def mismatch_text(mismatch: Mismatch) -> str:
    """'shapes DIFFER at output[0]: (2, 3) vs (3, 2)': what differs before any value does."""
    said = _MISMATCH[mismatch.kind].format(where=mismatch.where, left=mismatch.left, right=mismatch.right)
    return said + (f" ({', '.join(mismatch.only)} on one side only)" if mismatch.only else "")


def left_out_text(left_out: Sequence[LeftOut]) -> str:
    """ "output['cache'] (a Lock: no tensor in it, and nothing to compare it by)", each output left out, joined."""
    return ", ".join(
        f"{item.where} (a {item.held}: no tensor in it, and nothing to compare it by)"
        if item.where is not None
        else "nothing to compare: no tensor, no value"
        for item in left_out
    )


@describe.register
def comparison_text(comparison: Comparison) -> str:
    """'equal', 'equal within tolerance (max abs 5e-05, ...)', 'DIFFER (3 of 64 elements off, ...)',
    'shapes DIFFER: ...' when the outputs are not even alike, or 'not compared (why)'."""
    c = comparison
    figures = f"max abs {c.max_abs_error:.3g}, max rel {c.max_rel_error:.3g}"
    left = f"; not compared: {left_out_text(c.left_out[:3])}" if c.left_out else ""
    if c.status == "not compared":
        return f"not compared ({left_out_text(c.left_out) or 'nothing to compare'})"
    if c.structure is not None:
        return mismatch_text(c.structure) + left
    if c.status == "equal":
        return "equal" + left
    if c.status == "within tolerance":
        return f"equal within tolerance ({figures}){left}"
    return f"DIFFER ({c.elements_off} of {c.elements} elements off; {figures}){left}"


@describe.register
def node_difference_text(difference: NodeDifference) -> str:
    inside = f", in {difference.module}" if difference.module else ""
    compared = difference.comparison
    figures = f"max abs {compared.max_abs_error:.2g}" if compared.structure is None else mismatch_text(compared.structure)
    return f"{difference.node} ({difference.function}, {difference.where}{inside}): {figures}"


_DRAWS = {
    "moved": "draws on the host before the pass and on {device} after",
    "device": "draws from {device}'s generator, which is not CPU's",
    "cpu": "draws from the CPU's generator, seeded as CPU's run was; compiled code may draw in another order",
}


def reason_text(reason: NotCompared) -> str:
    """Why values were not compared, in words (a clause: 'the program failed')."""
    kind = reason.kind
    if kind == "graph failed":
        on = f" on {reason.device}" if reason.device else ""
        return f"the {reason.graph} graph failed{on} at {reason.node}"
    if kind == "random":
        more = f" and {reason.more} more" if reason.more else ""
        draws = _DRAWS[reason.draws or "device"].format(device=reason.device or "the device")
        return f"random node {reason.node} ({reason.where or 'no source line'}){more} {draws}"
    if kind == "left out":
        return left_out_text(reason.left_out)
    said = {
        "no cpu run": f"the graph does not run on CPU ({reason.error})",
        "no cpu result": "there is no CPU result to compare with",
        "program failed": "the program failed",
        "program did not run": f"the program did not run ({reason.error})" if reason.error else "the program did not run",
    }
    return said.get(kind, kind)


def not_compared_text(reason: NotCompared | None) -> str:
    """'values not compared: ...' (or 'not comparable', for random values), with the reason in words."""
    if reason is None:
        return "values not compared"
    return f"values {'not compared' if reason.comparable else 'not comparable'}: {reason_text(reason)}"


def values_text(run: ProgramRun) -> str:
    """How a program run's outputs, and what it writes, compare with CPU."""
    if run.state is not None and run.state.matches is False:
        return f"DIFFERS from CPU in what it writes ({comparison_text(run.state)})"
    compared = run.comparison
    if compared is None:
        return not_compared_text(run.not_compared)
    if compared.matches is None:
        return f"values {comparison_text(compared)}"
    if compared.matches:
        left = f" (not compared: {left_out_text(compared.left_out[:2])})" if compared.left_out else ""
        return f"agrees with CPU{left}"
    if compared.structure is not None:
        return f"DIFFERS from CPU ({mismatch_text(compared.structure)})"
    return f"DIFFERS from CPU ({compared.elements_off} of {compared.elements} elements off, max abs {compared.max_abs_error:.3g})"


_REWRITE = {
    "equal": "the rewrite changed no values",
    "within tolerance": "the rewrite changed no values",
    "differ": "the rewrite CHANGED the values",
    "fixed": "the rewrite fixed the values",
    "not comparable": "values before and after the rewrite are not comparable",
    "not compared": "values before and after the rewrite not compared",
}
_CPU = {
    "equal": "the graph on {place} agrees with CPU",
    "within tolerance": "the graph on {place} agrees with CPU",
    "differ": "the graph on {place} DIFFERS from CPU",
    "not comparable": "the graph's {place} and CPU values are not comparable",
    "not compared": "the graph on {place} not compared with CPU",
}


def verdict_text(verdict: Verdict, *, figures: bool = False, place: str = "XLA") -> str:
    """One line; equal and within tolerance read alike (which one depends on the processor's
    rounding), unless ``figures`` asks for the measured errors."""
    shown = figures or verdict.status == "differ"
    compared = verdict.comparison
    measured = f" ({comparison_text(compared)})" if shown and compared is not None and verdict.status != "equal" else ""
    reason = f": {reason_text(verdict.reason)}" if verdict.reason else ""
    if verdict.frozen_differs:
        reason += ": the run before the pass differs from CPU too: not the rewrite (an XLA kernel or lowering)"
    if verdict.frozen is not None:
        wrong = comparison_text(verdict.frozen)
        reason += f": the frozen graph's own run on {place} was wrong ({wrong} against CPU); the rewritten one agrees with CPU"
    text = _REWRITE[verdict.status] if verdict.question == "rewrite" else _CPU[verdict.status].format(place=place)
    return text + measured + reason


@describe.register
def _verdict(verdict: Verdict) -> str:
    return verdict_text(verdict)
