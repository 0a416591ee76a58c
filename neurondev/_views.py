"""The views of neurondev's results, registered by the folders that draw them: a result calls a view by name, imports none.

As python graphviz composes its classes from capabilities that only call hooks on ``self``, an
Explanation or a Watch never imports a renderer: ``neurondev.render.display`` and
``neurondev.notebook.interactive`` register theirs when ``neurondev`` is imported, and a result's display
methods (``_repr_html_``, ``summary``, ``save_html``, ``explore``, ...) call ``view(name)(self, ...)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["register", "view"]

_VIEWS: dict[str, Callable[..., Any]] = {}


def register(**views: Callable[..., Any]) -> None:
    """Make ``views`` (name -> function of a result) available to results."""
    _VIEWS.update(views)


def view(name: str) -> Callable[..., Any]:
    """The view registered under ``name``."""
    try:
        return _VIEWS[name]
    except KeyError:
        raise LookupError(f"no view {name!r} is registered: import neurondev (its renderers register their views)") from None
