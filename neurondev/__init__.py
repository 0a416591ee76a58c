"""neurondev: see and fix the device pins torch.compile freezes into graphs traced on CPU for XLA."""

from .backend import backend
from .capture import Capture, capture
from .diagnose import diagnose
from .errors import (
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
from .check import check
from .explain import Explanation, explain
from .native import TraceComparison, compare_traces
from .passes.device_rewriter import DeviceRewriterPass, Rewrite, rewrite_copy
from .pins import DevicePin, find_pins
from .run import RunRecord, run_on_xla

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
