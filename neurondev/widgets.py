"""``neurondev.widgets``: the ipywidgets explorer of an Explanation."""

from neurondev.notebook.widgets import Explorer

__all__ = ["Explorer"]
