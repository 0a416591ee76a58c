"""What a device did, counted: one reading of cumulative counters (XLA's metrics, or a native device's accounting); subtract two."""

from __future__ import annotations

import dataclasses

__all__ = ["Counts"]


@dataclasses.dataclass(frozen=True)
class Counts:
    """Cumulative counts at one moment; ``later - earlier`` is what happened in between.

    XLA (torch_xla's metrics): ``executions`` and ``compilations`` of XLA programs, ``transfers_to_host``
    and ``transfers_to_device``, and ``fallbacks`` (op, calls) that ran on the CPU. A native device
    (dispatch-level accounting): ``transfers_to_host`` / ``transfers_to_device`` are the copies the
    program made (with their ``bytes_to_host`` / ``bytes_to_device``), ``syncs`` the host reads of device
    values (``.item()``), ``fallbacks`` the ops its backend ran on the CPU and ``fallback_bytes`` what
    those copied; it has no lazy program to execute or compile (0). ``compile_seconds`` is the time XLA
    spent compiling, ``cached_compiles`` the programs it found in its cache instead (XLA); ``collective_copies``
    how many of the native copies a collective made (a process group moving device tensors through the host);
    ``execute_seconds`` and ``transfer_seconds``: torch_xla's own clocks of its executions and of its transfers to
    the host (``ExecuteTime``, ``TransferFromDeviceTime``).
    """

    executions: int = 0
    compilations: int = 0
    transfers_to_host: int = 0
    transfers_to_device: int = 0
    fallbacks: tuple[tuple[str, int], ...] = ()
    syncs: int = 0
    bytes_to_host: int = 0
    bytes_to_device: int = 0
    fallback_bytes: int = 0
    compile_seconds: float = 0.0
    cached_compiles: int = 0
    collective_copies: int = 0
    execute_seconds: float = 0.0
    transfer_seconds: float = 0.0

    def __sub__(self, other: Counts) -> Counts:
        earlier = dict(other.fallbacks)
        # counters can be cleared under us (torch_xla's dynamo bridge clears them while it probes a graph): never below 0
        fallbacks = tuple((op, n - earlier.get(op, 0)) for op, n in self.fallbacks if n - earlier.get(op, 0) > 0)
        return Counts(
            self.executions - other.executions,
            self.compilations - other.compilations,
            self.transfers_to_host - other.transfers_to_host,
            self.transfers_to_device - other.transfers_to_device,
            fallbacks,
            self.syncs - other.syncs,
            self.bytes_to_host - other.bytes_to_host,
            self.bytes_to_device - other.bytes_to_device,
            self.fallback_bytes - other.fallback_bytes,
            self.compile_seconds - other.compile_seconds,
            max(self.cached_compiles - other.cached_compiles, 0),
            self.collective_copies - other.collective_copies,
            self.execute_seconds - other.execute_seconds,
            self.transfer_seconds - other.transfer_seconds,
        )

    @property
    def forced(self) -> bool:
        """The device had to hand data to the host: an execution forced mid-graph (XLA), a transfer to the
        host, or a sync (a break in XLA's lazy graph; a stall on a native device)."""
        return self.executions > 0 or self.transfers_to_host > 0 or self.syncs > 0

    @property
    def fallback_calls(self) -> int:
        return sum(n for _, n in self.fallbacks)
