"""Rendering: DOT text for graphs (pure), for graphviz to draw."""
