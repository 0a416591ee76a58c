"""neurondev: see and fix the device pins torch.compile freezes into graphs traced on CPU for XLA."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from neurondev._version import __version__ as __version__
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
    LargeInputWarning,
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

if TYPE_CHECKING:  # what the names below are, for type checkers and editors; imported on first use at run time
    from neurondev.devices.host import host_device
    from neurondev.devices.verbs import compare_traces
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
    "LargeInputWarning",
    "NoGraphWarning",
]

_SUBMODULES = ("examples", "widgets", "xla", "testing")
_LAZY = {
    "host_device": "neurondev.devices.host",
    "compare_traces": "neurondev.devices.verbs",
    "DevicePin": "neurondev.fx.pins",
    "diagnose": "neurondev.fx.pins",
    "find_pins": "neurondev.fx.pins",
    "backend": "neurondev.integrations.backend",
    "DeviceRewriterPass": "neurondev.passes.device_rewriter",
    "Rewrite": "neurondev.passes.device_rewriter",
    "rewrite_copy": "neurondev.passes.device_rewriter",
    "describe": "neurondev.render.sentences",
    "Fix": "neurondev.report.fixes.records",
    "Section": "neurondev.report.model",
    "SectionKey": "neurondev.report.model",
    "Explanation": "neurondev.results.explanation",
    "check": "neurondev.results.explanation",
    "explain": "neurondev.results.explanation",
    "Watch": "neurondev.results.watched",
    "watch": "neurondev.results.watched",
    "rules": "neurondev.rulebook",
    "RunRecord": "neurondev.runs.run_records",
    "TraceComparison": "neurondev.runs.traces",
    "Capture": "neurondev.trace.capture",
    "capture": "neurondev.trace.capture",
    "SourceLine": "neurondev.trace.source",
    "run_on_xla": "neurondev.xla.run",
}  # the public names torch is needed for: `import neurondev` (and the command's usage errors) stay fast


def __getattr__(name: str) -> Any:
    """The verbs and records, imported (with torch) on first use; ``neurondev.examples``, ``neurondev.widgets``,
    ``neurondev.xla``: the modules, on first use."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # once: the next use is a plain attribute
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"neurondev.{name}")
    raise AttributeError(f"module 'neurondev' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_SUBMODULES})
