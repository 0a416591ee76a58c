"""Every exception and warning neurondev raises on purpose; each says what to do next."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

__all__ = [
    "NeurondevError",
    "NotCallableError",
    "MissingInputsError",
    "TraceError",
    "CaptureInputError",
    "InvalidTargetError",
    "InvalidSubjectError",
    "InputCountError",
    "InvalidOptionError",
    "OptionShadowsArgumentError",
    "XlaUnavailableError",
    "XlaInputError",
    "UnsupportedWorldSizeError",
    "RankRunError",
    "DevicePinsError",
    "UnknownExampleError",
    "DotUnavailableError",
    "DrawTimeoutError",
    "ModelExplorerUnavailableError",
    "InputSpecError",
    "CannotRebuildError",
    "UncommittedChangesError",
    "SourceChangedError",
    "NestedWatchError",
    "PassInvariantError",
    "HostDeviceError",
    "ObserverError",
    "DeviceUnavailableError",
    "LargeInputWarning",
    "NoGraphWarning",
    "warn_user",
]

_PACKAGE = str(Path(__file__).resolve().parent)


class NeurondevError(Exception):
    """Base class of every error neurondev raises on purpose."""


class NotCallableError(NeurondevError, TypeError):
    """capture/explain was given something that cannot be called."""


class MissingInputsError(NeurondevError, ValueError):
    """The function needs example inputs to be traced and none were given."""


class TraceError(NeurondevError, RuntimeError):
    """Tracing the user's function raised; the user's own error is chained as __cause__."""


class CaptureInputError(NeurondevError, TypeError):
    """An input of a capture cannot be traced on CPU (a meta tensor has no values to run with)."""


class InvalidTargetError(NeurondevError, ValueError):
    """The target device of a pass or a run is not a device torch knows, or not a device name at all."""


class InvalidSubjectError(NeurondevError, TypeError):
    """A function was given the wrong kind of object (a function where a graph is needed, ...)."""


class InputCountError(NeurondevError, TypeError):
    """A graph was given more or fewer inputs than it has placeholders."""


class InvalidOptionError(NeurondevError, ValueError):
    """An option has a value that cannot be used (a negative repeat count, ...)."""


class OptionShadowsArgumentError(NeurondevError, TypeError):
    """An option of explain or check has the name of one of the function's own arguments."""


class XlaUnavailableError(NeurondevError, ImportError):
    """A run on an XLA device was asked for, but torch_xla cannot be imported or initialised."""


class XlaInputError(NeurondevError, TypeError):
    """An input of a run cannot be moved to the XLA device."""


class UnsupportedWorldSizeError(NeurondevError, ValueError):
    """A multi-rank run was asked for with a number of ranks this runtime cannot run."""


class RankRunError(NeurondevError, RuntimeError):
    """A multi-rank run ended without every rank's result; the message carries the ranks' own error output."""


class DevicePinsError(NeurondevError, AssertionError):
    """neurondev.check found device pins (or device-specialised lines) that are not allowed."""

    def __init__(self, message: str, findings: list[Any] | None = None) -> None:
        super().__init__(message)
        self.findings = findings or []


class UnknownExampleError(NeurondevError, KeyError):
    """``neurondev.examples.get`` was given a name the gallery does not have."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


class DotUnavailableError(NeurondevError, RuntimeError):
    """No Graphviz ``dot`` program could draw the graph: drawing is skipped, everything else works."""


class DrawTimeoutError(DotUnavailableError):
    """``dot`` took longer than its time to draw a graph (a dot program exists: the graph is too big for the time)."""


class ModelExplorerUnavailableError(NeurondevError, ImportError):
    """Model Explorer (the optional extra neurondev[explorer]) is not installed, or its server did not start."""


class InputSpecError(NeurondevError, ValueError):
    """An ``--input`` spec that the command line's input language does not accept."""


class CannotRebuildError(NeurondevError, RuntimeError):
    """The fixed copy of the user's code could not be loaded, or the callable not found in it (the fix stays unverified)."""


class UncommittedChangesError(NeurondevError, RuntimeError):
    """A file to fix has uncommitted changes under git: commit or stash them, or pass force (--force)."""


class SourceChangedError(NeurondevError, RuntimeError):
    """A file to patch changed (or went) since it was traced: explain it again first."""


class NestedWatchError(NeurondevError, RuntimeError):
    """A watch was started while another is on: watches do not nest (each sees every compile anyway)."""


class PassInvariantError(NeurondevError, AssertionError):
    """DeviceRewriterPass left a device argument it rewrites (its ``ensures`` check): a bug in neurondev, please report it."""


class HostDeviceError(NeurondevError, RuntimeError):
    """The host test device cannot be built (no C++ compiler, no ninja) or registered (another backend holds PrivateUse1)."""


class ObserverError(NeurondevError, RuntimeError):
    """The dispatcher's observer, which counts a native device's copies, syncs and fallbacks, cannot be built (no C++
    compiler, no ninja)."""


class TorchInternalsError(NeurondevError, RuntimeError):
    """A private torch or torch_xla hook neurondev reads (``neurondev._compat``) is missing from this install:
    the message names it and the versions it was checked with."""


class DeviceUnavailableError(NeurondevError, RuntimeError):
    """A device torch could name but whose backend is not loaded in this process (its package is not imported)."""


class NoGraphWarning(UserWarning):
    """A capture recorded no graph: the reason is in the message and in ``Capture.notes``."""


class LargeInputWarning(UserWarning):
    """explain's copies of the inputs would take more memory than is wise (over 1 GB, or over half of what is free):
    said before anything is copied, with the size, the estimate and a smaller input to pass instead."""


def warn_user(message: str, category: type[Warning]) -> None:
    """Warn, pointing at the user's own call (the first frame outside neurondev), wherever in
    neurondev the warning is raised."""
    level, frame = 2, sys._getframe(1)  # stacklevel 2 is warn_user's caller
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level += 1
        frame = frame.f_back  # type: ignore[assignment]
    warnings.warn(message, category, stacklevel=level)
