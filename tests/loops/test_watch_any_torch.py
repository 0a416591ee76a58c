"""watch without any device, on whichever torch runs the suite (2.9 and 2.13 word dynamo's guards differently)."""

from __future__ import annotations

import json
import logging

import pytest
import torch

import neurondev
from tests.helpers import line_of

NET = torch.nn.Linear(4, 2)


def scaled(x, lr):
    return NET(x).sum() * lr


def test_a_float_rate_is_named_with_its_values_and_the_line_that_reads_it():
    step = torch.compile(scaled, backend="eager")
    with neurondev.watch() as w:
        for i in range(2):
            step(torch.randn(8, 4), 0.1 * 0.9**i)
    recompile = w.compiles.iloc[1]
    assert (recompile.kind, recompile.value, recompile.before, recompile.after) == ("recompile", "lr", "0.1", "0.09")
    assert recompile.read_at == f"test_watch_any_torch.py:{line_of(scaled, 'return NET(x)')}"


def times(x, n):
    return x * n


def test_the_recompile_limit_is_named_and_every_call_after_it_is_a_step_of_its_own():
    """torch 2.13 refuses at the limit with dynamo's Unsupported (2.9: RecompileLimitExceeded); the calls after
    it run uncompiled, seen by neither a compile nor a guard check: each is still a call of the compiled function."""
    torch._dynamo.reset()  # the code object's compiles start from none
    step = torch.compile(times, backend="eager", dynamic=False)
    with torch._dynamo.config.patch(recompile_limit=2), neurondev.watch() as w:
        for n in range(5):
            step(torch.ones(3), n)  # a Python number: a new graph for each value
    assert [c.kind for c in w.compiles_read] == ["first", "recompile", "recompile limit reached"]
    assert list(w.steps["dynamo_compiles"]) == [1, 1, 1, 0, 0] and w.steady_state == "never"
    assert json.loads(w.to_json())["recompile_limit_step"] == 3
    # (with XLA's figures when another test has loaded torch_xla in this process: the sentence goes on with them)
    assert (
        "No steady state: dynamo compiled until its recompile limit at step 3, then the function ran uncompiled for the 2 step(s) after it"
        in w.summary()
    )


def test_advice_run_again_with_its_fix_and_not_enough_leaves_the_advice_for_tried():
    from neurondev.loops.causes import AdviceCheck
    from neurondev.loops.record import with_checked_advice

    torch._dynamo.reset()  # scaled's compiles start from none
    step = torch.compile(scaled, backend="eager")
    with neurondev.watch() as w:
        for i in range(3):
            step(torch.randn(8, 4), 0.1 * 0.9**i)
    (advice,) = w.advice
    checked = with_checked_advice(w.record, (advice.cause,), AdviceCheck("not enough", since=2, steps=3))
    assert checked.advice == () and [a.cause for a in checked.tried] == [advice.cause]
    shown = neurondev.Watch.of(checked)
    assert "Tried, not enough: python number (checked, not enough" in shown.summary() and "Advice (" not in shown.summary()
    tried = json.loads(shown.to_json())["tried"][0]
    assert tried["check"] == {"kind": "not enough", "fix": "sync each step", "steady": None, "since": 2, "steps": 3}
    assert tried["verified"] is False and tried["check_text"].startswith("checked, not enough")
    assert "Tried, not enough" in shown._repr_html_()
    built = neurondev.Watch(record=checked)  # built by its constructor, as Watch.of builds it
    assert built.record is checked and built.summary() == shown.summary() and built.name == w.name
    with pytest.raises(neurondev.InvalidOptionError, match="recorded its block already"):
        built.__enter__()


LOG = logging.getLogger("neurondev-tests")


def logs(x):
    y = x * 2
    LOG.warning("scale %s", 2)  # a graph break: dynamo then compiles the logging frames it calls
    return y + 1


def test_library_frames_compiled_after_a_break_are_folded_into_one_part_of_the_summary():
    step = torch.compile(logs, backend="eager")
    logging.disable(logging.WARNING)  # quiet, and the frames still run
    try:
        with neurondev.watch() as w:
            for _ in range(3):
                step(torch.randn(4))
    finally:
        logging.disable(logging.NOTSET)
    library = [c for c in w.compiles_read if "logging" in c.event.file]
    assert len(library) > 1  # each frame its own compile, as dynamo made them (the table keeps them all)
    summary = w.summary()
    assert f"{len(library)} compile(s) of library frames after graph breaks (logging/__init__.py" in summary
    assert not any(f"{c.event.function} compiled" in summary for c in library)
