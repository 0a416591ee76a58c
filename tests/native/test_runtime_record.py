"""neurondev's native accounting against the runtime's own record, op by op: the host device's C++ log and
torch.profiler's nested ATen events, eager and compiled, on both torches.

Each case is a line of a user's function with one ATen op made to fall back to the CPU (an op called directly,
or one that a composite op calls beneath it: Embedding's index_select, stack's cat, sdpa's softmax), or a copy
or a sync. Per call, the fallbacks (op and bytes), the copies to the host and to the device (count and bytes)
and the syncs that neurondev counts equal what the device logged and what the profiler recorded; the strict
check fails on each fallback with the case's own line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

import neurondev
from neurondev.devices.host.loader import extension
from neurondev.native.device import NativeDriver
from tests.helpers import line_of


def linear(x):
    return F.linear(x, x[:4], x[0, :4])


def matmul(x):
    return x @ x.T


def bmm(x):
    return torch.bmm(x[None], x.T[None])


def embedding(x):
    ids = torch.arange(3, device=x.device)
    return F.embedding(ids, x)


def stack(x):
    return torch.stack([x, x])


def masked_fill(x):
    return x.masked_fill(x > 0, 0.0)


def attention(x):
    q = x[None, None]
    return F.scaled_dot_product_attention(q, q, q)


def cumsum(x):
    return torch.cumsum(x, dim=1)


def cumprod(x):
    return torch.cumprod(x, dim=1)


def sort(x):
    return torch.sort(x, dim=1).values


def sum_dim(x):
    return x.sum(dim=1)


def mean_dim(x):
    return x.mean(dim=1)


def softmax(x):
    return torch.softmax(x, dim=-1)


def log_softmax(x):
    return F.log_softmax(x, dim=-1)


def gelu(x):
    return F.gelu(x)


def topk(x):
    return torch.topk(x, 2, dim=1).values


def argmax(x):
    return torch.argmax(x, dim=1)


def where(x):
    return torch.where(x > 0, x, -x)


def gather(x):
    index = torch.zeros(4, 2, dtype=torch.long, device=x.device)
    return torch.gather(x, 1, index)


def index_add(x):
    index = torch.arange(4, device=x.device)
    return x.index_add(0, index, x)


def tanh(x):
    return torch.tanh(x)


def to_host(x):
    return (x * 2).cpu()


def into_host_tensor(x):
    out = torch.empty(4, 8)
    out.copy_(x * 2)
    return out


def upload(x):
    return x + torch.arange(8).to(x.device)


def literal(x):
    return x * torch.tensor([1.0, 2.0, 3.0, 4.0], device=x.device)[:, None]


def item(x):
    return x * x.sum().item()


def truth(x):
    return x if bool((x > 0).any()) else -x


def nonzero(x):
    return torch.nonzero(x > 0)


def masked_select(x):
    return torch.masked_select(x, x > 0)


def mask_index(x):
    return x[x > 0]


def masked_assign(x):
    y = x.clone()
    y[y > 0] = 0.0  # index_put_ with a mask, and the ops it calls (index_put, _index_put_impl_): one sync
    return y


def column_mask(x):
    return x[:, x[0] > 0]  # a mask after a None index (the columns)


def row_index(x):
    return x[x.argmax(dim=0)]  # integer indices (a row for each column): the result's size is known without the data


def shifted(x):
    return x * 2 + 1  # a Python number beside a device tensor, the add falling back: a wrapped scalar


def conjugated(x):
    z = torch.view_as_complex(x.reshape(4, 4, 2))
    lazy = z.conj()  # a view with a conjugate bit: its ops need torch's own path through the Conjugate key
    return torch.view_as_real(torch.cat([lazy.clone() * z, lazy.resolve_conj(), torch.stack([lazy, lazy])[0]]))


@dataclasses.dataclass(frozen=True)
class Case:
    fn: Callable[[torch.Tensor], torch.Tensor]
    fallback: tuple[str, ...] = ()  # the ATen ops made to fall back
    text: str = "return"  # what the op's line holds
    costs: str = "fallback"  # what the case must cost each call: "fallback", "to host", "to device" or "sync"
    compiled_costs: str | None = None  # what it costs compiled, where that differs ("nothing")
    sync_in_graph: bool = False  # a sync dynamo keeps in its graph (a masked assignment: its result's size is its input's)

    def cost(self, compiled: bool) -> str:
        return self.compiled_costs if compiled and self.compiled_costs else self.costs


# torch 2.9's aot_autograd leaves a graph's constant on the host and uploads it on every call (PyTorch issue
# 178019); torch 2.13 puts it on the device once
OLD_AOT = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2]) < (2, 13)


CASES = [
    Case(linear, ("aten::addmm",)),
    Case(matmul, ("aten::mm",)),
    Case(bmm, ("aten::bmm",)),
    Case(embedding, ("aten::index_select",), "F.embedding"),
    Case(stack, ("aten::cat",)),
    Case(masked_fill, ("aten::masked_fill_",)),
    Case(attention, ("aten::_softmax",), "scaled_dot_product_attention"),
    Case(cumsum, ("aten::cumsum",)),
    Case(cumprod, ("aten::cumprod",)),
    Case(sort, ("aten::sort",)),
    Case(sum_dim, ("aten::sum",)),
    Case(mean_dim, ("aten::mean",)),
    Case(softmax, ("aten::_softmax",)),
    Case(log_softmax, ("aten::_log_softmax",)),
    Case(gelu, ("aten::gelu",)),
    Case(topk, ("aten::topk",)),
    Case(argmax, ("aten::argmax",)),
    Case(where, ("aten::where",)),
    Case(gather, ("aten::gather",), "torch.gather"),
    Case(index_add, ("aten::index_add",), "x.index_add"),
    Case(tanh, ("aten::tanh",)),
    Case(to_host, costs="to host"),
    Case(into_host_tensor, text="out.copy_", costs="to host"),
    Case(upload, costs="to device"),
    Case(literal, costs="to device", compiled_costs="to device" if OLD_AOT else "nothing"),
    Case(item, costs="sync"),
    Case(truth, text="bool(", costs="sync"),
    Case(nonzero, costs="sync"),  # the size of its result is read on the host (CUDA syncs inside the kernel)
    Case(masked_select, costs="sync"),
    Case(mask_index, costs="sync"),
    Case(column_mask, costs="sync"),
    Case(masked_assign, text="y[y > 0]", costs="sync", sync_in_graph=True),
    Case(row_index, costs="nothing"),
    Case(shifted, ("aten::add",)),
    Case(conjugated, costs="nothing"),
]
FALLING = [case for case in CASES if case.fallback]


@dataclasses.dataclass(frozen=True)
class Record:
    """One call as counted: every copy outside fallbacks (on the device too: the device logs those), fallbacks
    by op with their bytes, copies between host and device by direction (count, bytes), syncs."""

    copies: int | None
    fallbacks: dict[str, int]
    fallback_bytes: int
    to_host: tuple[int, int]
    to_device: tuple[int, int]
    syncs: int | None


def device_log(start: int) -> Record:
    log = extension().events(start)
    fallbacks: dict[str, int] = {}
    for kind, op, _, _ in log:
        if kind == "fallback":
            fallbacks[op] = fallbacks.get(op, 0) + 1
    moved = [(direction, nbytes) for kind, op, direction, nbytes in log if kind == "copy" and not op]
    return Record(
        len(moved),
        fallbacks,
        sum(nbytes for kind, op, _, nbytes in log if kind == "copy" and op),
        (sum(d == "to_host" for d, _ in moved), sum(n for d, n in moved if d == "to_host")),
        (sum(d == "to_device" for d, _ in moved), sum(n for d, n in moved if d == "to_device")),
        None,  # the device logs copies and fallbacks; a host read is no copy of its own
    )


def counted(counts) -> Record:
    return Record(
        None,
        dict(counts.fallbacks),
        counts.fallback_bytes,
        (counts.transfers_to_host, counts.bytes_to_host),
        (counts.transfers_to_device, counts.bytes_to_device),
        counts.syncs,
    )


def profiled(profile) -> tuple[int, int, int]:
    """(fallbacks, copies outside fallbacks, syncs) in torch.profiler's nested events: cpu_fallback moves an op's
    device inputs with aten::_to_cpu (the op is its parent); each copy on the host device is its own copy_ kernel, which
    records a hostdev::copy event beneath aten::copy_ (as CUDA's copies record a Memcpy).
    Where a dispatch mode is on, torch 2.13 records each op it handles twice (the call, and the mode's call of
    it, under a "PythonDispatchMode" event): the second is the same op. What dynamo ran while compiling is left out."""
    events = [event for event in profile.events() if event.name != "PythonDispatchMode" and not _compiling(event)]
    first = [event for event in events if not _again(event)]
    falling = {id(_outermost(_parent(event))) for event in first if event.name == "aten::_to_cpu"}

    def inside(event, names) -> bool:
        return any(id(parent) in falling or parent.name in names for parent in _parents(event))

    copies = [e for e in first if _device_copy(e) and not inside(e, ("aten::_to_cpu", *_COPIES)) and id(_outermost(e)) not in falling]
    syncs = [event for event in first if _sized_by_data(event.name) and not any(_sized_by_data(p.name) for p in _parents(event))]
    return len(falling), len(copies), len(syncs)


def called_above_fallbacks(profile) -> list[str]:
    """The op the program called above each fallback, as torch.profiler recorded it: the outermost ATen event above
    the op whose cpu_fallback ran aten::_to_cpu (aten::embedding above the index_select that fell back), in order."""
    events = [event for event in profile.events() if event.name != "PythonDispatchMode" and not _compiling(event)]
    falling = {id(fell): fell for fell in (_outermost(_parent(e)) for e in events if e.name == "aten::_to_cpu" and not _again(e))}
    return [[fell.name, *[parent.name for parent in _parents(fell) if parent.name.startswith("aten::")]][-1] for fell in falling.values()]


def _sized_by_data(name: str) -> bool:
    """An op PyTorch tags as reading its data on the host (``_local_scalar_dense``) or sizing its result by it (``nonzero``).
    Indexing is tagged whatever its indices: the profiler sees its sync as the ``nonzero`` a boolean mask runs beneath it
    (integer indices run none, and size the result without the data)."""
    if name in ("aten::index", "aten::index_put", "aten::index_put_", "aten::_index_put_impl_"):
        return False
    namespace, _, op = name.partition("::")
    packet = getattr(getattr(torch.ops, namespace, None), op, None) if namespace == "aten" else None
    tags = {torch.Tag.data_dependent_output, torch.Tag.dynamic_output_shape}
    return packet is not None and any(tags & set(getattr(packet, overload).tags) for overload in packet.overloads())


_COPIES = ("aten::_copy_from", "aten::_copy_from_and_resize", "aten::copy_")


def _device_copy(event) -> bool:
    """A copy the host device made: its copy_ (a hostdev::copy beneath it, through the mode's call of it again), or
    _copy_from."""
    if event.name != "aten::copy_":
        return event.name in _COPIES
    children = list(event.cpu_children)
    while children:
        child = children.pop()
        if child.name == "hostdev::copy":
            return True
        if child.name in ("PythonDispatchMode", "aten::copy_"):
            children += child.cpu_children
    return False


def _parent(event):
    event = event.cpu_parent
    while event is not None and event.name == "PythonDispatchMode":
        event = event.cpu_parent
    return event


def _parents(event):
    event = _parent(event)
    while event is not None:
        yield event
        event = _parent(event)


def _compiling(event) -> bool:
    """An op dynamo ran while it compiled (on fake values, torch 2.9's counting call compiles again), not the call's."""
    return any("dynamo_timed" in parent.name for parent in _parents(event))


def _again(event) -> bool:
    parent = _parent(event)
    return parent is not None and parent.name == event.name


def _outermost(event):
    """The outermost of a run of events of one name (an op, and the same op called again beneath it)."""
    while (parent := _parent(event)) is not None and parent.name == event.name:
        event = parent
    return event


def measure(call, driver: NativeDriver, *, compiled: bool):
    """One call measured three ways at once: neurondev's accounting, the device's log, torch.profiler. A compiled
    call is counted whole, as a program run counts it (torch 2.9: a call of its own, which dynamo compiles again)."""
    start = extension().event_count()
    whole = compiled and driver.needs_counting_call
    with (
        torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile,
        driver.measuring(compiled=compiled, whole=whole),
    ):
        before = driver.counts()
        out = call()
        ours = counted(driver.counts() - before)
    return ours, device_log(start), profiled(profile), called_above_fallbacks(profile), out


@pytest.fixture
def device():
    yield neurondev.host_device()
    neurondev.host_device()


def run_case(case: Case, device: torch.device, *, compiled: bool):
    neurondev.host_device(fallback=case.fallback)
    driver = NativeDriver(device)
    x = torch.randn(4, 8).to(device)
    fn = torch.compile(case.fn, backend=driver.program_backend()) if compiled else case.fn
    try:
        with driver.measuring(compiled=True, whole=compiled and driver.needs_counting_call):
            fn(x)  # compiled on the first call (eager: the same warm-up); torch 2.9 compiles again under the accounting
        mark = driver.mark()
        ours, logged, profiled_, called, out = measure(lambda: fn(x), driver, compiled=compiled)
        torch.testing.assert_close(out.cpu(), case.fn(x.cpu()))  # counted, and computed as on the CPU
        return ours, logged, profiled_, called, driver.accounting.events[mark:]
    finally:
        torch._dynamo.reset()  # no compiled code carried to the next case


@pytest.mark.parametrize("accounting", ["log", "observer"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("case", CASES, ids=[case.fn.__name__ for case in CASES])
def test_each_fallback_copy_and_sync_is_counted_as_the_device_logged_it_and_the_profiler_recorded_it(
    case, compiled, accounting, device, monkeypatch
):
    """Both records kept in C++: the dispatcher's observer (the default, every device alike) and the device's own log
    (the reference): Python only at events."""
    monkeypatch.setenv("NEURONDEV_ACCOUNTING", accounting)
    ours, logged, (fallbacks, copies, syncs), called, events = run_case(case, device, compiled=compiled)
    assert (ours.fallbacks, ours.fallback_bytes) == (logged.fallbacks, logged.fallback_bytes)
    assert (ours.to_host, ours.to_device) == (logged.to_host, logged.to_device)
    assert (sum(ours.fallbacks.values()), logged.copies, ours.syncs) == (fallbacks, copies, syncs)
    cost = {"fallback": sum(ours.fallbacks.values()), "to host": ours.to_host[0], "to device": ours.to_device[0], "sync": ours.syncs}
    if case.cost(compiled) == "nothing":
        assert set(cost.values()) == {0} and events == []
        return
    assert cost[case.cost(compiled)] >= 1, f"{case.fn.__name__} cost nothing that was counted: {ours}"
    line = line_of(case.fn, case.text)
    assert {event.line for event in events} == {line}, [(event.kind, event.op, event.where) for event in events]
    in_graph = compiled and (case.cost(compiled) != "sync" or case.sync_in_graph)  # dynamo breaks its graph at a host read
    assert {event.node is not None for event in events} == {in_graph}, [(event.node, event.op) for event in events]  # the graph's node
    # the op the program called, as the profiler saw it (the outermost ATen op above each fallback: linear)
    assert [(event.called or event.op).split(".")[0] for event in events if event.kind == "fallback"] == called


@pytest.mark.parametrize("case", FALLING, ids=[case.fn.__name__ for case in FALLING])
def test_the_strict_check_fails_on_each_fallback_with_the_line_that_made_it(case, device):
    neurondev.host_device(fallback=case.fallback)
    with pytest.raises(neurondev.DevicePinsError) as failed:
        neurondev.check(case.fn, torch.randn(4, 8), target=device, fallbacks="error")
    assert {finding.line for finding in failed.value.findings if finding.kind == "fallback"} == {line_of(case.fn, case.text)}
