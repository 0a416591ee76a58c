"""Named exceptions: every error neurondev raises on bad input says what to do next."""

__all__ = [
    "NeurondevError",
    "NotCallableError",
    "MissingInputsError",
    "TraceError",
    "InvalidTargetError",
    "XlaUnavailableError",
    "XlaInputError",
]


class NeurondevError(Exception):
    """Base class of every error neurondev raises on purpose."""


class NotCallableError(NeurondevError, TypeError):
    """capture/explain was given something that cannot be called."""


class MissingInputsError(NeurondevError, ValueError):
    """The function needs example inputs to be traced and none were given."""


class TraceError(NeurondevError, RuntimeError):
    """Tracing the user's function raised; the user's own error is chained as __cause__."""


class InvalidTargetError(NeurondevError, ValueError):
    """The target device of a pass or a run is not a device torch knows."""


class XlaUnavailableError(NeurondevError, ImportError):
    """A run on an XLA device was asked for, but torch_xla cannot be imported or initialised."""


class XlaInputError(NeurondevError, TypeError):
    """An input of a run cannot be moved to the XLA device."""
