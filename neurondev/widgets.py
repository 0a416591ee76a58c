"""``neurondev.widgets``: the ipywidgets explorer of an Explanation."""

from neurondev.notebook.explorer import Explorer

__all__ = ["Explorer"]
