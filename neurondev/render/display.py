"""The renderers' views of an Explanation and a Watch, registered with neurondev._views (each imports its renderer when called)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from neurondev._views import register

__all__ = [
    "card",
    "dot",
    "explanation_json",
    "model_explorer_files",
    "page",
    "plain",
    "summary",
    "svg",
    "watch_card",
    "watch_page",
    "watch_text",
]


def summary(explanation: Any) -> str:
    from neurondev.render.text import summary as text

    return text(explanation)


def card(explanation: Any) -> str:
    from neurondev.render.html import card as html_card

    return html_card(explanation)


def page(explanation: Any) -> str:
    from neurondev.render.html import report

    return report(explanation)


def explanation_json(explanation: Any) -> dict[str, Any]:
    from neurondev.render.json import explanation_dict

    return explanation_dict(explanation)


def dot(explanation: Any, which: str, section: Any, *, full: bool, radius: int) -> str:
    from neurondev.render.drawing import dot_of

    return dot_of(explanation, which, section, full=full, radius=radius)


def svg(text: str) -> str:
    from neurondev.render.svg import render_svg

    return render_svg(text)


def model_explorer_files(explanation: Any, folder: str | Path) -> Any:
    from neurondev.render.model_explorer import save_model_explorer

    return save_model_explorer(explanation, folder)


def plain(value: Any) -> Any:
    from neurondev.render.json import plain as as_plain

    return as_plain(value)


def watch_text(watch: Any) -> str:
    from neurondev.render.watch import watch_summary

    return watch_summary(watch)


def watch_card(watch: Any) -> str:
    from neurondev.render.watch import watch_card as html_card

    return html_card(watch)


def watch_page(watch: Any) -> str:
    from neurondev.render.watch import watch_report

    return watch_report(watch)


register(
    summary=summary,
    card=card,
    page=page,
    explanation_json=explanation_json,
    dot=dot,
    svg=svg,
    model_explorer_files=model_explorer_files,
    plain=plain,
    watch_summary=watch_text,
    watch_card=watch_card,
    watch_page=watch_page,
)
