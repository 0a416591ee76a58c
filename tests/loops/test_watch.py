"""neurondev.watch on real loops: exact compile counts and causes, the calls of a watched function, the command."""

from __future__ import annotations

import json
import logging

import pytest
import torch

import neurondev
from neurondev import cli
from tests.helpers import HIDE_TORCH_XLA, line_of, run_python
from tests.loops import loops

pytestmark = pytest.mark.xla


@pytest.fixture()
def device():
    from neurondev import xla

    torch._dynamo.reset()  # each test compiles afresh (the code objects are shared across tests); watch never resets
    yield xla.device()
    torch._dynamo.reset()


def compiled_step(device, backend="openxla"):
    torch.manual_seed(0)
    model = loops.Regressor().to(device)
    return torch.compile(loops.make_step(model), backend=backend)


def test_a_float_learning_rate_recompiles_every_step_and_is_named_with_its_line(device):
    compiled = compiled_step(device)
    with neurondev.watch() as w:
        loops.train(compiled, device, batches=(8, 8, 8))
    table = w.compiles
    assert list(table["kind"]) == ["first", "recompile", "recompile"] and list(table["index"]) == [0, 1, 2]
    assert list(table["value"][1:]) == ["lr", "lr"] and list(table["before"][1:]) == ["0.1", "0.09"]
    assert list(table["after"][1:]) == ["0.09", "0.081"]
    assert set(table["read_at"][1:]) == {f"loops.py:{line_of(loops.make_step, 'return loss * lr')}"}
    assert set(table["function"]) == {"make_step.<locals>.step"}
    (advice,) = w.advice
    assert (advice.cause, advice.function, advice.value) == ("python number", "make_step.<locals>.step", "lr") and advice.line == line_of(
        loops.make_step, "return loss * lr"
    )
    # by the rule: step 1's first compile is warm-up; the recompiles of steps 2 and 3 run to the end
    assert w.steady_state == "never" and "No steady state: dynamo keeps compiling from step 2 to the end (step 3)" in w.summary()
    assert list(w.steps["dynamo_compiles"]) == [1, 1, 1] and list(w.compiles["step"]) == [1, 2, 3]


def test_a_short_last_batch_compiles_once_more_and_the_advice_names_the_buckets(device):
    compiled = compiled_step(device)
    with neurondev.watch() as w:
        loops.train(compiled, device, batches=(8, 8, 8, 5), decay=1.0)
    last = w.compiles_read[-1]
    assert [c.kind for c in w.compiles_read] == ["first", "recompile"]
    assert (last.cause.kind, last.cause.value, last.cause.before, last.cause.after) == ("changing size", "x", "8", "5")
    (advice,) = w.advice
    assert (advice.cause, advice.value, advice.sizes, advice.buckets) == ("changing size", "x", (5, 8), (8,))


def test_a_watched_function_has_a_row_per_call_and_a_steady_state(device):
    compiled = compiled_step(device)
    watched = neurondev.watch(compiled)
    loops.train(watched, device, batches=(8, 8, 8, 8), decay=1.0)
    calls = watched.calls
    assert list(calls["call"]) == [1, 2, 3, 4] and list(calls["compiled"]) == [1, 0, 0, 0]
    assert list(calls["graphs"]) == [1, 0, 0, 0] and list(calls["xla_compiles"][1:]) == [0, 0, 0]
    assert watched.steady_state == 1 and "Steady state after call 1" in watched.summary()
    assert json.loads(watched.to_json())["calls"][0]["compiled"] == 1


def test_work_launched_before_a_call_is_counted_before_it_not_in_it(device):
    import torch_xla

    watched = neurondev.watch(lambda t: t)  # the call itself runs nothing on the device
    for _ in range(3):
        y = torch.randn(256, 256, device=device) @ torch.randn(256, 256, device=device)
        torch_xla.sync()  # launched, not waited for: it finishes on torch_xla's own threads
        watched(y)
    assert list(watched.calls["executions"]) == [0, 0, 0] and list(watched.calls["transfers_to_host"]) == [0, 0, 0]


def test_watching_changes_neither_the_outputs_nor_the_compiles_nor_logging(device):
    handlers = {name: list(logging.getLogger(name).handlers) for name in ("torch._dynamo", "torch")}
    levels = {name: logging.getLogger(name).level for name in handlers}
    from neurondev._compat.dynamo import graphs_made

    start = graphs_made()
    bare = loops.train(compiled_step(device), device)
    bare_graphs = graphs_made() - start
    torch._dynamo.reset()
    start = graphs_made()
    with neurondev.watch() as w:
        watched = loops.train(compiled_step(device), device)
    assert watched == bare and len(w.compiles_read) == 4
    assert graphs_made() - start == bare_graphs == 4  # the same four graphs, and only those
    assert {name: list(logging.getLogger(name).handlers) for name in handlers} == handlers
    assert {name: logging.getLogger(name).level for name in handlers} == levels


def test_the_neurondev_backend_counts_as_openxla_does(device):
    counts = {}
    for backend in ("openxla", "neurondev"):
        torch._dynamo.reset()
        with neurondev.watch() as w:
            loops.train(compiled_step(device, backend), device)
        counts[backend] = [(c.kind, c.cause.kind, c.event.graphs) for c in w.compiles_read]
    assert counts["openxla"] == counts["neurondev"]


def test_a_loop_that_raises_keeps_its_record_and_the_error_goes_on(device):
    compiled = compiled_step(device)
    with pytest.raises(ZeroDivisionError), neurondev.watch() as w:
        loops.train(compiled, device, batches=(8,))
        raise ZeroDivisionError("the loop's own error")
    assert w.state == "done" and len(w.compiles_read) == 1


def test_the_recompile_limit_is_named_and_the_function_runs_uncompiled_from_there(device):
    compiled = compiled_step(device)
    with torch._dynamo.config.patch(recompile_limit=2), neurondev.watch() as w:
        loops.train(compiled, device, batches=(8, 8, 8, 8))
    kinds = [c.kind for c in w.compiles_read]
    assert kinds == ["first", "recompile", "recompile limit reached"]
    assert w.compiles_read[-1].event.limit == 2 and w.steady_state == "never"
    assert [a.function for a in w.advice if a.cause == "recompile limit"] == ["make_step.<locals>.step"]
    assert "then dynamo's recompile limit (2): it runs uncompiled from there" in w.summary()
    # the fourth call runs uncompiled: neither a compile nor a guard check sees it, torch.compile's wrapper does
    assert len(w.steps) == 4 and list(w.steps["dynamo_compiles"]) == [1, 1, 1, 0]
    assert (
        "No steady state: dynamo compiled until its recompile limit at step 3, then the function ran uncompiled for the 1 step(s) after it, "
        "XLA compiling programs in " in w.summary()
    )


# The decode loop (a growing cache compiling every step, a static cache steady for dynamo but not for XLA) is
# notebook 07's: tests/test_notebooks.py checks its causes, advice and per-call counts on that run, rather than
# running the same tiny Llama's generate twice per test run.


def test_the_card_draws_the_calls_and_saves_a_page(device, tmp_path):
    compiled = compiled_step(device)
    watched = neurondev.watch(compiled)
    loops.train(watched, device, batches=(8,) * 6, decay=1.0)
    card = watched._repr_html_()
    assert _chart(card).count("<rect") == 3 * 6 and "steady after call 1" in card and "<script" not in card
    page = watched.save_html(tmp_path / "watch.html").read_text()
    assert "neurondev watch" in page and "<svg" in page


def test_a_long_loop_is_binned_on_the_card(device):
    compiled = compiled_step(device)
    watched = neurondev.watch(compiled)
    loops.train(watched, device, batches=(8,) * 130, decay=1.0)
    assert _chart(watched._repr_html_()).count("<rect") == 3 * 44  # 130 calls in bins of 3


SCRIPT = """
import sys
import torch, torch_xla
sys.path.insert(0, {root!r})
from tests.loops import loops
device = torch_xla.device()
torch.manual_seed(0)
compiled = torch.compile(loops.make_step(loops.Regressor().to(device)), backend="openxla")
print("losses", len(loops.train(compiled, device, batches=[8] * int(sys.argv[1]), decay=float(sys.argv[2]))))
{tail}
"""


def script(tmp_path, tail=""):
    from pathlib import Path

    path = tmp_path / "train.py"
    path.write_text(SCRIPT.format(root=str(Path(__file__).resolve().parents[2]), tail=tail))
    return path


def test_the_command_runs_a_script_with_its_own_arguments_and_exits_by_the_steady_state(device, tmp_path, capsys):
    path = script(tmp_path)
    assert cli.main(["watch", "--json", str(tmp_path / "w.json"), str(path), "3", "0.9"]) == 1  # the rate decays: never steady
    out = capsys.readouterr().out
    assert "losses 3" in out and "No steady state" in out
    assert json.loads((tmp_path / "w.json").read_text())["steady_state"] == "never"
    torch._dynamo.reset()
    assert cli.main(["watch", "--html", str(tmp_path / "w.html"), str(path), "3", "1.0"]) == 0  # a constant rate: steady
    assert "<svg" in (tmp_path / "w.html").read_text()


def test_a_script_that_raises_still_writes_its_report_and_exits_2(device, tmp_path, capsys):
    path = script(tmp_path, tail="raise RuntimeError('the script broke')")
    assert cli.main(["watch", "--json", str(tmp_path / "w.json"), str(path), "2", "1.0"]) == 2
    captured = capsys.readouterr()
    assert "RuntimeError: the script broke" in captured.err and "losses 2" in captured.out
    start = captured.err.index("Traceback")  # as `python train.py` shows it: the script's frames only
    traceback = captured.err[start : captured.err.index("RuntimeError: the script broke", start)]
    assert traceback.splitlines()[1].startswith(f'  File "{path.resolve()}"') and "runpy" not in traceback and "neurondev" not in traceback
    assert "The watched code raised RuntimeError at train.py:" in captured.out
    report = json.loads((tmp_path / "w.json").read_text())
    assert report["compiles"] and report["raised"]["exception"] == "RuntimeError"


def test_a_scripts_own_exit_code_is_kept_and_one_call_is_no_verdict(device, tmp_path, capsys):
    assert cli.main(["watch", str(script(tmp_path, tail="sys.exit(3)")), "2", "1.0"]) == 3
    torch._dynamo.reset()
    assert cli.main(["watch", str(script(tmp_path)), "1", "1.0"]) == 0
    assert "One step cannot show a steady state" in capsys.readouterr().out


ACCUMULATE = """
import sys
import torch_xla
sys.path.insert(0, {root!r})
from tests.loops import loops
loops.accumulate(torch_xla.device())
"""


def test_the_command_names_what_keeps_xla_compiling_checks_the_sync_and_exits_by_it(device, tmp_path, capsys):
    import os
    import subprocess
    import sys
    from pathlib import Path

    path = tmp_path / "accumulate.py"
    path.write_text(ACCUMULATE.format(root=str(Path(__file__).resolve().parents[2])))
    command = [sys.executable, "-m", "neurondev", "watch", "--json", str(tmp_path / "w.json"), str(path)]
    temporary = tmp_path / "temporary"
    temporary.mkdir()
    environ = {**os.environ, "TMPDIR": str(temporary)}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=environ)  # a fresh process: torch_xla's analysis on
    assert done.returncode == 1, done.stderr[-2000:]
    assert not list(temporary.glob("neurondev-*"))  # the analysis files of both runs and the check's report went with their processes
    report = json.loads((tmp_path / "w.json").read_text())
    (advice,) = report["advice"]
    assert advice["cause"] == "lazy state growing" and len(advice["inputs"]) >= 2 and advice["verified"] is True
    check = advice["check"]
    assert check["kind"] == "verified" and check["fix"] == "sync each step" and check["steady"] < check["steps"]
    triggers = {step["xla_triggers"] for step in report["steps"][4:]}  # torch_xla's own analysis names the line
    assert any("at loops.py:" in (trigger or "") for trigger in triggers)
    torch._dynamo.reset()
    assert cli.main(["watch", "--sync-each-step", str(path)]) == 0  # the flag itself, in this process: steady


def test_watch_works_without_torch_xla_and_says_why_the_xla_figures_are_empty():
    result = run_python(
        HIDE_TORCH_XLA
        + """
import torch, neurondev
def step(x, lr):
    return (x * lr).sum()
compiled = torch.compile(step, backend="eager", dynamic=False)
with neurondev.watch() as w:
    for i in range(3):
        compiled(torch.randn(4), 0.5 * i)
print("kinds:", [c.kind for c in w.compiles_read])
print("xla:", list(w.compiles["xla_compiles"]))
print("gap:", w.xla_gap.kind)
with neurondev.watch() as steady:
    for i in range(3):
        compiled(torch.randn(4), 0.25)  # a rate not compiled above: compiled at step 1, then steady
print("steady:", steady.summary())
"""
    )
    assert result.returncode == 0, result.stderr[-2000:]
    # no XLA figures: the verdict speaks of dynamo alone
    assert "Steady state after step 1: nothing compiled after it, by dynamo (no XLA figures in this loop)." in result.stdout
    # static shapes: each new rate is a recompile (dynamic ones would cost torch a C++ guard build, 6 s here, for nothing tested)
    assert "kinds: ['first', 'recompile', 'recompile']" in result.stdout
    assert "xla: [None, None, None]" in result.stdout and "gap: torch_xla not loaded" in result.stdout


def test_compiles_are_read_right_after_dynamo_kept_its_latest_64_records():
    """dynamo keeps the records of its latest 64 compiles: a watch reads its own by identity, not by count."""
    for i in range(70):
        torch.compile(lambda x, i=i: x + i, backend="eager")(torch.randn(2))
    step = torch.compile(lambda x, lr: x * lr, backend="eager")
    with neurondev.watch() as w:
        step(torch.randn(2), 0.5)
        step(torch.randn(3, 3), 0.5)
    assert [c.kind for c in w.compiles_read] == ["first", "recompile"] and w.compiles_read[1].event.index == 1


def test_each_steps_xla_compiles_equal_what_the_loop_itself_read_and_a_sync_per_step_makes_it_steady(device):
    truth: list[int] = []
    with neurondev.watch() as w:
        loops.accumulate(device, counts=truth)
    assert list(w.steps["xla_compiles"]) == truth  # step = a call of the compiled function, read by the loop itself too
    assert w.steady_state == "never" and w.record.steady.side == "XLA" and sum(truth[-4:]) > 0
    (advice,) = w.advice
    # torch_xla's analysis is on in this process when the watch command ran in it before its first compile
    # (the command test does): the advice then names the growing lazy graph, else it counts the programs
    cause = "xla programs" if w.record.analysis_gap else "lazy state growing"
    assert advice.cause == cause and advice.recurring is not None and advice.check is None and not advice.verified
    torch._dynamo.reset()
    with neurondev.watch(sync_each_step=True) as fixed:
        loops.accumulate(device)
    assert fixed.reached_steady_state and fixed.steady_state < len(fixed.steps)


def test_a_train_and_eval_flag_is_two_expected_graphs_and_steady_after_the_second(device):
    torch.manual_seed(0)
    model = loops.Dropper().to(device)
    compiled = torch.compile(model, backend="openxla")
    with neurondev.watch() as w:
        loops.train_and_eval(compiled, model, device)
    assert w.steady_state == 2 and len(w.steps) == 6 and set(w.compiles["function"]) == {"Dropper.forward"}
    flag = w.compiles_read[1].cause
    assert (flag.kind, flag.value, flag.before, flag.after) == ("flag", "self.drop.training", "True", "False")
    assert flag.line == line_of(loops.Dropper.forward, "self.drop(self.lin(x))")
    (advice,) = w.advice
    assert (advice.cause, advice.value, advice.function) == ("flag", "self.drop.training", "Dropper.forward")


def test_a_lazy_loop_without_torch_compile_is_cut_at_its_syncs(device):
    import torch_xla
    import torch_xla.debug.metrics as metrics

    def compiles():  # torch_xla's own count of compiles (no metric before the process's first)
        return (metrics.metric_data("CompileTime") or [0])[0]

    truth = []
    with neurondev.watch() as w:
        weights = torch.ones(4, device=device)
        for size in (8, 8, 16, 16):
            before = compiles()
            weights = weights + torch.ones(size, 4, device=device).sum(0)
            torch_xla.sync()
            truth.append(compiles() - before)
    assert w.record.step_kind == "sync" and list(w.steps["xla_compiles"]) == truth
    assert truth[-1] == 0 and w.steady_state == 3 and "Steady state after step 3" in w.summary()


def test_a_block_that_raised_says_so_with_the_line_and_the_compiles_so_far(device):
    compiled = compiled_step(device)
    with pytest.raises(ZeroDivisionError), neurondev.watch() as w:
        loops.train(compiled, device, batches=(8,))
        1 / 0  # noqa: B018
    raised = w.record.raised
    assert (raised.exception, raised.compiles) == ("ZeroDivisionError", 1) and raised.line == line_of(
        test_a_block_that_raised_says_so_with_the_line_and_the_compiles_so_far, "1 / 0"
    )
    assert "The watched code raised ZeroDivisionError at test_watch.py:" in w.summary() and "after 1 compile(s)" in w.summary()


def test_a_block_record_is_frozen_when_it_exits(device):
    compiled = compiled_step(device)
    with neurondev.watch() as w:
        loops.train(compiled, device, batches=(8, 8), decay=1.0)
    before = w.record
    loops.train(compiled, device, batches=(8, 8, 5), decay=1.0)  # after the block: a recompile nobody watches
    assert w.record is before and w.record == before and len(w.compiles_read) == 1


def _slow(x, weight):
    for _ in range(12):
        x = (x @ weight) / 256  # ones stay ones: a program that takes a while, which torch_xla runs asynchronously
    return x


def test_each_program_is_counted_in_the_step_that_launched_it_while_it_still_runs(device):
    import torch_xla

    weight = torch.ones(256, 256, device=device)
    step = torch.compile(_slow, backend="openxla")
    with neurondev.watch() as calls:
        x = torch.ones(256, 256, device=device)
        for _ in range(4):
            x = step(x, weight)
    assert calls.record.step_kind == "compiled call" and list(calls.steps["executions"]) == [2, 1, 1, 1]  # the input's, then one a call
    with neurondev.watch() as w:
        x = torch.ones(256, 256, device=device)
        for _ in range(3):
            x = _slow(x, x)
            torch_xla.sync()
    assert w.record.step_kind == "sync" and list(w.steps["executions"]) == [1, 1, 1]
    assert list(w.steps["xla_compiles"]) == [1, 1, 0] and w.steady_state == 2 and torch.equal(x.cpu(), torch.ones(256, 256))


def test_a_watch_that_cannot_turn_the_analysis_on_says_so_and_makes_no_folder(device, tmp_path, monkeypatch):
    """After this process compiled on XLA, torch_xla has read its analysis level: the watch says why it is off,
    and leaves nothing in the temporary directory (it made an empty folder there before)."""
    import tempfile

    from neurondev.xla import analysis

    monkeypatch.delenv(analysis.LEVEL, raising=False)
    monkeypatch.delenv(analysis.FILE, raising=False)
    (torch.ones(2, device=device) * 3).sum().item()  # an XLA program compiled in this process
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with neurondev.watch(xla_analysis=True) as w:
        (torch.ones(2, device=device) * 5).sum().item()
    assert w.record.analysis_gap.kind == "analysis off" and not list(tmp_path.glob("neurondev-*"))


def test_a_new_program_every_k_steps_is_never_steady_whatever_step_the_loop_ends_at(device):
    import torch_xla.debug.metrics as metrics

    for steps, width in ((14, 4), (17, 5)):  # ends two steps after a new program, and one (three short of the next)
        before = (metrics.metric_data("CompileTime") or (0,))[0]
        with neurondev.watch() as w:
            loops.growing_history(device, steps=steps, every=4, width=width)  # XLA caches programs: a width of its own
        assert sum(w.steps["xla_compiles"]) == metrics.metric_data("CompileTime")[0] - before  # torch_xla's own count
        steady = w.record.steady
        assert (w.steady_state, steady.side, steady.period, steady.since) == ("never", "XLA", 4, 4)
        assert list(w.steps["xla_compiles"])[3::4] == [1] * (steps // 4) and "a new program every 4 steps" in w.summary()
        assert (w.advice[0].recurring.period, w.advice[0].recurring.since) == (4, 4)


def test_one_compiled_validation_call_is_no_step_the_loop_is_cut_at_its_optimizer_steps(device):
    with neurondev.watch() as w:
        loops.validate_then_train(device, steps=5)
    assert w.record.step_kind == "optimizer step" and len(w.steps) >= 5  # before: the validation call made it one step
    assert w.steady_state == "never" and w.record.steady.side == "XLA" and all(n >= 1 for n in w.steps["xla_compiles"][:5])
    assert w.advice[0].cause in ("xla programs", "lazy state growing") and w.advice[0].recurring is not None
    torch._dynamo.reset()
    with neurondev.watch(sync_each_step=True) as fixed:  # the advice applied at each optimizer step
        loops.validate_then_train(device, steps=5)
    assert fixed.reached_steady_state and fixed.steady_state < len(fixed.steps)


OWN_SYNCS = """
import torch, torch_xla  # the script imports torch_xla itself, after the watch started
weights = torch.ones(4, device=torch_xla.device())
for _ in range(4):
    weights = weights * 0.5 + 1
    torch_xla.sync()
"""


def test_the_command_sees_the_syncs_of_a_script_that_imports_torch_xla_itself(tmp_path):
    """The script imports torch_xla after the watch began: its own syncs cut the steps (before: one step). A loop
    with one validation call, cut at its optimizer steps and its sync advice checked, is the in-process test above
    and the command's check, test_the_command_names_what_keeps_xla_compiling_checks_the_sync_and_exits_by_it."""
    import subprocess
    import sys

    (tmp_path / "own_syncs.py").write_text(OWN_SYNCS)
    command = [sys.executable, "-m", "neurondev", "watch", "--json", str(tmp_path / "w.json"), str(tmp_path / "own_syncs.py")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    report = json.loads((tmp_path / "w.json").read_text())
    assert done.returncode == 0 and report["step_kind"] == "sync" and len(report["steps"]) == 4, done.stderr[-2000:]


def _chart(card: str) -> str:
    """The card's chart of counts per step (its SVG alone: the card also draws the seconds per step)."""
    start = card.index('<svg class="nd-watch-chart"')
    return card[start : card.index("</svg>", start)]
