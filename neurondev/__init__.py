"""neurondev: see and fix the device pins torch.compile freezes into graphs traced on CPU for XLA."""

from __future__ import annotations

import importlib
from typing import Any

from neurondev._version import __version__ as __version__
from neurondev.devices.host import host_device
from neurondev.devices.verbs import compare_traces
from neurondev.errors import (
    CaptureInputError,
    DevicePinsError,
    DeviceUnavailableError,
    DotUnavailableError,
    DrawTimeoutError,
    HostDeviceError,
    InputCountError,
    InputSpecError,
    InvalidOptionError,
    InvalidSubjectError,
    InvalidTargetError,
    MissingInputsError,
    ModelExplorerUnavailableError,
    NestedWatchError,
    NeurondevError,
    NoGraphWarning,
    NotCallableError,
    OptionShadowsArgumentError,
    PassInvariantError,
    RankRunError,
    SourceChangedError,
    TraceError,
    UncommittedChangesError,
    UnknownExampleError,
    UnsupportedWorldSizeError,
    XlaInputError,
    XlaUnavailableError,
)
from neurondev.fx.pins import DevicePin, diagnose, find_pins
from neurondev.integrations.backend import backend
from neurondev.passes.device_rewriter import DeviceRewriterPass, Rewrite, rewrite_copy
from neurondev.render.sentences import describe
from neurondev.report.fixes.records import Fix
from neurondev.report.model import Section, SectionKey
from neurondev.results.explanation import Explanation, check, explain
from neurondev.results.watched import Watch, watch
from neurondev.rulebook import rules
from neurondev.runs.run_records import RunRecord
from neurondev.runs.traces import TraceComparison
from neurondev.trace.capture import Capture, capture
from neurondev.trace.source import SourceLine
from neurondev.xla.run import run_on_xla

__all__ = [
    # verbs
    "explain",
    "capture",
    "diagnose",
    "find_pins",
    "rewrite_copy",
    "run_on_xla",
    "compare_traces",
    "check",
    "watch",
    "describe",
    "rules",
    "backend",
    "host_device",
    "DeviceRewriterPass",
    # records
    "Explanation",
    "Section",
    "SectionKey",
    "Capture",
    "DevicePin",
    "Rewrite",
    "RunRecord",
    "TraceComparison",
    "SourceLine",
    "Fix",
    "Watch",
    # errors and warnings
    "NeurondevError",
    "CaptureInputError",
    "DevicePinsError",
    "DeviceUnavailableError",
    "DotUnavailableError",
    "DrawTimeoutError",
    "HostDeviceError",
    "InputCountError",
    "InputSpecError",
    "InvalidOptionError",
    "InvalidSubjectError",
    "InvalidTargetError",
    "MissingInputsError",
    "ModelExplorerUnavailableError",
    "NestedWatchError",
    "NotCallableError",
    "OptionShadowsArgumentError",
    "PassInvariantError",
    "SourceChangedError",
    "TraceError",
    "UncommittedChangesError",
    "UnknownExampleError",
    "UnsupportedWorldSizeError",
    "RankRunError",
    "XlaInputError",
    "XlaUnavailableError",
    "NoGraphWarning",
]

_SUBMODULES = ("examples", "widgets", "xla", "testing")


def __getattr__(name: str) -> Any:
    """``neurondev.examples``, ``neurondev.widgets``, ``neurondev.xla``: imported on first use."""
    if name in _SUBMODULES:
        return importlib.import_module(f"neurondev.{name}")
    raise AttributeError(f"module 'neurondev' has no attribute {name!r}")
