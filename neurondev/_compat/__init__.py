"""Every private torch / torch_xla / IPython hook neurondev uses, in one package, with the versions checked.

Each of these reaches into an internal that a release may move. They were checked against the versions in
``CHECKED_WITH``; when one breaks, this package is the only place to mend, one module per library or part of torch:
``fx_internals`` (graphs, pytrees, what dynamo names), ``default_device`` (the function-mode stack), ``dynamo``
(its caches, metrics, guards and hooks), ``out_of_tree`` (what a PrivateUse1 device registers), ``torch_xla_hooks``
and ``ipython``. One exception, read in a hot loop, is named in ``fx_internals``: ``torch.fx.Node._args`` /
``._kwargs`` in ``fx/devices.py``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CHECKED_WITH", "TESTED_ALONE", "TESTED_IPYTHON", "TESTED_PAIR", "hook", "torch_at_least"]

# The one list of the versions tested here (requirements/ pins them; tests/test_suite_setup.py checks they agree):
TESTED_PAIR = ("2.9.0", "2.9.0")  # torch + torch-xla: requirements/constraints.txt
TESTED_ALONE = ("2.13.0",)  # torch without torch-xla (TorchNeuron's PyTorch): requirements/constraints-current.txt
TESTED_IPYTHON = "9.18.1"
CHECKED_WITH = {"torch": (TESTED_PAIR[0], *TESTED_ALONE), "torch_xla": TESTED_PAIR[1], "IPython": TESTED_IPYTHON}


def hook(owner: Any, name: str, what: str) -> Any:
    """``owner.name``, a private hook; TorchInternalsError naming it and the versions checked when it is gone."""
    found = getattr(owner, name, None)
    if found is None:
        import torch

        from neurondev.errors import TorchInternalsError

        checked = f"torch {' and '.join(CHECKED_WITH['torch'])}, torch-xla {CHECKED_WITH['torch_xla']}"
        raise TorchInternalsError(
            f"neurondev needs {what} ({getattr(owner, '__name__', owner)}.{name}), which this install does not have "
            f"(torch {torch.__version__}); it was checked with {checked}: install one of those, or report it"
        )
    return found


def torch_at_least(wanted: tuple[int, int], version: str | None = None) -> bool:
    """Whether this torch (or ``version``) is ``wanted`` (major, minor) or newer."""
    import torch

    major, minor = (int(part) for part in (version or torch.__version__).split("+")[0].split(".")[:2])
    return (major, minor) >= wanted
