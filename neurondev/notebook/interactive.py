"""The notebook's views of an Explanation (the explorer widget, the Model Explorer server), registered with neurondev._views."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from neurondev._views import register

__all__ = ["explorer", "model_explorer_server"]


def explorer(explanation: Any) -> Any:
    from neurondev.notebook.explorer import Explorer

    return Explorer(explanation)


def model_explorer_server(explanation: Any, folder: str | Path | None, *, port: int | None) -> Any:
    from neurondev.notebook.explorer_server import open_model_explorer

    return open_model_explorer(explanation, folder, port=port)


register(explore=explorer, model_explorer=model_explorer_server)
