"""Jupyter: the ipywidgets explorer and per-stage progress."""
