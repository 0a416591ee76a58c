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


def test_a_compile_is_a_graph_dynamo_made_and_the_library_frames_it_only_looked_at_are_one_line():
    """After a break dynamo looks at the logging frames the break calls and makes no graph of them: they are not
    compiles (a newcomer's step counted 117 of them). The compiles are dynamo's graphs, as its counters and the
    backend count them."""
    from torch._dynamo.utils import counters

    graphs = []
    step = torch.compile(logs, backend=lambda gm, inputs: graphs.append(gm) or gm.forward)
    logging.disable(logging.WARNING)  # quiet, and the frames still run
    made = counters["stats"]["unique_graphs"]
    try:
        with neurondev.watch() as w:
            for _ in range(3):
                step(torch.randn(4))
    finally:
        logging.disable(logging.NOTSET)
    compiles = w.compiles_read
    assert len(compiles) == len(graphs) == counters["stats"]["unique_graphs"] - made == 2  # before and after the break
    assert sum(c.event.graphs for c in compiles) == len(graphs) and all("logging" not in c.event.file for c in compiles)
    looked = w.record.looked_at
    assert looked and all("logging" in event.file and event.graphs == 0 for event in looked)
    summary = w.summary()
    assert f"Dynamo also looked at {len(looked)} frame(s) it made no graph of (logging/__init__.py" in summary
    assert "library frames" not in summary and w.record.steady.kind == "nothing"
    assert [row["function"] for row in json.loads(w.to_json())["looked_at"]] == [event.function for event in looked]


def test_another_threads_compiles_are_shown_apart_and_never_change_the_watched_loops_verdict():
    """A background thread recompiling its own function while the loop runs: the loop compiled once (its verdict
    changed to a recompile in 3 of 4 runs when every thread's compiles were the loop's)."""
    import threading

    theirs = torch.compile(lambda x: x * 3, backend="eager", dynamic=False)
    ours = torch.compile(lambda x: x + 1, backend="eager")
    go, done = threading.Event(), threading.Event()

    def background():
        go.wait(timeout=60)
        for size in range(1, 5):  # a new size each call: a recompile each (dynamic=False)
            theirs(torch.ones(size))
        done.set()

    thread = threading.Thread(target=background, daemon=True)
    thread.start()
    with neurondev.watch() as w:
        for number in range(4):
            ours(torch.ones(3))
            if number == 1:
                go.set()
                assert done.wait(timeout=60)
    thread.join(timeout=60)
    record = w.record
    assert [(c.kind, c.step) for c in record.compiles] == [("first", 1)] and record.steady.kind == "nothing"
    assert [event.index for event in record.other_threads] == [0, 1, 2, 3] and len(record.steps) == 4
    assert "Other threads compiled 4 time(s) meanwhile" in w.summary() and record.steady.exit_code == 0


def test_two_functions_of_one_name_are_two_parts_of_the_summary_each_with_where_it_is_defined():
    add = lambda x: x + 1  # noqa: E731
    double = lambda x: x * 2  # noqa: E731
    first, second = (torch.compile(fn, backend="eager", dynamic=False) for fn in (add, double))
    with neurondev.watch() as w:
        for size in (2, 3):
            first(torch.ones(size))
            second(torch.ones(size))
    summary = w.summary()
    for fn in (add, double):
        where = f"<lambda> (test_watch_any_torch.py:{fn.__code__.co_firstlineno})"
        assert f"{where} compiled 2 time(s) (1 first, 1 recompile)" in summary, summary


def test_gradients_turned_off_for_evaluation_are_a_flag_with_one_graph_each_and_no_advice():
    """A step compiled with gradients on, then called under torch.no_grad() (an evaluation): dynamo's guard on its
    global state (GLOBAL_STATE changed: grad_mode) is the flag of the two phases, expected once, nothing to change."""
    from neurondev.loops.causes import GRAD_MODE

    step = torch.compile(lambda x: x * 2, backend="eager")
    with neurondev.watch() as watched:
        for grad in (True, True, False, False):
            with torch.set_grad_enabled(grad):
                step(torch.ones(2))
    causes = [c.cause for c in watched.record.compiles]
    assert [(c.kind, c.value) for c in causes] == [("first compile", None), ("flag", GRAD_MODE)]
    assert watched.record.advice == () and "gradients turned on or off (training and evaluation calls)" in watched.summary()


def log_loss(loss):
    return loss.item()  # a sync inside a helper of the loop's


def test_a_sync_inside_a_helper_is_named_at_its_line_with_the_loops_call_of_the_helper():
    """On the host device, each step's sync is the device's own (its log), named at the helper's line and at the line of
    the loop that called the helper."""
    from neurondev.devices.host.loader import extension

    device = neurondev.host_device()
    step = torch.compile(lambda x: (x * 2).sum(), backend="aot_eager")
    seen = len(extension().events(0))
    with neurondev.watch() as w:
        for _ in range(3):
            loss = step(torch.ones(4, device=device))
            log_loss(loss)  # the loop's call of the helper
    logged = [event for event in extension().events(0)[seen:] if event[0] == "sync"]
    assert sum(w.steps["syncs"]) == len(logged) == 3
    helper = f"test_watch_any_torch.py:{line_of(log_loss, 'loss.item()')}"
    call = f"test_watch_any_torch.py:{line_of(test_a_sync_inside_a_helper_is_named_at_its_line_with_the_loops_call_of_the_helper, 'log_loss(loss)  #')}"
    assert set(w.steps["device_lines"]) == {f"1 sync(s) at {helper} (called from {call})"}
