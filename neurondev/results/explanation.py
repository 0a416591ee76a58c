"""The public Explanation (data from ``report``, displays from ``render``, widgets from ``notebook``) and the verbs that return one."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from neurondev.notebook.interactive import ExplanationWidgets
from neurondev.report import pipeline
from neurondev.report.model import ExplanationData
from neurondev.results import check as checking

__all__ = ["Explanation", "check", "explain"]


class Explanation(ExplanationWidgets):
    """Everything ``neurondev.explain`` found, for a notebook, a terminal, a report or CI; set once.

    Its members come in three groups, one class each: the data and what derives from it
    (``ExplanationData``: ``pins``, ``sections``, ``program``, ``before``/``after``, ``pin_table()``,
    ``fixes``, ``patch()``, ``rerun()``), the displays (``ExplanationDisplay``: the card in Jupyter, ``summary()``,
    ``fallback_table()``, ``save_html()``, ``to_dict()``/``to_json()``, ``to_dot()``/``svg()``,
    ``save_model_explorer()``) and the widgets (``ExplanationWidgets``: ``explore()``, ``model_explorer()``).
    It takes no new attributes, as it changes none of its own (``rerun()`` returns a new one).
    """

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to {name!r}: an Explanation is set once (ex.rerun() returns a new one)")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete {name!r}: an Explanation is set once")


def _public(result: Any) -> Any:
    """An Explanation of what the pipeline returned; explain(fn)'s callable returns one when called."""
    if isinstance(result, ExplanationData):
        return Explanation.of(result)
    if callable(result):
        return functools.wraps(result)(lambda *args, **kwargs: _public(result(*args, **kwargs)))
    return result


@functools.wraps(pipeline.explain)
def explain(*args: Any, **kwargs: Any) -> Any:
    return _public(pipeline.explain(*args, **kwargs))


@functools.wraps(checking.check)
def check(*args: Any, **kwargs: Any) -> Explanation:
    return Explanation.of(checking.check(*args, **kwargs))
