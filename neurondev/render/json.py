"""An Explanation as plain data (JSON-ready): pins, rewrites, per-graph run figures, breaks, errors."""

from __future__ import annotations

import dataclasses
from typing import Any

from neurondev.report.advice import fix_for
from neurondev.render.text import summary

__all__ = ["explanation_dict", "plain"]


def plain(value: Any) -> Any:
    """A JSON-ready copy: devices and dtypes as text, tuples as lists."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _pin(pin: Any) -> dict[str, Any]:
    data = dataclasses.asdict(pin)
    data["fix"] = fix_for(pin)
    return plain(data)


def _section(section: Any) -> dict[str, Any]:
    return {
        "index": section.index,
        "label": section.label,
        "native_seconds": section.native_seconds,
        "native_ratio": section.native_ratio,
        "nodes": len(section.before.graph.nodes),
        "pins": [_pin(pin) for pin in section.pins],
        "rewrites": [plain(dataclasses.asdict(r)) for r in section.rewrites],
        "code_before": section.before.code,
        "code_after": section.after.code,
        "before": plain(section.run_before.to_dict()) if section.run_before else None,
        "after": plain(section.run_after.to_dict()) if section.run_after else None,
        "values": plain(dataclasses.asdict(section.values)) if section.values else None,
        "values_against": section.values_against,
    }


def explanation_dict(explanation: Any) -> dict[str, Any]:
    captured = explanation.capture
    return {
        "name": explanation.name,
        "target": explanation.target,
        "summary": summary(explanation),
        "outputs_match": explanation.outputs_match,
        "skipped": explanation.skipped,
        "runtime": plain(explanation.runtime),
        "pins": len(explanation.frozen),
        "totals": {"before": explanation.totals("before"), "after": explanation.totals("after")},
        "graphs": [_section(section) for section in explanation.sections],
        "dynamo_breaks": [plain(dataclasses.asdict(b)) for b in captured.dynamo_breaks],
        "moved_inputs": [plain(dataclasses.asdict(m)) for m in captured.moved_inputs],
        "notes": list(captured.notes) + list(explanation.frozen.attrs.get("notes", [])),
        "native": explanation.native.to_dict() if explanation.native is not None else None,
        "native_skipped": explanation.native_skipped,
    }
