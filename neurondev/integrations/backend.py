"""The "neurondev" torch.compile backend's registered entry point (``torch_dynamo_backends``); it lives in ``neurondev.devices.compiler``."""

from __future__ import annotations

from neurondev.devices.compiler import backend, input_placement

__all__ = ["backend", "input_placement"]
