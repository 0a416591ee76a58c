"""Import optional dependencies where they are used, with an error that says how to install them."""

import importlib

__all__ = ["require"]

_PIP_NAMES = {"torch_xla": "torch-xla", "graphviz": "graphviz", "pandas": "pandas", "ipywidgets": "ipywidgets"}


def require(module: str, *, purpose: str):
    """Import ``module`` or raise ImportError naming the pip package and what it is needed for."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        package = _PIP_NAMES.get(module, module)
        raise ImportError(
            f"neurondev needs {module!r} for {purpose}: pip install {package} "
            f"(or run scripts/setup.sh in a neurondev checkout)"
        ) from error
