"""IPython's internals: the execution count of the cell a file name stands for."""

from __future__ import annotations

import sys

__all__ = ["ipython_cell_number"]


def ipython_cell_number(file: str) -> int | None:
    """The execution count IPython gave the cell it compiled to ``file`` (None outside IPython)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    names = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
    return names.get(file)
