"""The notebook's side of an Explanation: the ipywidgets explorer and the Model Explorer server, on top of its displays."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from neurondev._paths import output_folder, serving_port
from neurondev.render.display import ExplanationDisplay

if TYPE_CHECKING:
    from neurondev.notebook.explorer import Explorer
    from neurondev.notebook.explorer_server import ModelExplorerServer

__all__ = ["ExplanationWidgets"]


class ExplanationWidgets(ExplanationDisplay):
    """``explore()`` (the widget) and ``model_explorer()`` (the graphs in Model Explorer, served on loopback)."""

    def explore(self) -> Explorer:
        """The ipywidgets explorer: pins, the selected pin's fix, the graph around it, a button to run on another target."""
        from neurondev.notebook.explorer import Explorer

        return Explorer(self)

    def model_explorer(self, folder: str | Path | None = None, *, port: int | None = None) -> ModelExplorerServer:
        """Start Model Explorer (on loopback) with this Explanation's graphs; in a notebook it shows embedded. The
        graphs are saved into ``folder``, or without one into a temporary folder removed when Python exits."""
        from neurondev.notebook.explorer_server import open_model_explorer

        if port is not None:
            serving_port(port)
        if folder is not None:
            folder = output_folder(folder, what="model_explorer's folder", example="me/")
        return open_model_explorer(self, folder, port=port)
