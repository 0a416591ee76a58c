"""What one run of a graph on a device showed: the frozen RunRecord and the breaks (XLA), copies to the host (native), uploads, fallbacks, crossings and failure it holds."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from neurondev.errors import InvalidOptionError
from neurondev.rulebook import Ruled
from neurondev.runs.counts import Counts
from neurondev.runs.reasons import NotCompared
from neurondev.runs.values import Comparison
from neurondev.trace.source import Located, SourceLine

__all__ = [
    "Crossing",
    "Fallback",
    "GraphBreak",
    "HostCopy",
    "RunError",
    "RunRecord",
    "Seen",
    "Upload",
    "first_device",
    "place_of",
    "type_of",
]


def first_device(device: Any) -> str | None:
    """A node's run-time device as a run records it (a str for one tensor, a tuple for several,
    None for no tensor), read one way: the device of its tensor, or of its first tensor."""
    if isinstance(device, tuple):
        return str(device[0]) if device else None
    return str(device) if device else None


def type_of(device: Any) -> str | None:
    """The device type ('xla', 'cpu', 'hostdev') of a recorded device, by the one reader above."""
    first = first_device(device)
    return first.split(":")[0] if first is not None else None


def place_of(device: Any) -> str:
    """How sentences name where something ran: 'XLA' for any XLA device, else the device itself ('hostdev:0')."""
    return "XLA" if type_of(device) == "xla" else str(first_device(device))


@dataclasses.dataclass(frozen=True)
class GraphBreak(Located, Ruled):
    """A node during which the lazy XLA graph was cut: a forced execution and/or a device-to-host sync."""

    RECORD = "graph break"

    node: str
    function: str
    executions: int
    transfers_to_host: int
    source: SourceLine | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "node": self.node,
            "function": self.function,
            "executions": self.executions,
            "transfers_to_host": self.transfers_to_host,
            **self.source_dict(),
        }


@dataclasses.dataclass(frozen=True)
class HostCopy(Located, Ruled):
    """A node during which a native device handed data to the host mid-graph: copies to the host
    (``transfers_to_host``, ``bytes``) and syncs (a host read of a device value, ``.item()``). A native
    device has no lazy graph to break: the program waits for the device and copies instead. ``collective``: the
    collective the copies were part of (``c10d::allreduce``, a process group moving device tensors through the
    host, as the host device's does; on a real device a collective is the device's own operation)."""

    RECORD = "host copy"

    node: str
    function: str
    transfers_to_host: int
    syncs: int
    bytes: int
    source: SourceLine | None = None
    module: str = ""
    collective: str | None = None

    @property
    def rule(self) -> str | None:
        """ND202 when it copied to the host, ND204 when the host only waited for the device (a sync)."""
        return "ND202" if self.transfers_to_host else "ND204"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "node": self.node,
            "function": self.function,
            "transfers_to_host": self.transfers_to_host,
            "syncs": self.syncs,
            "bytes": self.bytes,
            "module": self.module,
            "collective": self.collective,
            **self.source_dict(),
        }


@dataclasses.dataclass(frozen=True)
class Fallback(Located, Ruled):
    """An op that ran on the CPU instead of the device at one node: the op as the device ran it
    (``aten::index_select``, ``aten::addmm.out``), how many calls, the bytes copied for them (native
    devices), the module it ran in, the line, and the op the program called there when the one that fell
    back ran beneath it (``called``: ``aten::embedding``; None when it is the same op or not known)."""

    RECORD = "fallback"

    op: str
    calls: int
    bytes: int
    node: str | None = None
    module: str = ""
    source: SourceLine | None = None
    called: str | None = None

    @property
    def inside(self) -> str | None:
        """The op the program called, when the one that fell back is another op beneath it (not its own out form)."""
        if self.called is None or self.called.split(".")[0] == self.op.split(".")[0]:
            return None
        return self.called

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "op": self.op,
            "called": self.called,
            "calls": self.calls,
            "bytes": self.bytes,
            "node": self.node,
            "module": self.module,
            **self.source_dict(),
        }


@dataclasses.dataclass(frozen=True)
class Upload(Located, Ruled):
    """A node (or, in a program, a line) that copies host data to the device on every call (``torch.tensor([...],
    device=...)``, ``torch.arange(4).to(x.device)``, ``torch.rand``, an empty KV cache): no break, but a transfer
    per call; the bytes it moved where the device counts them (native devices), the module, and the collective
    it was part of (as ``HostCopy.collective``)."""

    RECORD = "upload"

    node: str
    function: str
    transfers_to_device: int
    source: SourceLine | None = None
    bytes: int = 0
    module: str = ""
    collective: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "node": self.node,
            "function": self.function,
            "transfers_to_device": self.transfers_to_device,
            "bytes": self.bytes,
            "module": self.module,
            "collective": self.collective,
            **self.source_dict(),
        }


class Seen(NamedTuple):
    """What a driver saw with its lines over a stretch of a run: copies to the host and syncs, uploads, CPU fallbacks."""

    host_copies: tuple[HostCopy, ...] = ()
    uploads: tuple[Upload, ...] = ()
    fallbacks: tuple[Fallback, ...] = ()


@dataclasses.dataclass(frozen=True)
class Crossing:
    """An edge of the graph along which a value moves between devices (XLA->CPU or CPU->XLA)."""

    source: str
    node: str
    from_device: str
    to_device: str


@dataclasses.dataclass(frozen=True)
class RunError(Located, Ruled):
    """Why a run failed: the node it failed at (or the input, by index), its source line and the exception."""

    RECORD = "run error"

    node: str
    function: str
    exception: BaseException
    source: SourceLine | None = None
    input_index: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data: the exception as its type name and message."""
        return {
            "rule": self.rule,
            "node": self.node,
            "function": self.function,
            "input_index": self.input_index,
            **self.source_dict(),
            "exception": type(self.exception).__name__,
            "message": str(self.exception),
            "text": str(self),
        }

    def __str__(self) -> str:
        if self.input_index is not None:
            return f"{type(self.exception).__name__} at input {self.input_index} ({self.node}): {self.exception}"
        where = f" ({self.source.where}: {self.source.code})" if self.source else ""
        return f"{type(self.exception).__name__} at node {self.node} [{self.function}]{where}: {self.exception}"


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """What happened when one graph ran on a device; set once, never changed.

    ``stack`` is 'xla' (torch_xla's lazy device: breaks, executions and compilations) or 'native' (a
    PrivateUse1 device: ``host_copies`` where data went to the host mid-graph, ``syncs``, and the bytes copied).

    A run is a warm-up call (compilations and first-time uploads happen there; see ``first_call``)
    and a measured call, whose figures these are: what happens on every call. Counts are deltas
    of torch_xla.debug.metrics, never reset. ``executions``/``compilations`` are the ones forced
    mid-graph (before the graph's own end); ``graph_breaks`` attributes them (and transfers to the
    host) to nodes, ``uploads`` attributes transfers to the device that come with no break.
    ``output_transfers`` are moves to the host whose value only leaves the graph (``return
    x.cpu()``): results handed back on purpose, counted apart from breaks.
    ``comparison`` holds the figures against the CPU reference (``matches_reference`` its verdict,
    ``mismatch`` its message); ``not_compared`` says why there is none. ``node_seconds``: each node's seconds in the
    measured call by torch_xla's own clocks (what it compiled, executed and moved to the host; the nodes with any).
    """

    device: str
    executions: int = 0
    compilations: int = 0
    transfers_to_host: int = 0
    transfers_to_device: int = 0
    fallback_ops: Mapping[str, int] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    node_fallbacks: Mapping[str, int] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    graph_breaks: tuple[GraphBreak, ...] = ()
    output_transfers: tuple[GraphBreak, ...] = ()
    uploads: tuple[Upload, ...] = ()
    node_devices: Mapping[str, Any] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    crossings: tuple[Crossing, ...] = ()
    output_devices: tuple[str, ...] = ()
    error: RunError | None = None
    comparison: Comparison | None = None
    not_compared: NotCompared | None = None
    seconds: float | None = None
    first_call: Counts | None = None
    outputs: Any = dataclasses.field(default=None, repr=False, compare=False)
    stack: str = "xla"
    syncs: int = 0
    bytes_to_host: int = 0
    bytes_to_device: int = 0
    host_copies: tuple[HostCopy, ...] = ()
    fallbacks: tuple[Fallback, ...] = ()
    node_seconds: Mapping[str, float] = dataclasses.field(default_factory=lambda: MappingProxyType({}), compare=False)

    def __post_init__(self) -> None:
        for name in ("fallback_ops", "node_fallbacks", "node_devices"):  # frozen means frozen: read-only mappings
            value = getattr(self, name)
            if not isinstance(value, MappingProxyType):
                object.__setattr__(self, name, MappingProxyType(dict(value)))

    def device_of(self, node: str) -> str | None:
        """The device node ``node``'s value was on in this run (its first tensor's), None for no tensor."""
        if not isinstance(node, str):
            raise InvalidOptionError(f"a node is named by its name in the graph (a str such as 'copy_'), got {node!r}")
        return first_device(self.node_devices.get(node))

    def device_type(self, node: str) -> str | None:
        """The type of the device node ``node`` ran on ('xla', 'cpu', 'hostdev'), None for no tensor:
        the one reader the verdicts, the DOT and Model Explorer drawings and the crossings share."""
        return type_of(self.device_of(node))

    def on_target(self, node: str) -> bool:
        """Whether node ``node``'s value was on the device this run targeted (not left on the host)."""
        return self.device_type(node) == type_of(self.device)

    @property
    def matches_reference(self) -> bool | None:
        """Whether the outputs equal the CPU reference within tolerance; None when not compared."""
        return None if self.comparison is None else self.comparison.matches

    @property
    def mismatch(self) -> str | None:
        """How the outputs differ from the reference (assert_close's message); None when they match or were not
        compared (``not_compared`` says why)."""
        return self.comparison.detail if self.comparison is not None else None

    @property
    def ok(self) -> bool:
        """The graph stays on the device: it ran, with no graph break, no transfer to the host and
        no CPU fallback. Uploads of host-built constants (``uploads``) are allowed and noted; how the
        values compare is ``matches_reference`` (XLA fuses what eager rounds step by step)."""
        expected = sum(t.transfers_to_host for t in self.output_transfers)
        stays = not self.graph_breaks and not self.host_copies and self.transfers_to_host == expected
        return self.error is None and stays and not self.fallback_ops

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready): every figure, break, upload, crossing and the failure as text."""
        plain = {
            name: dict(value) if isinstance(value := getattr(self, name), Mapping) else value
            for name in (
                "device",
                "stack",
                "syncs",
                "bytes_to_host",
                "bytes_to_device",
                "executions",
                "compilations",
                "transfers_to_host",
                "transfers_to_device",
                "fallback_ops",
                "node_fallbacks",
                "seconds",
            )
        }
        return {
            **plain,
            "graph_breaks": [b.to_dict() for b in self.graph_breaks],
            "host_copies": [c.to_dict() for c in self.host_copies],
            "fallbacks": [f.to_dict() for f in self.fallbacks],
            "output_transfers": [t.to_dict() for t in self.output_transfers],
            "uploads": [u.to_dict() for u in self.uploads],
            "crossings": [dataclasses.asdict(c) for c in self.crossings],
            "node_devices": {k: list(v) if isinstance(v, tuple) else v for k, v in self.node_devices.items()},
            "output_devices": list(self.output_devices),
            "error": None if self.error is None else self.error.to_dict(),
            "comparison": None if self.comparison is None else self.comparison.to_dict(),
            "first_call": None if self.first_call is None else dataclasses.asdict(self.first_call),
            "ok": self.ok,
            "matches_reference": self.matches_reference,
            "mismatch": self.mismatch,
            "not_compared": None if self.not_compared is None else self.not_compared.to_dict(),
        }
