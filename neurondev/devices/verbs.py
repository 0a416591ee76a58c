"""The public verbs that run on a target device, whichever its stack: compare_traces."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from neurondev.devices.drivers import driver_for
from neurondev.runs.traces import TraceComparison
from neurondev.runs.traces import compare_traces as compare_on

__all__ = ["compare_traces"]


def compare_traces(fn: Callable, *args: Any, **kwargs: Any) -> TraceComparison:
    """Trace ``fn`` on CPU and natively on the XLA device, and compare the two traces line by line.

    Dynamo evaluates Python on the real inputs, so ``if x.device.type == "cpu": ...`` is decided
    while tracing: a CPU trace bakes in the CPU branch. Lines whose ops differ beyond device
    arguments, graphs only one trace has, whether the rewritten CPU graph is then the native one,
    and where the native run fails (with its line, never raised).
    """
    return compare_on(fn, args, kwargs, driver=driver_for(torch.device("xla")))
