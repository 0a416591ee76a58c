"""The graphs of an Explanation as DOT and SVG: built from its sections, drawn once, cached on it."""

from __future__ import annotations

from typing import Any

from neurondev.errors import InvalidOptionError
from neurondev.render.dot import DotOptions, graph_dot, side_by_side

__all__ = ["dot_of", "prerender", "svg_of", "svg_or_reason"]

_WHICH = ("before", "after")


def _section(explanation: Any, which: str, graph: int):
    if which not in _WHICH:
        raise InvalidOptionError(f"which is 'before' or 'after', got {which!r}")
    count = len(explanation.sections)
    if isinstance(graph, bool) or not isinstance(graph, int) or not 0 <= graph < count:
        raise InvalidOptionError(f"graph is an index from 0 to {count - 1} ({count} graph(s) were captured), got {graph!r}")
    return explanation.sections[graph]


def dot_of(explanation: Any, which: str, graph: int, *, full: bool = False, radius: int = 2) -> str:
    """DOT text of one graph before (pins marked) or after (rewrites marked) the pass, with its run."""
    section = _section(explanation, which, graph)
    options = DotOptions(full=full, radius=radius)
    if which == "before":
        record = section.run_before
        title = _title("traced on CPU", record)
        body = graph_dot(section.before, pins=section.pins, record=record, title=title, prefix="before_", options=options)
    else:
        record = section.run_after
        title = _title("after DeviceRewriterPass", record)
        body = graph_dot(section.after, rewrites=section.rewrites, record=record, title=title, prefix="after_", options=options)
    return side_by_side(body)


def _title(what: str, record: Any) -> str:
    if record is None:
        return what
    if record.error is not None:
        return f"{what}: failed at {record.error.node} on {record.device}"
    return f"{what}: {len(record.graph_breaks)} break(s) on {record.device}, output on {', '.join(record.output_devices) or '-'}"


def svg_of(explanation: Any, which: str, graph: int, *, full: bool = False, radius: int = 2) -> str:
    """SVG of one graph, cached per (which, graph, full, radius) on the explanation."""
    from neurondev.render.svg import render_svg

    key = (which, graph, full, radius)
    if key not in explanation._svgs:
        explanation._svgs[key] = render_svg(dot_of(explanation, which, graph, full=full, radius=radius))
    return explanation._svgs[key]


def svg_or_reason(explanation: Any, which: str, graph: int, **options: Any) -> tuple[str | None, str | None]:
    """(svg, None), or (None, why it could not be drawn: no dot program, dot failed)."""
    from neurondev.render.svg import DotUnavailableError

    try:
        return svg_of(explanation, which, graph, **options), None
    except DotUnavailableError as error:
        return None, str(error)


def prerender(explanation: Any) -> None:
    """Draw every graph before and after now, so that displaying the card is instant."""
    for section in explanation.sections:
        for which in _WHICH:
            _, reason = svg_or_reason(explanation, which, section.index)
            if reason is not None:
                return
