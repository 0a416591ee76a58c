"""neurondev.check: a guard for CI. Fails, listing each pin and device-specialised line, unless allowed."""

from __future__ import annotations

import dataclasses
import fnmatch
import os
from collections.abc import Callable, Iterable
from typing import Any

import torch

from neurondev.errors import DevicePinsError, InvalidOptionError
from neurondev.report.advice import fix_for
from neurondev.report.model import Explanation
from neurondev.report.options import default, refuse_shadowing, value_of
from neurondev.report.pipeline import explain
from neurondev.trace.capture import check_inputs
from neurondev.trace.source import Located, SourceLine

__all__ = ["Finding", "check", "findings_of"]

_SPECIALISED_FIX = "no device rewrite changes Python that branches on the device: trace on XLA, or make both branches the same"


@dataclasses.dataclass(frozen=True)
class Finding(Located):
    """One thing check reports: a device pin, or a line traced differently on XLA."""

    kind: str  # "pin", "host value", "cpu kernel" or "device-specialised"
    node: str
    function: str
    source: SourceLine | None
    detail: str
    fix: str

    def allowed_by(self, rules: Iterable[str]) -> bool:
        """Allowed by a node name, a file:line (file name or path), or a glob over those, the function or code."""
        names = {self.node, self.function, self.where, self.code or ""}
        if self.source is not None:
            names.add(f"{self.source.file}:{self.source.line}")
        return any(rule in names or any(fnmatch.fnmatch(name, rule) for name in names) for rule in rules)

    def describe(self) -> str:
        return f"  {self.where}: {self.code}\n      {self.detail}\n      write instead: {self.fix}"

    def to_dict(self) -> dict[str, Any]:
        source = self.source.to_dict() if self.source else {"file": None, "line": None, "code": None, "where": self.where}
        return {"kind": self.kind, "node": self.node, "function": self.function, **source, "detail": self.detail, "fix": self.fix}


def findings_of(explanation: Explanation) -> list[Finding]:
    """Every pin that costs something (unused pins and results handed back at the end are not
    findings), every host value and CPU kernel, and every device-specialised line of the native trace."""
    found = [
        Finding(
            "pin",
            pin.node,
            pin.function,
            pin.source,
            f"{pin.node}: {pin.function}, device={pin.device} ({pin.kind}, {pin.location})",
            fix_for(pin),
        )
        for pin in explanation.pins
        if not pin.unused and not pin.output_transfer
    ]
    found += [
        Finding(
            "host value",
            value.placeholder,
            value.origin,
            value.source,
            f"{value.describe()} stays on the CPU when the model moves to XLA",
            value.fix,
        )
        for value in explanation.host_values
    ]
    found += [
        Finding("cpu kernel", kernel.node, kernel.function, kernel.source, f"{kernel.function} is a kernel for the CPU", kernel.fix)
        for kernel in explanation.cpu_kernels
    ]
    if explanation.traces is not None:
        found += [
            Finding(
                "device-specialised",
                f"line {d.line}",
                "",
                d.source,
                f"traced as {list(d.cpu_ops)} on CPU but {list(d.xla_ops)} on XLA",
                _SPECIALISED_FIX,
            )
            for d in explanation.traces.differences
        ]
    return found


def check(
    fn: Callable[..., Any],
    *args: Any,
    target: str | torch.device = default("xla"),
    allow: Iterable[str] = default(()),
    native: bool = default(True),
    suggest: bool = default(False),
    **kwargs: Any,
) -> Explanation:
    """Raise DevicePinsError (an AssertionError too) listing every pin and device-specialised line of
    ``fn(*args, **kwargs)`` not in ``allow``; return the Explanation when there is none.

    ``allow``: node names (``"arange_3"``), ``file:line`` (``"model.py:41"``) or glob patterns over
    those, the function and the code (``"masking_utils.py:*"``, ``"torch.arange"``). ``native=True``
    also traces on XLA to find device-specialised code (skipped, with a note, without torch_xla).
    ``suggest=True`` puts the verified fixed line under each pin of the user's code, ready to paste.
    Nothing runs on the device otherwise and nothing is drawn: check is about what the graph says.
    """
    if callable(fn):
        check_inputs(fn, args, kwargs)  # check has no callable form: it needs the inputs now
        refuse_shadowing(fn, {"target": target, "allow": allow, "native": native, "suggest": suggest}, verb="check")
    if not isinstance(value_of(suggest), bool):
        raise InvalidOptionError(f"suggest is True (put the verified fixed line under each pin) or False, got {value_of(suggest)!r}")
    rules = _rules(value_of(allow))
    explanation = explain(fn, *args, target=value_of(target), run=False, quiet=True, native=value_of(native), **kwargs)
    left = [finding for finding in findings_of(explanation) if not finding.allowed_by(rules)]
    if left:
        raise DevicePinsError(_message(explanation, left, suggest=value_of(suggest)), left)
    return explanation


def _rules(allow: Any) -> list[str]:
    """The allow rules as strings; a file:line rule is also read as the file's absolute path."""
    if isinstance(allow, str):
        allow = [allow]
    try:
        rules = list(allow)
    except TypeError:
        rules = [allow]
    if not all(isinstance(rule, str) for rule in rules):
        raise InvalidOptionError(f"allow is a list of strings (node names, file:line, or patterns), got {allow!r}")
    return [spelling for rule in rules for spelling in _spellings(rule)]


def _suggestion(explanation: Explanation, finding: Finding) -> str:
    """The verified fixed statement of a pin's line, to paste; or why there is none."""
    if finding.kind != "pin" or finding.source is None:
        return ""
    fix = next((f for f in explanation.fixes if f.file == finding.file and f.first <= (finding.line or 0) <= f.last), None)
    if fix is None:
        return ""
    if fix.verified and fix.after is not None:
        pasted = "\n        ".join(fix.after.splitlines())
        return f"\n      verified fix, paste:\n        {pasted}"
    return f"\n      no verified fix: {fix.why}"


def _spellings(rule: str) -> list[str]:
    """``./models/net.py:12`` also as the file's absolute path, which is how a finding names it."""
    path, _, line = rule.rpartition(":")
    if not path or not line.isdigit() or not path.endswith(".py") or any(c in path for c in "*?["):
        return [rule]
    return [rule, f"{os.path.abspath(path)}:{line}"]


_HEADINGS = {
    "pin": "device pin(s) frozen into the graph of {name} when traced on CPU:",
    "host value": "host value(s) of {name} that stay on the CPU when the model moves to XLA:",
    "cpu kernel": "CPU kernel(s) chosen while tracing {name} on CPU:",
    "device-specialised": "line(s) of {name} traced differently on XLA (device-specialised code):",
}


def _message(explanation: Explanation, findings: list[Finding], *, suggest: bool = False) -> str:
    parts = []
    for kind, heading in _HEADINGS.items():
        of_kind = [f for f in findings if f.kind == kind]
        if of_kind:
            parts.append(f"{len(of_kind)} " + heading.format(name=explanation.name))
            parts += [f.describe() + (_suggestion(explanation, f) if suggest else "") for f in of_kind]
    example = findings[0].where
    parts.append(f'Fix them, or allow one: neurondev.check(..., allow=["{example}"])')
    return "\n".join(parts)
