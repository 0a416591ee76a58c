"""The graphs of an Explanation as DOT and SVG: one section's graph before or after the pass, with its run."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from neurondev.errors import DotUnavailableError, DrawTimeoutError, InvalidOptionError
from neurondev.render.dot import DotOptions, graph_dot, side_by_side
from neurondev.runs.run_records import RunRecord

if TYPE_CHECKING:
    from neurondev.report.model import ExplanationData, SectionKey

__all__ = ["CARD_SECONDS", "DRAW_SECONDS", "DrawBudget", "dot_of", "svg_or_reason"]

_WHICH = ("before", "after")


def dot_of(
    explanation: ExplanationData, which: str, section: int | SectionKey, *, full: bool = False, radius: int = 2, level: str = "nodes"
) -> str:
    """DOT text of one section's graph before (pins marked) or after (rewrites marked) the pass, with its run."""
    if which not in _WHICH:
        raise InvalidOptionError(f"which is 'before' or 'after', got {which!r}")
    chosen = explanation.section(section)
    if level not in ("nodes", "modules"):
        raise InvalidOptionError(f"level is 'nodes' (the focus view) or 'modules' (one box per module), got {level!r}")
    options = DotOptions(full=full, radius=radius, level=level)
    if which == "before":
        title = _title("traced on CPU", chosen.before)
        body = graph_dot(chosen.traced, pins=chosen.pins, record=chosen.before, title=title, prefix="before_", options=options)
    else:
        title = _title("after DeviceRewriterPass", chosen.after)
        body = graph_dot(chosen.rewritten, rewrites=chosen.rewrites, record=chosen.after, title=title, prefix="after_", options=options)
    return side_by_side(body)


def _title(what: str, record: RunRecord | None) -> str:
    if record is None:
        return what
    if record.error is not None:
        return f"{what}: failed at {record.error.node} on {record.device}"
    return f"{what}: {len(record.graph_breaks)} break(s) on {record.device}, output on {', '.join(record.output_devices) or '-'}"


DRAW_SECONDS = 5.0  # one drawing never waits longer than this
CARD_SECONDS = 12.0  # nor a whole card (every section's two graphs together)


class DrawBudget:
    """The drawing time a card has left: each drawing gets at most ``DRAW_SECONDS`` of it."""

    def __init__(self, seconds: float | None = None) -> None:
        seconds = CARD_SECONDS if seconds is None else seconds
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds

    def left(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)

    def for_one(self) -> float:
        return min(self.left(), DRAW_SECONDS)


def svg_or_reason(
    explanation: ExplanationData, which: str, section: int | SectionKey, *, budget: DrawBudget | None = None, **options: Any
) -> tuple[str | None, str | None]:
    """(svg, None); (svg, what was drawn instead) when the focus view took longer than its time and
    the coarser module view was drawn; or (None, why nothing could be drawn: no dot, or no time left)."""
    from neurondev.render.svg import render_svg

    budget = budget or DrawBudget(DRAW_SECONDS * 2)
    if budget.for_one() <= 0.05:
        return None, _no_time(explanation, section, budget)
    try:
        return render_svg(dot_of(explanation, which, section, **options), timeout=budget.for_one()), None
    except DrawTimeoutError:
        pass
    except DotUnavailableError as error:  # no dot, or dot failed: no coarser drawing would fare better
        return None, str(error)
    if budget.for_one() <= 0.05:
        return None, _no_time(explanation, section, budget)
    try:
        coarse = render_svg(dot_of(explanation, which, section, level="modules"), timeout=budget.for_one())
    except DotUnavailableError as error:
        return None, f"{_no_time(explanation, section, budget)} ({error})"
    return coarse, "the focus view took longer than its drawing time: drawn module by module instead"


def _no_time(explanation: ExplanationData, section: int | SectionKey, budget: DrawBudget) -> str:
    nodes = explanation.section(section).nodes
    return (
        f"not drawn within the card's drawing time ({budget.seconds:g} s; {nodes} nodes): ex.svg('before', {section!r}) draws it "
        "alone, or open the graph in Model Explorer: ex.save_model_explorer('folder') or ex.model_explorer()"
    )
