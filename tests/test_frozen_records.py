"""Frozen means frozen: every record an Explanation, a Watch and their parts hold refuses assignment and
carries no mutable container (a dict, a list or a set a caller could change behind its back)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import neurondev

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
    """Fields holding a container a caller could change (tensors and graphs are the values recorded, not containers)."""
    return [f.name for f in dataclasses.fields(record) if isinstance(getattr(record, f.name), _OPEN)]


@pytest.fixture()
def explanation(seed_explained):
    return seed_explained


def test_every_record_of_an_explanation_is_frozen_and_holds_no_open_container(explanation):
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


def test_an_explanation_and_its_sections_are_equal_only_to_themselves_and_hashable(explanation):
    """They hold graphs and tensors: a field-by-field == would ask a tensor for its truth value."""
    again = dataclasses.replace(explanation)  # the same fields, another record
    assert explanation == explanation and explanation != again and hash(explanation) != hash(again)
    assert {explanation, again} == {again, explanation} and len({explanation, explanation}) == 1
    section = explanation.sections[0]
    assert section == section and section != dataclasses.replace(section) and isinstance(hash(section), int)


def test_an_explanations_runs_and_mappings_are_read_only(explanation):
    assert isinstance(explanation.before, tuple) and isinstance(explanation.after, tuple)
    for name in ("runtime", "stage_seconds"):
        with pytest.raises(TypeError):
            getattr(explanation, name)["x"] = 1
    made = neurondev.Explanation.of(dataclasses.replace(explanation, runtime={"device": "xla:0"}))  # even from a plain dict
    with pytest.raises(TypeError):
        made.runtime["device"] = "cpu"


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


def test_a_blocks_watch_is_equal_before_and_after_another_call_of_the_watched_function():
    step = torch.compile(lambda x: x * 2, backend="eager")
    with neurondev.watch() as w:
        step(torch.randn(2))
    snapshot, table = w.record, w.compiles
    kept = dataclasses.replace(snapshot)  # a copy, compared field by field
    step(torch.randn(3, 3))  # compiles again, outside the block
    assert w.record is snapshot and w.record == kept and len(w.compiles) == len(table) == 1


def test_a_watched_functions_record_is_made_again_per_call_and_the_old_one_stays_as_it_was():
    watched = neurondev.watch(torch.compile(lambda x: x + 1, backend="eager"))
    watched(torch.randn(2))
    first = watched.record
    kept = dataclasses.replace(first)
    watched(torch.randn(3, 3))
    assert watched.record is not first and first == kept
    assert len(first.steps) == 1 and len(watched.record.steps) == 2


def test_an_explanation_and_a_watch_take_no_new_attributes(explanation):
    with pytest.raises(dataclasses.FrozenInstanceError, match="rerun"):
        explanation.extra = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        del explanation.name
    assert not hasattr(explanation, "extra")
    watched = neurondev.watch()
    with pytest.raises(AttributeError, match="no new attributes"):
        watched.extra = 1
    with watched:
        pass
    with pytest.raises(AttributeError, match="no new attributes"):
        watched.compiles_seen = ()


def test_a_section_owns_its_graph_a_pass_run_on_the_capture_afterwards_changes_no_explanation():
    from neurondev.gallery.patterns import seed_function

    captured = neurondev.capture(seed_function, torch.randn(64))
    explained = neurondev.explain(captured, quiet=True)
    assert explained.sections[0].traced is not captured.graphs[0]
    neurondev.DeviceRewriterPass(target="xla")(captured.graphs[0])  # the user's own pass, on the user's own graph
    assert len(neurondev.find_pins(captured.graphs[0], target="xla")) == 0
    again = explained.rerun()
    assert len(explained.pins) == len(again.pins) == 1 and len(again.before[0].graph_breaks) == 1


def test_rewrite_copy_returns_its_rewrites_as_a_tuple_as_every_record_holds_them(seed_capture):
    _, rewrites = neurondev.rewrite_copy(seed_capture.graphs[0])
    assert isinstance(rewrites, tuple) and [r.node for r in rewrites] == ["out"]
