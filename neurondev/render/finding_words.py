"""A check's findings in words: what was found, and what to write instead."""

from __future__ import annotations

from typing import Any

from neurondev.render.describe import describe
from neurondev.render.fix_words import CPU_KERNEL_FIX, fallback_advice, fix_for, host_value_fix
from neurondev.render.run_words import skip_text
from neurondev.report.findings import Finding
from neurondev.rulebook import rule_named

__all__ = ["finding_detail", "finding_fix", "finding_text", "unseen_text"]


_NOT_RUN_FIX = (
    "nothing in your code: run the check where the device is (its runtime installed: torch-xla, or torch-neuronx on "
    "Trainium), or on the host test device (target='hostdev'); or leave the rule out"
)


@describe.register
def finding_text(finding: Finding) -> str:
    rule = f" [{finding.rule}]" if finding.rule else ""
    where = f"{finding.where}: {finding.code}" if finding.source is not None else "the whole function (no one line):"
    return f"  {where}\n      {finding_detail(finding)}{rule}\n      write instead: {finding_fix(finding)}"


# --- a check's findings: what was found and what to write instead --------------------------------------
_SPECIALISED_FIX = "no device rewrite changes Python that branches on the device: trace on XLA, or make both branches the same"
_UNSEEN_FIX = "check on a device whose compiled graphs pass the dispatcher (the host test device), or read the backend's own record"
_PROGRAM_FIXES = {
    "mixed devices at compile time": "keep every tensor the code reads on the device: pass it in, or register it as a buffer of the module",
    "default device ignored under torch.compile": (
        "torch.compile on this torch makes this factory call's tensor on the CPU, not on the default device you set "
        "(PyTorch issue 175953): pass the device (device=x.device), or use a torch that applies it (2.13 does)"
    ),
    "host-only call between graphs": "keep .numpy(), .tolist() and Python numbers of tensors out of the compiled function (use torch ops, or do it after)",
    "wrong device at run time": "move every input and the module to the device (model.to(device), x.to(device)) before the call",
    "other": "see the message; run it yourself with torch.compile(fn, backend='{backend}') on inputs on {place}",
}


def unseen_text(compiler: str) -> str:
    """Why a program run on a device with its own graph compiler cannot see its fallbacks on lines."""
    return (
        f"inside the graphs {compiler}'s compiler runs, ops do not pass the dispatcher: what falls back "
        "there is in the backend's own record (torch_neuronx.get_fallback_ops()), not on a line"
    )


def finding_detail(finding: Finding) -> str:
    """What was found, in words."""
    found: Any = finding.found
    if finding.why == "not run":
        reason = skip_text(finding.skip, "program") or "it was not run"
        return f"your program did not run on the device ({reason}): no fallback was checked"
    if finding.why == "unseen":
        return f"cannot verify fallbacks here: {unseen_text(finding.compiler or 'the backend')}"
    if finding.kind == "pin":
        return f"{found.node}: {found.function}, device={found.device} ({found.kind}, {found.location})"
    if finding.kind == "host value":
        return f"{describe(found)} stays on the CPU when the model moves to {finding.place}"
    if finding.kind == "cpu kernel":
        return f"{found.function} is a kernel for the CPU"
    if finding.kind == "device-specialised":
        return f"traced as {list(found.cpu_ops)} on CPU but {list(found.xla_ops)} on {finding.place}"
    if finding.kind == "program":
        label = f"as written ({finding.backend})" if finding.as_written else "with the neurondev backend"
        return f"your program on {finding.place} {label} {describe(found)}"
    if finding.kind == "fallback":
        inside = f" inside {found.inside}" if found.inside else ""
        module = f" in {found.module}" if found.module else ""
        return f"{found.op} fell back to the CPU {found.calls} time(s) per call ({found.bytes} bytes copied){inside}{module}"
    return describe(found)


def finding_fix(finding: Finding) -> str:
    """What to write instead (for a program that did not run: nothing in the code, where to run it)."""
    found: Any = finding.found
    if finding.why == "not run":
        return _NOT_RUN_FIX
    if finding.why == "unseen":
        return _UNSEEN_FIX
    if finding.kind == "pin":
        return fix_for(found)
    if finding.kind == "host value":
        return host_value_fix(found)
    if finding.kind == "cpu kernel":
        return CPU_KERNEL_FIX
    if finding.kind == "device-specialised":
        return _SPECIALISED_FIX
    if finding.kind == "program":
        host = finding.host
        fix = host_value_fix(host) if host is not None and found.kind == "mixed devices at compile time" else _PROGRAM_FIXES[found.kind]
        return fix.format(backend=finding.backend, place=finding.place)
    if finding.kind == "fallback":
        return fallback_advice(found.op)
    return rule_named(finding.rule).fix if finding.rule else ""
