"""The rules: a stable code for every kind of finding neurondev reports, and which record kind each one names."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from neurondev.site_url import docs_url

__all__ = ["RULES", "SCENARIOS", "Rule", "Ruled", "docs_url", "rule_named", "rule_of", "rules", "selected"]

SCENARIOS = {
    "trace": "graph traced on CPU",
    "device": "on the device (either scenario)",
    "program": "your program under torch.compile on the device",
    "loop": "a loop (neurondev.watch)",
}


@dataclasses.dataclass(frozen=True)
class Rule:
    """One kind of finding: its ``code`` (``ND101``), a ``name`` in kebab case, the ``scenario`` it is about (a key of
    ``SCENARIOS``), a one-line ``summary``, the ``record`` type and ``kind`` that carry it (``kind`` None: any kind of
    that record), and what its documentation page says: what it costs on XLA and on a native device, and the fix. The
    page's example, the code to use instead and its related rules are files beside the pages (``docs/rules/``)."""

    code: str
    name: str
    scenario: str
    summary: str
    record: str
    kind: str | None
    xla: str
    native: str
    fix: str

    @property
    def url(self) -> str:
        """The rule's page: ``docs_url()`` then ``rules/CODE.html``."""
        return f"{docs_url()}rules/{self.code}.html"


_PIN_FIX = (
    "make the tensor from a tensor you have, whose device follows it at run time (x.new_empty(...), torch.zeros_like(x)), "
    "or compile through the neurondev backend, which rewrites the pins to the device, or trace on the device"
)
_PIN_XLA = (
    "a copy of an XLA result into the pinned tensor forces the pending XLA computation to run and pulls it to the host (a graph "
    "break), or the run fails with 'Expected XLA tensor'"
)
_PIN_NATIVE = "the op runs on the host: the device's result is copied to CPU memory, computed there and copied back, silently"


def _pin(code: str, kind: str, name: str, summary: str) -> Rule:
    return Rule(code, name, "trace", summary, "pin", kind, _PIN_XLA, _PIN_NATIVE, _PIN_FIX)


_CAUSE_XLA = "a new dynamo graph each time, lowered and compiled again by XLA (minutes each on Trainium), while the step waits"
_CAUSE_NATIVE = (
    "a new dynamo graph each time, compiled again by the backend (Inductor or the device's own compiler: seconds to minutes) "
    "while the step waits, and one more graph in dynamo's cache"
)


def _cause(code: str, kind: str, name: str, summary: str, fix: str) -> Rule:
    return Rule(code, name, "loop", summary, "cause", kind, _CAUSE_XLA, _CAUSE_NATIVE, fix)


_PROGRAM_XLA = "your program does not run on XLA as written: torch_xla raises at compile time or when the graph runs"
_PROGRAM_NATIVE = (
    "your program does not run on the device as written: the device's kernels refuse tensors of another device (a "
    "native device copies nothing for you) and the compile or the call raises"
)

RULES: tuple[Rule, ...] = (
    _pin("ND101", "frozen", "frozen-device-pin", "device=x.device frozen to the trace device in a graph traced on CPU"),
    _pin("ND102", "literal", "literal-device-pin", 'a device spelled in the source ("cpu") pins the op in the graph'),
    _pin("ND103", "variable", "variable-device-pin", "a device held in a variable or attribute pins the op in the graph"),
    _pin("ND104", "unknown", "device-pin", "a device pin whose origin the source does not show (no line, or generated code)"),
    _pin("ND105", "assertion", "device-assertion", "an aten._assert_tensor_metadata check that names the trace device"),
    Rule(
        "ND106",
        "host-value",
        "trace",
        "a tensor the module holds outside its parameters and buffers: model.to(device) leaves it on the CPU",
        "host value",
        None,
        "the graph reads a CPU tensor: torch_xla uploads it on every call, or the compile fails with mixed devices",
        "the op meets a CPU tensor and a device tensor: the program fails with mixed devices, or copies on each call",
        "register it as a buffer (self.register_buffer('scale', ...)) or make it from an input's device",
    ),
    Rule(
        "ND107",
        "cpu-kernel",
        "trace",
        "a kernel for the CPU chosen while tracing on CPU (level='aten'): the graph calls it on the device too",
        "cpu kernel",
        None,
        "the CPU kernel has no XLA lowering: it falls back to the CPU, with a transfer each way",
        "the CPU kernel runs on host memory: the device's tensors are copied to it and back",
        "trace on the device, or compile at dynamo level through the neurondev backend, which lets the device choose",
    ),
    Rule(
        "ND108",
        "device-specialised-line",
        "trace",
        "a line traced as different ops on the CPU and on the device: Python branched on the device",
        "line difference",
        None,
        "the graph traced on CPU is not the graph the device would trace: no device rewrite can make them the same",
        "as on XLA: the CPU graph runs the CPU branch on the device",
        "make both branches the same, or trace on the device",
    ),
    Rule(
        "ND109",
        "dynamo-graph-break",
        "trace",
        "dynamo split the function into several graphs (a graph break) while tracing on CPU",
        "dynamo break",
        None,
        "each graph is a separate XLA program, with the Python between them run eagerly and lazy values materialised",
        "each graph is a separate compiled region; values cross between them through Python",
        "remove what dynamo cannot trace at that line (print, .item(), data-dependent Python); see dynamo's reason",
    ),
    Rule(
        "ND201",
        "graph-break-on-device",
        "device",
        "a node forced the pending XLA computation to run and pulled its result to the host inside a graph",
        "graph break",
        None,
        "an extra XLA execution and a device-to-host transfer on every call, and the graph is cut in two",
        "(XLA only; a native device shows the same line as a copy to the host, ND202)",
        "keep the value on the device: rewrite the pin that put it on the CPU (the neurondev backend does)",
    ),
    Rule(
        "ND202",
        "copy-to-host",
        "device",
        "a copy from the device to host memory: .cpu(), .item(), a copy into a CPU tensor, a pinned op",
        "host copy",
        None,
        "a forced execution and a device-to-host transfer (torch_xla's TransferFromDeviceTime)",
        "a synchronous copy to host memory that waits for the device's queue",
        "keep the value on the device until the end of the step, or read it once after the loop",
    ),
    Rule(
        "ND203",
        "upload",
        "device",
        "a copy from host memory to the device on every call: a CPU tensor or a literal the program reads",
        "upload",
        None,
        "a host-to-device transfer per call (TransferToDeviceTime)",
        "a host-to-device copy per call",
        "make the tensor on the device once (a buffer, or device=x.device)",
    ),
    Rule(
        "ND204",
        "sync",
        "device",
        "the host waited for the device: a Python value of a tensor (.item(), bool(), a data-dependent shape)",
        "sync",
        None,
        "the pending graph is cut and executed to give Python its value",
        "the host blocks until the device's queue drains",
        "keep the decision on the device (torch.where, masks), or read the value once after the loop",
    ),
    Rule(
        "ND205",
        "cpu-fallback",
        "device",
        "an ATen op the device has no kernel for ran on the CPU instead (aten::_to_cpu in torch.profiler)",
        "fallback",
        None,
        "torch_xla's CPU fallback: the op's inputs go to the host and its result back (aten::_to_cpu)",
        "the backend's cpu_fallback: the inputs are copied to host memory, the op runs there, the result is copied back",
        "use an op the device has a kernel for, or ask the device's maintainers for the kernel; check(fallbacks='error') guards it",
    ),
    Rule(
        "ND206",
        "fallbacks-unverified",
        "device",
        "the device's compiler hides the ops it runs, so no fallback could be checked (strict mode fails closed)",
        "unseen",
        None,
        "(native devices only)",
        "a device that compiles whole graphs (TorchNeuron) runs ops the dispatcher never sees",
        "check on a device whose compiled graphs pass the dispatcher (the host test device), or read the backend's own record",
    ),
    Rule(
        "ND207",
        "graph-run-error",
        "device",
        "the graph traced on CPU failed when run on the device ('Expected XLA tensor', mixed devices)",
        "run error",
        None,
        "the frozen graph does not run: an XLA op met a CPU tensor",
        "the op met tensors on two devices",
        "rewrite the pins (DeviceRewriterPass, the neurondev backend)",
    ),
    Rule(
        "ND208",
        "values-differ",
        "device",
        "the device's values differ from the CPU's beyond the tolerance",
        "verdict",
        "differ",
        "XLA's numerics (fused ops, a different reduction order, a lowering) differ from the CPU's",
        "the device's kernels differ from the CPU's",
        "read the first difference (ND209): the node where the device departs from the CPU while its inputs agree",
    ),
    Rule(
        "ND209",
        "first-difference",
        "device",
        "the first node whose value differs from the CPU's while its inputs agree: where the device departs",
        "node difference",
        None,
        "the XLA lowering of that op gives other values",
        "the device's kernel for that op gives other values",
        "compare that op alone on the device; loosen rtol/atol only when the difference is expected",
    ),
    Rule(
        "ND301",
        "mixed-devices-at-compile-time",
        "program",
        "your program under torch.compile met tensors on two devices while compiling",
        "program failure",
        "mixed devices at compile time",
        _PROGRAM_XLA,
        _PROGRAM_NATIVE,
        "keep every tensor the code reads on the device: pass it in, or register it as a buffer of the module",
    ),
    Rule(
        "ND302",
        "default-device-ignored",
        "program",
        "torch.compile left a factory call on the CPU although a default device is set (PyTorch issue 175953)",
        "program failure",
        "default device ignored under torch.compile",
        _PROGRAM_XLA,
        _PROGRAM_NATIVE,
        "pass the device (device=x.device), or use a torch that applies the default device (2.13 does)",
    ),
    Rule(
        "ND303",
        "host-only-call-between-graphs",
        "program",
        "a host-only call (.numpy(), .tolist(), a Python number of a tensor) between compiled graphs failed on the device",
        "program failure",
        "host-only call between graphs",
        _PROGRAM_XLA,
        _PROGRAM_NATIVE,
        "keep .numpy(), .tolist() and Python numbers of tensors out of the compiled function",
    ),
    Rule(
        "ND304",
        "wrong-device-at-run-time",
        "program",
        "an input or the module was not on the device when the compiled program ran",
        "program failure",
        "wrong device at run time",
        _PROGRAM_XLA,
        _PROGRAM_NATIVE,
        "move every input and the module to the device (model.to(device), x.to(device)) before the call",
    ),
    Rule(
        "ND305",
        "program-failure",
        "program",
        "your program failed on the device for another reason (the message says which)",
        "program failure",
        None,
        _PROGRAM_XLA,
        _PROGRAM_NATIVE,
        "run it yourself with torch.compile(fn, backend=...) on inputs on the device and read the message",
    ),
    _cause("ND401", "python number", "python-number-recompile", "a Python number read by the compiled code changed", "pass it as a tensor"),
    _cause(
        "ND402", "flag", "flag-recompile", "a flag (a bool) changed: one graph per value (expected, twice)", "nothing, when it flips rarely"
    ),
    _cause("ND403", "library value", "library-value-recompile", "a library's own attribute changed", "keep it constant between calls"),
    _cause(
        "ND404",
        "cache growth",
        "cache-growth-recompile",
        "a size grew by one each call: a cache (a KV cache) or a sequence, whatever it is called",
        "use a static cache of fixed size (transformers' StaticCache)",
    ),
    _cause(
        "ND405",
        "changing size",
        "changing-size-recompile",
        "an input's size changed between calls",
        "pad to a few fixed sizes (buckets), or mark the dimension dynamic",
    ),
    _cause(
        "ND406",
        "prompt to decode",
        "prompt-to-decode-recompile",
        "generate's second graph: the prompt, then one token a step (expected, once)",
        "nothing",
    ),
    _cause(
        "ND407",
        "recompile limit",
        "recompile-limit",
        "dynamo's recompile limit is reached: the function runs uncompiled from here on",
        "remove the cause of the recompiles before raising the limit",
    ),
    _cause("ND408", "other", "recompile", "a recompile whose cause is none of the above (dynamo's guard says)", "read the guard"),
    Rule(
        "ND410",
        "new-xla-program",
        "loop",
        "a step made a new XLA program after the first steps: torch_xla's analysis names its trigger",
        "xla program",
        None,
        "a new XLA compile in the loop, minutes each on Trainium",
        "(XLA only)",
        "follow the trigger: a host read of a growing tensor, a sync per step, or a dynamo graph recompiled",
    ),
    Rule(
        "ND411",
        "not-steady",
        "loop",
        "the loop never stopped compiling: something compiles again every few steps",
        "steady state",
        None,
        "the loop keeps compiling XLA programs",
        "the loop keeps compiling graphs",
        "read the causes of the last compiles (ND401-ND410)",
    ),
    Rule(
        "ND412",
        "ranks-diverge",
        "loop",
        "the ranks of a torchrun job differ: one compiled, made a new XLA program, fell back or copied where the others did not",
        "rank divergence",
        None,
        "the other ranks wait in their next collective while one rank compiles, minutes each on Trainium; graphs that differ can hang the job",
        "the other ranks wait in their next collective while one rank compiles or copies",
        "make every rank see the same shapes and branches: shard evenly, pad the last batch (or drop it on every rank), "
        "keep rank-dependent values out of the compiled code",
    ),
)


def rule_named(code: str) -> Rule:
    """The rule with this code (``ND101``); KeyError when there is none."""
    for rule in RULES:
        if rule.code == code:
            return rule
    raise KeyError(code)


def rule_of(record: str, kind: str | None = None) -> str | None:
    """The code of the rule a record of this type and kind is a finding of: the kind's own rule, else the record's rule
    for any kind; None when that kind is no finding (a first compile, values that agree)."""
    exact = next((rule.code for rule in RULES if rule.record == record and rule.kind == kind), None)
    if exact is not None:
        return exact
    return next((rule.code for rule in RULES if rule.record == record and rule.kind is None), None)


class Ruled:
    """A record that is a finding: ``rule`` is its code, from the record type (``RECORD``) and its ``kind``."""

    RECORD: ClassVar[str]

    @property
    def rule(self) -> str | None:
        return rule_of(self.RECORD, getattr(self, "kind", None))


def selected(code: str, select: tuple[str, ...] | None, ignore: tuple[str, ...]) -> bool:
    """Whether a rule is checked, as ruff reads codes: a prefix selects every rule it starts (``ND1``, ``ND20``)."""
    chosen = select is None or any(code.startswith(prefix) for prefix in select)
    return chosen and not any(code.startswith(prefix) for prefix in ignore)


def rules() -> Any:
    """Every kind of finding neurondev reports, as a pandas.DataFrame: ``rule`` (the code, ``ND101``), ``name``,
    ``scenario`` (what it is about), ``summary`` and ``url`` (its page in the documentation site)."""
    import pandas

    rows = [{"rule": r.code, "name": r.name, "scenario": SCENARIOS[r.scenario], "summary": r.summary, "url": r.url} for r in RULES]
    return pandas.DataFrame(rows, columns=["rule", "name", "scenario", "summary", "url"])
