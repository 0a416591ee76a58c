"""The neurondev command (also python -m neurondev)."""

from neurondev.cli.command import main

__all__ = ["main"]
