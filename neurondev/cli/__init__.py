"""The neurondev command (also python -m neurondev)."""

from neurondev.cli.main import main

__all__ = ["main"]
