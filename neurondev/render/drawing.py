"""The graphs of an Explanation as DOT and SVG: one section's graph before or after the pass, with its run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from neurondev.errors import DotUnavailableError, InvalidOptionError
from neurondev.render.dot import DotOptions, graph_dot, side_by_side
from neurondev.xla.run_records import RunRecord

if TYPE_CHECKING:
    from neurondev.report.model import Explanation, SectionKey

__all__ = ["DRAW_SECONDS", "dot_of", "svg_or_reason"]

_WHICH = ("before", "after")


def dot_of(
    explanation: Explanation, which: str, section: int | SectionKey, *, full: bool = False, radius: int = 2, level: str = "nodes"
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


DRAW_SECONDS = 5.0  # a card never waits longer than this for one drawing


def svg_or_reason(
    explanation: Explanation, which: str, section: int | SectionKey, *, budget: float = DRAW_SECONDS, **options: Any
) -> tuple[str | None, str | None]:
    """(svg, None); (svg, what was drawn instead) when the focus view took longer than ``budget``
    seconds and the coarser module view was drawn; or (None, why nothing could be drawn)."""
    from neurondev.render.svg import render_svg

    try:
        return render_svg(dot_of(explanation, which, section, **options), timeout=budget), None
    except DotUnavailableError as error:
        if "longer than" not in str(error):
            return None, str(error)
    try:
        coarse = render_svg(dot_of(explanation, which, section, level="modules"), timeout=budget)
    except DotUnavailableError as error:
        nodes = explanation.section(section).nodes
        return None, (
            f"not drawn within {budget:g} s ({nodes} nodes; {error}); open the graph in Model Explorer: "
            "ex.save_model_explorer('folder') or ex.model_explorer()"
        )
    return coarse, f"the focus view took longer than {budget:g} s to draw: drawn module by module instead"
