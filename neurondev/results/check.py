"""neurondev.check: a guard for CI. Fails, listing each pin and device-specialised line, unless allowed."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from typing import Any

import torch

from neurondev.errors import DevicePinsError, InvalidOptionError
from neurondev.render.sentences import describe, why_text
from neurondev.report.findings import Finding, explanation_findings, pin_costs
from neurondev.report.model import ExplanationData
from neurondev.report.options import ExplainOptions, default, refuse_shadowing, value_of
from neurondev.report.pipeline import explain, explain_with
from neurondev.rulebook import RULES, rule_named, selected
from neurondev.runs.program_failures import default_device_set
from neurondev.trace.callables import check_inputs

__all__ = ["check", "findings_of"]


def findings_of(explanation: ExplanationData) -> list[Finding]:
    """Every pin that costs something (unused pins, but for an assertion, which fails on the device, and results handed
    back at the end are not findings), every host value and CPU kernel, and every device-specialised line of the native trace."""
    place = explanation.place
    found = [Finding("pin", pin.node, pin.function, pin.source, pin, pin.rule, place) for pin in explanation.pins if pin_costs(pin)]
    found += [Finding("host value", v.placeholder, v.origin, v.source, v, v.rule, place) for v in explanation.host_values]
    found += [Finding("cpu kernel", k.node, k.function, k.source, k, k.rule, place) for k in explanation.cpu_kernels]
    found += _program_findings(explanation)
    if explanation.traces is not None:
        found += [Finding("device-specialised", f"line {d.line}", "", d.source, d, d.rule, place) for d in explanation.traces.differences]
    return found


def _program_findings(explanation: ExplanationData) -> list[Finding]:
    """Your program failing on the device as written, and, where the fix would not mend it, rewritten too."""
    programs = explanation.program
    if programs is None:
        return []
    found: list[Finding] = []
    for run in (programs.as_written, programs.rewritten):
        failure = run.failure
        if failure is None or (run is programs.rewritten and found and found[-1].where == failure.where):
            continue
        host = next((v for v in explanation.host_values if v.file == failure.file and v.line == failure.line), None)
        found.append(
            Finding(
                "program",
                f"program {run.backend}",
                failure.kind,
                failure.source,
                failure,
                failure.rule,
                explanation.place,
                backend=programs.as_written.backend,
                as_written=run is programs.as_written,
                host=host,
            )  # fmt: skip
        )
    return found


_EXPLAIN_OPTIONS = ("level", "rtol", "atol")


def check(
    fn: Callable[..., Any],
    *args: Any,
    target: str | torch.device | None = default(None),
    allow: Iterable[str] = default(()),
    native: bool = default(True),
    suggest: bool = default(False),
    program: bool = default(False),
    fallbacks: str = default("ignore"),
    select: Iterable[str] | None = default(None),
    ignore: Iterable[str] = default(()),
    **kwargs: Any,
) -> ExplanationData:
    """Raise DevicePinsError (an AssertionError too) listing every pin, host value, CPU kernel and
    device-specialised line of ``fn(*args, **kwargs)`` not in ``allow``; return the Explanation when there is none.

    ``allow``: node names (``"arange_3"``), ``file:line`` (``"model.py:41"``) or glob patterns over
    those, the function and the code (``"masking_utils.py:*"``, ``"torch.arange"``).
    What runs: one trace on CPU; with ``native=True`` (the default) a second trace with the inputs on
    XLA, to find device-specialised code (skipped, with a note, without torch_xla), which is the
    only work on the XLA device. ``suggest=True`` also verifies a fix for each pin of the user's code
    (tracing the fixed code again, on CPU and on XLA) and puts the fixed line under it, ready to
    paste. ``program=True`` also runs the user's whole function under ``torch.compile`` on XLA, as
    written and with the neurondev backend: a program that fails there is a finding with its line.
    ``fallbacks="error"`` is the strict mode of a native device's CI: the program runs on the device
    (``program`` implied) and every op that fell back to the CPU is a finding, with its op, calls and line
    (``"ignore"``, the default, leaves them to the card). With a default device set (``torch.set_default_device``)
    the program runs too: torch.compile may leave a factory call on the CPU (PyTorch issue 175953), a finding
    with its line. ``select`` and ``ignore`` take rule codes or their prefixes, as ruff does (``neurondev.rules()``
    lists them): ``select`` replaces the rules checked by default (ND101-ND108: the CPU trace's; ``ND3``: the
    program's failures, when it runs; ``ND205``/``ND206`` with ``fallbacks="error"``), ``ignore`` leaves rules out;
    dynamo's own graph breaks (ND109) are checked when selected. Selecting
    a rule of the device (``ND2``) runs what shows it: the graphs on the device (ND201, ND207-ND209), the program
    (ND202-ND206). ``level``, ``rtol`` and ``atol`` are explain's.
    Nothing is drawn.
    """
    passed = {name: kwargs.pop(name) for name in _EXPLAIN_OPTIONS if name in kwargs}  # explain's options, given to check
    if callable(fn):
        check_inputs(fn, args, kwargs)  # check has no callable form: it needs the inputs now
        given = {
            "target": target,
            "allow": allow,
            "native": native,
            "suggest": suggest,
            "program": program,
            "fallbacks": fallbacks,
            "select": select,
            "ignore": ignore,
        }
        options_given = {**given, **passed}
        refuse_shadowing(fn, options_given, verb="check")
    for name, value in (("suggest", suggest), ("program", program), ("native", native)):
        if not isinstance(value_of(value), bool):
            raise InvalidOptionError(f"{name} is True or False, got {value_of(value)!r}")
    strict = _strict(value_of(fallbacks))
    rules = _rules(value_of(allow))
    chosen = _codes(value_of(select), "select", none=True)
    left_out = _codes(value_of(ignore), "ignore") or ()
    checked = tuple(rule.code for rule in RULES if selected(rule.code, chosen or _DEFAULT + (_STRICT if strict else ()), left_out))
    strict = strict or any(code in _STRICT for code in checked)
    options = ExplainOptions.checked(
        target,
        run=any(code in _GRAPH_RUN for code in checked),
        quiet=True,
        rtol=passed.get("rtol"),
        atol=passed.get("atol"),
        native=native,
        level=passed.get("level", "dynamo"),
        # a default device: only the program's run shows 175953
        program=value_of(program) or strict or default_device_set() or any(code in _PROGRAM_RUN for code in checked),
    )
    options = dataclasses.replace(options, fixes=value_of(suggest))
    explanation = explain_with(fn, args, kwargs, options) if callable(fn) else explain(fn, *args, **kwargs)
    found = findings_of(explanation) + (fallback_findings(explanation) if strict else []) + _device_findings(explanation, checked)
    left = [finding for finding in found if finding.rule in checked and not finding.allowed_by(rules)]
    if left:
        raise DevicePinsError(_message(explanation, left, suggest=value_of(suggest)), left)
    return explanation


_DEFAULT = ("ND101", "ND102", "ND103", "ND104", "ND105", "ND106", "ND107", "ND108", "ND3")  # ND109 (dynamo's breaks): asked for
_STRICT = ("ND205", "ND206")
_GRAPH_RUN = ("ND201", "ND207", "ND208", "ND209")
_PROGRAM_RUN = ("ND202", "ND203", "ND204", "ND205", "ND206")


def _codes(given: Any, name: str, *, none: bool = False) -> tuple[str, ...] | None:
    """Rule codes or prefixes (``"ND101"``, ``"ND2"``) as a tuple; InvalidOptionError naming the ones that start no rule."""
    if given is None and none:
        return None
    codes = [given] if isinstance(given, str) else given
    try:
        codes = list(codes)
    except TypeError:
        codes = [given]
    wrong = [code for code in codes if not isinstance(code, str) or not any(rule.code.startswith(code) for rule in RULES) or not code]
    if wrong:
        raise InvalidOptionError(
            f"{name} takes rule codes or their prefixes ('ND101', 'ND2'; neurondev.rules() lists them), got {wrong[0]!r}"
        )
    return tuple(codes)


def _device_findings(explanation: ExplanationData, checked: tuple[str, ...]) -> list[Finding]:
    """The findings check does not make itself (dynamo's breaks, ND109; the device's, ND201-ND204 and ND207-ND209)
    from the runs that happened, for the rules checked."""
    wanted = [code for code in checked if (code.startswith("ND2") and code not in _STRICT) or code == "ND109"]
    found = []
    for record in explanation_findings(explanation):
        if record.rule in wanted:
            name = getattr(record, "node", None) or getattr(record, "what", None) or getattr(record, "question", "")
            rule = rule_named(record.rule)
            found.append(Finding("device", str(name), rule.name, getattr(record, "source", None), record, rule.code, explanation.place))
    return found


def _strict(fallbacks: Any) -> bool:
    if fallbacks not in ("ignore", "error"):
        raise InvalidOptionError(
            f"fallbacks is 'error' (an op that falls back to the CPU on the device fails the check) or 'ignore', got {fallbacks!r}"
        )
    return fallbacks == "error"


def fallback_findings(explanation: ExplanationData) -> list[Finding]:
    """Every op that fell back to the CPU while the program ran on the device, one finding per op and line
    (a program that did not run there cannot be checked: that is a finding too)."""
    place = explanation.place
    if explanation.program is None:
        return [Finding("fallback", "program", "", None, None, "ND206", place, why="not run", skip=explanation.program_skipped)]
    unseen = explanation.program.rewritten.unseen
    closed = [Finding("fallback", "program", "", None, None, "ND206", place, why="unseen", compiler=unseen)] if unseen else []
    return closed + [
        Finding("fallback", fallback.node or fallback.op, fallback.op, fallback.source, fallback, fallback.rule, place)
        for _, fallback in explanation.fallbacks
    ]


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


def _suggestion(explanation: ExplanationData, finding: Finding) -> str:
    """The verified fixed statement of a pin's line, to paste; or why there is none."""
    if finding.kind != "pin" or finding.source is None:
        return ""
    fix = explanation.fix_at(finding.file, finding.line)
    if fix is None:
        return ""
    if fix.verified and fix.after is not None:
        pasted = "\n        ".join(fix.after.splitlines())
        return f"\n      verified fix, paste:\n        {pasted}"
    return f"\n      no verified fix: {why_text(fix)}"


def _spellings(rule: str) -> list[str]:
    """``./models/net.py:12`` also as the file's absolute path, which is how a finding names it."""
    path, _, line = rule.rpartition(":")
    if not path or not line.isdigit() or not path.endswith(".py") or any(c in path for c in "*?["):
        return [rule]
    return [rule, f"{os.path.abspath(path)}:{line}"]


_HEADINGS = {
    "pin": "device pin(s) frozen into the graph of {name} when traced on CPU:",
    "host value": "host value(s) of {name} that stay on the CPU when the model moves to {place}:",
    "cpu kernel": "CPU kernel(s) chosen while tracing {name} on CPU:",
    "program": "failure(s) of {name} run as a program under torch.compile on {place}:",
    "device-specialised": "line(s) of {name} traced differently on {place} (device-specialised code):",
    "fallback": "op(s) of {name} that fell back to the CPU on the device (fallbacks='error'):",
    "device": "cost(s) of {name} on {place} (rules selected):",
}


def _message(explanation: ExplanationData, findings: list[Finding], *, suggest: bool = False) -> str:
    parts = []
    for kind, heading in _HEADINGS.items():
        of_kind = [f for f in findings if f.kind == kind]
        if of_kind and kind == "fallback" and all(f.why == "not run" for f in of_kind):  # nothing fell back: nothing ran
            parts.append(f"{explanation.name} did not run on the device: its fallbacks were not checked (fallbacks='error'):")
            parts += [describe(f) for f in of_kind]
        elif of_kind:
            parts.append(f"{len(of_kind)} " + heading.format(name=explanation.name, place=explanation.place))
            parts += [describe(f) + (_suggestion(explanation, f) if suggest else "") for f in of_kind]
    lined = [f for f in findings if f.source is not None]
    if lined:
        parts.append(f'Fix them, or allow one: neurondev.check(..., allow=["{lined[0].where}"])')
    else:  # no line to allow: the rule is what can be left out
        parts.append(f'Fix them, or leave the rule out: neurondev.check(..., ignore=("{findings[0].rule}",))')
    return "\n".join(parts)
