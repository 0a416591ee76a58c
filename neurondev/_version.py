"""The package's version, in one place (the command line and the package read it)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
