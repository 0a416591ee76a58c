"""neurondev: see and fix the device pins torch.compile freezes into graphs traced on CPU for XLA."""

from neurondev.integrations.backend import backend
from neurondev.trace.capture import Capture, capture
from neurondev.fx.diagnose import diagnose
from neurondev.errors import (
    CaptureInputError,
    DevicePinsError,
    InputCountError,
    InvalidOptionError,
    InvalidSubjectError,
    InvalidTargetError,
    MissingInputsError,
    MixedDeviceInputsError,
    NeurondevError,
    NoGraphWarning,
    NotCallableError,
    TraceError,
    UnknownExampleError,
    UnsupportedWorldSizeError,
    XlaInputError,
    XlaUnavailableError,
)
from neurondev.report.check import check
from neurondev.report.explanation import Explanation, explain
from neurondev.xla.native import TraceComparison, compare_traces
from neurondev.passes.device_rewriter import DeviceRewriterPass, Rewrite, rewrite_copy
from neurondev.fx.pins import DevicePin, find_pins
from neurondev.xla.run import RunRecord, run_on_xla

__version__ = "0.1.0"

__all__ = [
    "UnknownExampleError",
    "DevicePinsError",
    "TraceComparison",
    "check",
    "compare_traces",
    "CaptureInputError",
    "InputCountError",
    "InvalidOptionError",
    "InvalidSubjectError",
    "MixedDeviceInputsError",
    "NoGraphWarning",
    "UnsupportedWorldSizeError",
    "Capture",
    "Explanation",
    "explain",
    "DevicePin",
    "DeviceRewriterPass",
    "InvalidTargetError",
    "MissingInputsError",
    "NeurondevError",
    "NotCallableError",
    "Rewrite",
    "RunRecord",
    "TraceError",
    "XlaInputError",
    "XlaUnavailableError",
    "backend",
    "capture",
    "diagnose",
    "find_pins",
    "rewrite_copy",
    "run_on_xla",
]
