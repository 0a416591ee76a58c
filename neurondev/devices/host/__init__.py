"""neurondev's host-memory test device: a PrivateUse1 backend over host memory, built here, for learning and tests."""

from neurondev.devices.host.loader import NAME, host_device, loaded

__all__ = ["NAME", "host_device", "loaded"]
