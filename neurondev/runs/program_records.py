"""What running the user's whole program under torch.compile on XLA showed: per run, per call, and why it failed."""

from __future__ import annotations

import dataclasses
from typing import Any

from neurondev.rulebook import Ruled
from neurondev.runs.reasons import NotCompared
from neurondev.runs.run_records import Fallback, HostCopy, Upload
from neurondev.runs.values import Comparison
from neurondev.trace.source import Located, SourceLine

__all__ = ["DEVICE_MISMATCH", "FAILURE_KINDS", "ProgramCall", "ProgramFailure", "ProgramRun", "Programs"]

FAILURE_KINDS = (
    "mixed devices at compile time",  # dynamo's fake tensors met a host tensor and an XLA tensor in one op
    "default device ignored under torch.compile",  # the same, a factory call left on the CPU despite set_default_device
    "host-only call between graphs",  # .numpy(), a Python scalar of an array, ... on an XLA value
    "wrong device at run time",  # a compiled graph got a tensor on the host where XLA was expected
    "other",
)
# The kinds in which the device refused a tensor left on the host (where host values end up).
DEVICE_MISMATCH = (FAILURE_KINDS[0], FAILURE_KINDS[1], FAILURE_KINDS[3])


@dataclasses.dataclass(frozen=True)
class ProgramFailure(Located, Ruled):
    """Why the program failed: ``kind`` (one of ``FAILURE_KINDS``), the user's line (``source``: the
    failing statement, or the line where the failing graph ends), ``stage`` ('compile': while dynamo
    or the backend compiled; 'graph': while a compiled graph ran; 'python': in the code between
    graphs; 'inputs': its inputs could not be moved to the device), the graph that was compiling or
    running (``graph``), the exception's type and message."""

    RECORD = "program failure"

    kind: str
    stage: str
    exception: str
    message: str
    source: SourceLine | None = None
    graph: int | None = None
    call: int = 1

    @property
    def error(self) -> str:
        """The exception as Python prints its last line: 'TorchRuntimeError: Unhandled FakeTensor ...'."""
        return f"{self.exception}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "kind": self.kind,
            "stage": self.stage,
            "exception": self.exception,
            "message": self.message,
            "graph": self.graph,
            "call": self.call,
            **self.source_dict(),
        }


@dataclasses.dataclass(frozen=True)
class ProgramCall:
    """One call of the compiled program: dynamo graphs compiled during it, and the device's deltas (XLA:
    its compiles and executions; native: copies, syncs and CPU fallbacks, each with its line in
    ``host_copies``, ``uploads`` and ``fallbacks``)."""

    graphs: int
    xla_compiles: int
    executions: int
    transfers_to_host: int
    transfers_to_device: int
    seconds: float
    syncs: int = 0
    fallback_calls: int = 0
    host_copies: tuple[HostCopy, ...] = ()
    fallbacks: tuple[Fallback, ...] = ()
    uploads: tuple[Upload, ...] = ()
    bytes_to_host: int = 0
    bytes_to_device: int = 0

    def to_dict(self) -> dict[str, Any]:
        plain = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        plain["host_copies"] = [copy.to_dict() for copy in self.host_copies]
        plain["fallbacks"] = [fallback.to_dict() for fallback in self.fallbacks]
        plain["uploads"] = [upload.to_dict() for upload in self.uploads]
        return plain


@dataclasses.dataclass(frozen=True)
class ProgramRun:
    """The user's whole function under ``torch.compile(backend=...)`` with its inputs and module on XLA.

    ``backend`` is 'openxla' (the program as written) or 'neurondev' (rewritten by the pass first).
    ``calls`` holds each call (two: the first compiles, the second is the steady state);
    ``graphs`` and ``xla_compiles`` add up every call, ``executions`` and ``transfers_to_host``
    are the last call's (what every further call costs). ``matches_cpu`` compares the first
    call's outputs with the function run eagerly on CPU (None: not compared, ``not_compared``
    says why). ``warnings`` are what torch and torch_xla warned while it ran.
    """

    backend: str
    failure: ProgramFailure | None = None
    comparison: Comparison | None = None
    not_compared: NotCompared | None = None
    calls: tuple[ProgramCall, ...] = ()
    warnings: tuple[str, ...] = ()
    outputs: Any = dataclasses.field(default=None, repr=False, compare=False)
    stack: str = "xla"
    device: str = ""
    unseen: str | None = None  # the compiler whose graphs this run could not see into (its fallbacks are not on lines)
    state: Comparison | None = None

    @property
    def syncs(self) -> int:
        return self.calls[-1].syncs if self.calls else 0

    @property
    def fallbacks(self) -> tuple[Fallback, ...]:
        """The ops that fell back to the CPU on the last call (what every call costs), by line."""
        return self.calls[-1].fallbacks if self.calls else ()

    @property
    def host_copies(self) -> tuple[HostCopy, ...]:
        """Where the last call copied to the host or synced (native devices), by line."""
        return self.calls[-1].host_copies if self.calls else ()

    @property
    def uploads(self) -> tuple[Upload, ...]:
        """Where the last call copied host data to the device (native devices), by line."""
        return self.calls[-1].uploads if self.calls else ()

    @property
    def transfers_to_device(self) -> int:
        return self.calls[-1].transfers_to_device if self.calls else 0

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def matches_cpu(self) -> bool | None:
        """Its outputs, and the state it leaves (inputs written in place, buffers, globals), against CPU: False
        when either differs, None when the outputs were not compared."""
        if self.state is not None and self.state.matches is False:
            return False
        return None if self.comparison is None else self.comparison.matches

    @property
    def graphs(self) -> int:
        return sum(call.graphs for call in self.calls)

    @property
    def xla_compiles(self) -> int:
        return sum(call.xla_compiles for call in self.calls)

    @property
    def executions(self) -> int:
        return self.calls[-1].executions if self.calls else 0

    @property
    def transfers_to_host(self) -> int:
        return self.calls[-1].transfers_to_host if self.calls else 0

    @property
    def recompiled(self) -> bool:
        """A call after the first compiled a dynamo graph again."""
        return any(call.graphs for call in self.calls[1:])

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "ok": self.ok,
            "failure": None if self.failure is None else self.failure.to_dict(),
            "matches_cpu": self.matches_cpu,
            "comparison": None if self.comparison is None else self.comparison.to_dict(),
            "state": None if self.state is None else self.state.to_dict(),
            "not_compared": self.not_compared.to_dict() if self.not_compared is not None else None,
            "graphs": self.graphs,
            "xla_compiles": self.xla_compiles,
            "executions": self.executions,
            "transfers_to_host": self.transfers_to_host,
            "recompiled": self.recompiled,
            "calls": [call.to_dict() for call in self.calls],
            "stack": self.stack,
            "device": self.device,
            "syncs": self.syncs,
            "fallbacks": [fallback.to_dict() for fallback in self.fallbacks],
            "host_copies": [copy.to_dict() for copy in self.host_copies],
            "uploads": [upload.to_dict() for upload in self.uploads],
            "transfers_to_device": self.transfers_to_device,
            "unseen": self.unseen,
            "warnings": list(self.warnings),
        }


@dataclasses.dataclass(frozen=True)
class Programs:
    """The user's program on XLA twice: ``as_written`` (torch_xla's openxla backend) and ``rewritten``
    (the neurondev backend: DeviceRewriterPass, then openxla)."""

    as_written: ProgramRun
    rewritten: ProgramRun

    def to_dict(self) -> dict[str, Any]:
        return {"as_written": self.as_written.to_dict(), "rewritten": self.rewritten.to_dict()}
