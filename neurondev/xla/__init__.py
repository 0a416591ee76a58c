"""The XLA side: the runtime and its counters, runs of one graph, value comparison, native traces."""

from neurondev.xla.runtime import *  # noqa: F403
from neurondev.xla.runtime import __all__
