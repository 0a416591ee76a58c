"""What a trace on CPU found, in words: pins, host values, CPU kernels, dynamo's breaks, what the capture did, and
lines traced differently on the device."""

from __future__ import annotations

from neurondev.fx.kernels import CpuKernel
from neurondev.fx.pins import DevicePin
from neurondev.render.describe import at_line, describe
from neurondev.runs.program_records import ProgramFailure
from neurondev.runs.run_records import place_of
from neurondev.runs.traces import LineDifference, TraceComparison
from neurondev.trace.capture import NO_GRAPH_WORDS, DynamoBreak
from neurondev.trace.capture_notes import CaptureNote
from neurondev.trace.inputs import HostValue

__all__ = [
    "capture_note_text",
    "cpu_kernel_text",
    "dynamo_break_text",
    "host_value_text",
    "line_difference_text",
    "pin_text",
    "traces_text",
]


@describe.register
def host_value_text(value: HostValue) -> str:
    article = "an" if value.kind == "attribute" else "a"
    return f"{value.origin} ({article} {value.kind}, on {value.device}, used at {value.where})"


@describe.register
def line_difference_text(difference: LineDifference, place: str = "XLA") -> str:
    return f"{difference.where} `{difference.code}`: CPU trace {list(difference.cpu_ops)}, {place} trace {list(difference.xla_ops)}"


@describe.register
def traces_text(traces: TraceComparison) -> str:
    """Whether the CPU trace, rewritten, is the native one; else what differs, and where."""
    place = place_of(traces.native.device)
    if traces.agree:
        return (
            f"{traces.name}: the CPU trace, rewritten, is the graph traced natively on {place} ({len(traces.rewritten_is_native)} graph(s))"
        )
    if not traces.differences and not traces.only_in_cpu and not traces.only_in_xla and not traces.native_error:
        return (
            f"{traces.name}: no line is traced differently on {place}, but the rewritten CPU graph is not the native one: "
            "the native trace keeps device arguments of its own (a literal device such as 'cpu' or .cpu())"
        )
    parts = [f"{len(traces.differences)} line(s) traced differently on {place} (device-specialised code)"]
    if traces.only_in_cpu or traces.only_in_xla:
        parts.append(f"graphs {len(traces.cpu.graphs)} on CPU vs {len(traces.native.graphs)} on {place}")
    if traces.native_error:
        failure = traces.native_failure
        where = f" at {failure.where}" if failure is not None and failure.source is not None else ""
        kind = f"{failure.kind}: " if isinstance(failure, ProgramFailure) else ""  # its line is said once, here
        parts.append(f"the native trace fails to run{where}: {kind}{traces.native_error}")
    lines = "; ".join(line_difference_text(d, place) for d in traces.differences[:3])
    return f"{traces.name}: " + ", ".join(parts) + (f". {lines}" if lines else "")


@describe.register
def pin_text(pin: DevicePin) -> str:
    return f"{pin.node}: {pin.function} pinned to device={pin.device} ({pin.kind}, {pin.location}){at_line(pin)}"


@describe.register
def cpu_kernel_text(kernel: CpuKernel) -> str:
    return f"{kernel.node} calls {kernel.function}, a kernel for the CPU{at_line(kernel)}"


@describe.register
def dynamo_break_text(split: DynamoBreak) -> str:
    return f"dynamo split the graph{at_line(split)}: {split.reason.strip().splitlines()[0] if split.reason.strip() else 'no reason given'}"


@describe.register
def capture_note_text(note: CaptureNote) -> str:
    """What the capture did that a user should know, in words."""
    if note.kind == "meta":
        return (
            "traced on the meta device (the model's weights or the inputs are meta: shapes without values), so no weight was "
            "materialised; device=meta in the graphs is what a CPU trace shows as cpu"
        )
    if note.kind == "already compiled":
        return f"{note.name} was already compiled with torch.compile: its original {note.original} was traced"
    if note.no_graph:
        return NO_GRAPH_WORDS[note.kind]
    if note.kind == "dynamic marks kept":
        return (
            f"input {note.path}: dimension(s) {list(note.dims)} marked dynamic by you stay dynamic in the graph "
            "(traced with a dynamic dimension; runs use the size it had)"
        )
    if note.kind == "arguments copied apart":
        return f"could not copy the arguments together ({note.error}); their tensors were copied, other objects are the user's own"
    return "an ExportedProgram: its graph as exported (ATen level), its parameters and buffers as inputs"
