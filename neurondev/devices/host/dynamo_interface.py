"""The host device's interface for dynamo and inductor (``torch._dynamo.device_interface``), as CUDA's is: its device,
streams, events and properties, so that code compiled for the device can ask them."""

from __future__ import annotations

from typing import Any

__all__ = ["interface_class"]


def interface_class(module: Any) -> type:
    """The DeviceInterface subclass for the host device, whose runtime is ``module`` (``torch.hostdev``)."""
    from neurondev._compat.out_of_tree import dynamo_device_interface

    base: Any = dynamo_device_interface()

    class Properties:
        """What a compiler asks of a device: its name, and that it has one processor per CPU core it runs on."""

        def __init__(self) -> None:
            import os

            self.name, self.type, self.multi_processor_count = "hostdev", "hostdev", os.cpu_count() or 1

    class Worker:
        @staticmethod
        def set_device(device: int) -> None:
            module.set_device(device)

        @staticmethod
        def current_device() -> int:
            return module.current_device()

        @staticmethod
        def get_device_properties(device: Any = None) -> Properties:
            return Properties()

    class HostDeviceInterface(base):
        device = module.device
        Event = module.Event
        Stream = module.Stream
        current_device = staticmethod(module.current_device)
        set_device = staticmethod(module.set_device)
        device_count = staticmethod(module.device_count)
        is_available = staticmethod(module.is_available)
        stream = staticmethod(module.stream)
        current_stream = staticmethod(module.current_stream)
        set_stream = staticmethod(module.set_stream)
        synchronize = staticmethod(module.synchronize)
        is_bf16_supported = staticmethod(lambda including_emulation=False: True)

        @staticmethod
        def get_raw_stream(device_idx: int) -> int:
            return 0  # its one stream, the default

        @staticmethod
        def exchange_device(device: int) -> int:
            module.set_device(device)
            return 0

        @staticmethod
        def maybe_exchange_device(device: int) -> int:
            return HostDeviceInterface.exchange_device(device)

        @staticmethod
        def get_compute_capability(device: Any = None) -> str:
            return "host"

        @staticmethod
        def memory_allocated(device: Any = None) -> int:
            return 0  # host memory: not counted by the device

        @classmethod
        def get_device_properties(cls, device: Any = None) -> Properties:
            return Properties()

    HostDeviceInterface.Worker = Worker
    return HostDeviceInterface
