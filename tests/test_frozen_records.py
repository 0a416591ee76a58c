"""Frozen means frozen: every record an Explanation, a Watch and their parts hold refuses assignment and
carries no mutable container (a dict, a list or a set a caller could change behind its back)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import neurondev
from neurondev import examples

pytestmark = pytest.mark.xla

_OPEN = (dict, list, set, bytearray)


def records(value, seen=None):
    """Every neurondev dataclass instance reachable from ``value`` through fields, tuples and mappings."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    seen.add(id(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and type(value).__module__.startswith("neurondev."):
        yield value
        for field in dataclasses.fields(value):
            yield from records(getattr(value, field.name), seen)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from records(item, seen)
    elif hasattr(value, "values") and callable(value.values) and not isinstance(value, torch.Tensor):
        for item in list(value.values()):
            yield from records(item, seen)


def open_fields(record):
    skip = {"outputs", "capture", "traced", "rewritten", "inputs", "exception", "owners", "graphs", "example_inputs", "output"}
    return [f.name for f in dataclasses.fields(record) if f.name not in skip and isinstance(getattr(record, f.name), _OPEN)]


def test_every_record_of_an_explanation_is_frozen_and_holds_no_open_container():
    fn, args, kwargs = examples.get("seed").build()
    explanation = neurondev.explain(fn, *args, **kwargs, quiet=True)
    found = list(records(explanation))
    kinds = {type(r).__name__ for r in found}
    assert {"Explanation", "Section", "RunRecord", "DevicePin", "ProgramRun", "Programs", "Verdict", "Fix", "Totals"} - {"Totals"} <= kinds
    for record in found:
        assert dataclasses.fields(record) and type(record).__dataclass_params__.frozen, type(record).__name__
        assert open_fields(record) == [], (type(record).__name__, open_fields(record))
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, dataclasses.fields(record)[0].name, None)
    run = explanation.before[0]
    with pytest.raises(TypeError):
        run.node_devices["out"] = "cpu"  # a read-only mapping
    with pytest.raises(TypeError):
        run.fallback_ops["aten::x"] = 1


def test_a_watch_refuses_assignment_and_its_record_is_frozen_through():
    with neurondev.watch() as w:
        torch.compile(lambda x: x * 2, backend="eager")(torch.randn(2))
    with pytest.raises(AttributeError):
        w.compiles = None  # a read-only face over the frozen record
    found = list(records(w.record))
    assert {"WatchRecord", "Compile", "CompileEvent", "Step", "SteadyState", "Cause"} <= {type(r).__name__ for r in found}
    for record in found:
        assert type(record).__dataclass_params__.frozen and open_fields(record) == [], type(record).__name__
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, dataclasses.fields(record)[0].name, None)
