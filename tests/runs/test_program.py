"""Your program on XLA: the whole function under torch.compile, as written and rewritten, and the verdicts it gives."""

import json

import numpy as np
import pytest
import torch
import torch.utils.checkpoint

import neurondev
from neurondev.cli import usage, verb_explain
from neurondev.render.sentences import describe
from neurondev.report.skips import Skip
from tests.helpers import line_of

pytestmark = pytest.mark.xla

SCALE = torch.ones(8) * 2  # a host tensor in a global: it stays on the CPU when the inputs go to XLA


def reads_a_global(x):
    y = torch.relu(x)
    return y * SCALE


def numpy_fails_in_the_bridge(x):
    out = torch.zeros(8, device=x.device)
    out.copy_(x)
    n = out.numpy().sum()
    return out * float(n)


def numpy_fails_between_graphs(x):
    h = torch.relu(x) + 1
    k = h.numpy().max()
    return h / float(k)


def numpy_that_runs(x):
    y = torch.relu(x)
    m = y.numpy().mean()
    return y - torch.as_tensor(m)


def branches_on_the_device(x):
    if x.device.type == "cpu":
        return x * 2
    return x * 3


class Floor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        lo = torch.zeros(x.shape, device=x.device)
        return torch.maximum(x, lo)

    @staticmethod
    def backward(ctx, grad):
        return grad


def pins_inside_a_function(x):
    return Floor.apply(x) * 2


def pins_inside_cond(x):
    def positive(x):
        return x + torch.ones(x.shape, device=x.device)

    def negative(x):
        return x - torch.ones(x.shape, device=x.device)

    return torch.cond(x.sum() > 0, positive, negative, (x,))


def checkpointed_block(x):
    return torch.relu(x) + torch.ones(8, device=x.device)


def pins_inside_checkpoint(x):
    return torch.utils.checkpoint.checkpoint(checkpointed_block, x, use_reentrant=False)


def one_graph_fails_frozen(x):
    weight = x * 2
    print("", end="")  # a dynamo break: a second graph
    positions = torch.arange(4, device=x.device)  # frozen to cpu: an embedding on XLA refuses host indices
    return torch.nn.functional.embedding(positions, weight)


def test_a_global_host_tensor_fails_as_a_program_at_compile_time_with_its_line_and_what_to_write():
    ex = neurondev.explain(reads_a_global, torch.randn(8), quiet=True)
    written, rewritten = ex.program.as_written, ex.program.rewritten
    for run in (written, rewritten):
        assert not run.ok and run.failure.stage == "compile" and run.failure.kind == "mixed devices at compile time"
        assert run.failure.line == line_of(reads_a_global, "y * SCALE") and "two different devices" in run.failure.message
        assert run.matches_cpu is None and run.graphs == 0
    assert (written.backend, rewritten.backend) == ("openxla", "neurondev")
    assert ex.graphs_match_cpu is True and ex.xla_matches_cpu is None  # the emulation agrees; the program does not run
    summary = ex.summary()
    assert summary.startswith("Your program on XLA (torch.compile): as written (openxla) fails at compile time at test_program.py:")
    assert "SCALE (global, on cpu" in summary and "make it a buffer of the module" in summary
    with pytest.raises(neurondev.DevicePinsError, match="failure") as caught:
        neurondev.check(reads_a_global, torch.randn(8), program=True, allow=["SCALE"])
    (finding,) = caught.value.findings
    assert finding.kind == "program" and finding.line == line_of(reads_a_global, "y * SCALE")


def test_numpy_between_graphs_that_fails_on_xla_is_named_at_its_line_and_numpy_that_runs_is_not():
    bridge = neurondev.explain(numpy_fails_in_the_bridge, torch.randn(8), quiet=True).program.as_written
    assert bridge.failure.stage == "graph" and bridge.failure.kind == "host-only call between graphs"
    assert bridge.failure.line == line_of(numpy_fails_in_the_bridge, ".numpy()")
    between = neurondev.explain(numpy_fails_between_graphs, torch.randn(8), quiet=True).program.as_written
    assert between.failure.stage == "python" and between.failure.kind == "host-only call between graphs"
    assert between.failure.line == line_of(numpy_fails_between_graphs, "float(k)")
    runs = neurondev.explain(numpy_that_runs, torch.randn(8), quiet=True)
    assert runs.program.as_written.ok and runs.program.rewritten.ok and runs.xla_matches_cpu is True
    assert np.isfinite(runs.program.rewritten.outputs.cpu().numpy()).all()


def test_a_device_branch_is_named_by_default_and_the_program_verdict_says_xla_differs():
    ex = neurondev.explain(branches_on_the_device, torch.randn(8), quiet=True)
    assert ex.graphs_match_cpu is True  # the CPU graph, moved to XLA, computes x * 2 there too
    assert ex.xla_matches_cpu is False and ex.program.as_written.matches_cpu is False
    lines = {d.line for d in ex.device_specialised}
    assert lines == {line_of(branches_on_the_device, "x * 2"), line_of(branches_on_the_device, "x * 3")}
    assert ex.first_difference is None
    summary = ex.summary()
    assert "2 line(s) traced differently on XLA" in summary and "your program's values on XLA differ from CPU's" in summary
    assert "No node of the graphs differs when each runs on XLA: the difference is in device-specialised code" in summary
    assert verb_explain.explanation_exit(ex) == usage.EXIT_FINDINGS


def test_the_program_runs_twice_and_the_second_call_is_the_steady_state():
    fn, args, _ = neurondev.examples.get("seed").build()
    ex = neurondev.explain(fn, *args, quiet=True)
    for run in (ex.program.as_written, ex.program.rewritten):
        first, second = run.calls
        assert run.ok and run.matches_cpu is True and first.graphs == 1
        assert second.graphs == 0 and second.xla_compiles == 0 and not run.recompiled
        assert run.transfers_to_host == 0 and run.executions == second.executions
    data = json.loads(ex.to_json())["program"]
    assert data["rewritten"]["ok"] is True and len(data["as_written"]["calls"]) == 2
    assert "Your program on XLA" in ex._repr_html_() and "as written (openxla)" in ex._repr_html_()


def test_a_pin_inside_an_autograd_function_is_found_rewritten_checked_and_fixed():
    x = torch.randn(8, requires_grad=True)  # with grad, dynamo keeps the Function as autograd_function_apply
    ex = neurondev.explain(pins_inside_a_function, x, quiet=True)
    (pin,) = ex.pins
    assert pin.node == "fwd_body_0.lo" and pin.line == line_of(Floor.forward, "torch.zeros")
    assert [r.node for r in ex.rewrites] == ["fwd_body_0.lo"]
    assert ex.before[0].error is not None and ex.before[0].error.node == "autograd_function_apply"
    assert ex.after[0].error is None and ex.graphs_match_cpu is True
    (fix,) = ex.fixes
    assert fix.verified and fix.after.strip() == "lo = x.new_zeros(x.shape, dtype=torch.get_default_dtype())"
    with pytest.raises(neurondev.DevicePinsError, match="fwd_body_0.lo"):
        neurondev.check(pins_inside_a_function, x)


@pytest.mark.parametrize("fn, bodies", [(pins_inside_cond, {"cond_true_0", "cond_false_0"}), (pins_inside_checkpoint, {"wrap_body_0"})])
def test_pins_inside_cond_and_checkpoint_bodies_are_rewritten_and_the_graph_runs_on_xla(fn, bodies):
    ex = neurondev.explain(fn, torch.randn(8), quiet=True)
    assert {pin.node.split(".")[0] for pin in ex.pins} == bodies
    assert {r.node for r in ex.rewrites} == {pin.node for pin in ex.pins}
    assert ex.after[0].error is None and ex.graphs_match_cpu is True
    assert not {b.node for b in ex.after[0].graph_breaks} & {pin.node for pin in ex.pins}


def test_an_aggregate_over_a_graph_whose_frozen_run_failed_is_not_true():
    ex = neurondev.explain(one_graph_fails_frozen, torch.randn(8, 4), quiet=True)
    verdicts = [s.rewrite_verdict.matches for s in ex.sections]
    assert None in verdicts and True in verdicts
    assert ex.rewrite_preserves_values is None
    assert "(not compared in 1 of 2 graphs)" in ex.summary()


def test_compare_traces_reports_a_native_trace_that_fails_before_any_graph():
    comparison = neurondev.compare_traces(reads_a_global, torch.randn(8))
    assert comparison.native.graphs == () and comparison.only_in_cpu == (0,)
    assert "two different devices" in comparison.native_error
    assert comparison.native_failure.line == line_of(reads_a_global, "y * SCALE")
    line = line_of(reads_a_global, "y * SCALE")
    said = describe(comparison)  # the line once, the kind of failure, then the exception as Python prints it
    assert f"the native trace fails to run at test_program.py:{line}: mixed devices at compile time: TorchRuntimeError: " in said
    assert said.count(f"test_program.py:{line}") == 1 and "fails at compile time" not in said


def test_run_false_and_a_capture_skip_the_program_and_say_why():
    skipped = neurondev.explain(reads_a_global, torch.randn(8), run=False, quiet=True)
    assert skipped.program is None and skipped.program_skipped == Skip("run off")
    assert "Your program on XLA: not run (run=False" in skipped.summary()
    from_capture = neurondev.explain(neurondev.capture(reads_a_global, torch.randn(8)), quiet=True)
    assert from_capture.program is None and from_capture.program_skipped == Skip("from a capture")


STATE = torch.zeros(2)


def device_dependent_write(x):
    STATE.add_(1.0 if x.device.type == "cpu" else 2.0)  # the program writes differently on the device
    return x + 1


def test_explain_compares_what_a_program_writes_and_leaves_the_users_tensor_alone():
    before = STATE.clone()
    ex = neurondev.explain(device_dependent_write, torch.randn(4), quiet=True)
    run = ex.program.rewritten
    assert run.comparison.status == "equal" and run.state.status == "differ" and ex.xla_matches_cpu is False
    assert "DIFFERS from CPU in what it writes" in describe(run) and torch.equal(STATE, before)


def test_a_transformers_default_call_with_its_cache_agrees_when_the_logits_agree():
    from neurondev.testing import tiny_llama

    model, (ids,), _ = tiny_llama(1)
    ex = neurondev.explain(model, ids, quiet=True)  # the model's default call returns a DynamicCache
    assert ex.program.rewritten.comparison.status in ("equal", "within tolerance") and ex.xla_matches_cpu is True
    assert "code between the graphs" not in ex.summary()


class GrowingCache:
    """A cache the program grows by one row a call, in place (as a transformers DynamicCache passed in does)."""

    def __init__(self):
        self.keys = torch.arange(8, dtype=torch.float32).reshape(2, 4)


def appends_to_its_cache(x, cache):
    cache.keys = torch.cat([cache.keys, x[None]])
    return cache.keys.sum(0), cache


def test_a_cache_passed_in_and_grown_in_place_is_compared_as_the_first_call_returned_it():
    cache = GrowingCache()
    ex = neurondev.explain(appends_to_its_cache, torch.ones(4), cache, quiet=True)
    for run in (ex.program.as_written, ex.program.rewritten):  # the second call grows it to 4 rows: CPU's one call, 3
        assert len(run.calls) == 2 and run.comparison.status == "equal" and run.matches_cpu is True, describe(run)
    assert ex.xla_matches_cpu is True and "DIFFERS" not in ex.summary()
    assert cache.keys.shape == (2, 4)  # the user's cache: as it was


def test_a_function_the_user_compiled_already_is_run_as_its_original_under_the_measured_backend():
    """explain(torch.compile(fn)) ran the user's compiled wrapper inside its own torch.compile: the wrapper's backend
    (eager here) compiled it, out of the recorder's sight, and the program said '0 graph(s)' on XLA."""
    fn, args, _ = neurondev.examples.get("seed").build()
    compiled = torch.compile(fn, backend="eager")
    ex = neurondev.explain(compiled, *args, quiet=True)
    plain = neurondev.explain(fn, *args, quiet=True)
    assert [note.kind for note in ex.capture.notes] == ["already compiled"]
    for run, expected in ((ex.program.as_written, plain.program.as_written), (ex.program.rewritten, plain.program.rewritten)):
        assert run.ok and run.matches_cpu is True and [c.graphs for c in run.calls] == [c.graphs for c in expected.calls] == [1, 0]
        assert run.transfers_to_host == expected.transfers_to_host
    assert len(ex.traces.native.graphs) == len(plain.traces.native.graphs) >= 1  # the device's own trace of the original too
