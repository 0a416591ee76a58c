"""What each finding of a watched loop cost, in seconds the runtime's own clocks gave, and the loop as a trace-event
file a real consumer reads back: the seconds per line add up to torch_xla's and dynamo's own totals."""

from __future__ import annotations

import json

import pytest
import torch

import neurondev
from neurondev.loops.costs import COST_COLUMNS

pytestmark = pytest.mark.xla


def _xla_totals() -> dict[str, float]:
    import torch_xla.debug.metrics as metrics

    return {
        name: float((metrics.metric_data(name) or (0, 0.0))[1]) / 1e9 for name in ("CompileTime", "ExecuteTime", "TransferFromDeviceTime")
    }


def _dynamo_seconds() -> list[float]:
    """dynamo's own clock of each whole-frame compile in this process (``compile_times``' record)."""
    return list(torch._dynamo.utils.compilation_time_metrics.get("_compile.compile_inner", []))


def _accumulate(device, steps: int = 8) -> None:
    """Gradient accumulation with a host read per step, in shapes of this module's own (7 by 13): torch_xla compiles
    its programs here, not finding them in the cache other tests' loops filled."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(13, 7), torch.nn.ReLU(), torch.nn.Linear(7, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step = torch.compile(lambda x: model(x).pow(2).mean(), backend="openxla")
    for i in range(steps):
        loss = step(torch.randn(5, 13, device=device))
        loss.backward()
        loss.item()
        if (i + 1) % 4 == 0:
            opt.step()
            opt.zero_grad()


@pytest.fixture(scope="module")
def watched():
    """A gradient-accumulation loop on XLA that reads its loss each step: it keeps compiling (torch_xla's compiles,
    executions and transfers), with the runtime's totals read around it."""
    from neurondev import xla

    torch._dynamo.reset()
    device = xla.device()
    xla_before, dynamo_before = _xla_totals(), len(_dynamo_seconds())
    with neurondev.watch() as w:
        _accumulate(device)
    xla_after, dynamo_after = _xla_totals(), _dynamo_seconds()
    measured = {name: xla_after[name] - xla_before[name] for name in xla_after} | {"dynamo": sum(dynamo_after[dynamo_before:])}
    yield w, measured
    torch._dynamo.reset()


def _sum(table, clock: str, cause: str) -> float:
    rows = table[(table["clock"] == clock) & table["cause"].str.startswith(cause)]
    return float(rows["seconds"].sum())


def test_the_seconds_per_line_add_up_to_torch_xlas_and_dynamos_own_totals(watched):
    w, measured = watched
    table = w.cost_table()
    assert list(table.columns) == list(COST_COLUMNS) and list(table["seconds"]) == sorted(table["seconds"], reverse=True)
    for cause, total in (("XLA compile", "CompileTime"), ("XLA execution", "ExecuteTime"), ("transfer to host", "TransferFromDeviceTime")):
        assert measured[total] > 0 and _sum(table, "torch_xla", cause) == pytest.approx(measured[total], rel=0.05)
    assert measured["dynamo"] > 0 and _sum(table, "dynamo", "dynamo") == pytest.approx(measured["dynamo"], rel=0.05)
    assert table["cause"].str.startswith("dynamo first").any() and table["where"].str.contains(r"test_costs\.py:\d+").any()


def test_the_summary_the_card_and_the_json_lead_with_the_costliest_line(watched):
    w, _ = watched
    top = w.cost_table().iloc[0]
    summary = w.summary()
    assert "Where the time went (the runtime's own clocks): " + f"{top['cause']} at {top['where']}" in summary
    card = w._repr_html_()
    assert card.index("Where the time went") < card.index("Dynamo's compiles") and 'class="nd-time-strip"' in card
    data = json.loads(w.to_json())
    assert data["costs"][0]["where"] == top["where"] and all(row["seconds"] is not None for row in data["compiles"])
    assert sum(step["execute_seconds"] for step in data["steps"]) > 0


def test_the_trace_has_each_step_and_each_timed_event_as_a_slice_on_the_runtimes_clock(watched, tmp_path):
    w, measured = watched
    events = json.loads(w.save_trace(tmp_path / "trace.json").read_text())["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    assert all({"name", "ts", "dur", "pid", "tid", "args"} <= set(e) and e["dur"] >= 0 for e in slices)
    steps = [e for e in slices if e["name"].startswith("step ")]
    assert len(steps) == len(w.steps) and all(a["ts"] + a["dur"] <= b["ts"] + 1 for a, b in zip(steps, steps[1:]))
    xla_compiles = sum(e["dur"] for e in slices if "XLA compile" in e["name"]) / 1e6
    assert xla_compiles == pytest.approx(measured["CompileTime"], rel=0.05)  # torch_xla kept every sample of so short a loop


def test_the_commands_trace_names_each_xla_program_by_rule_and_line_and_holistic_trace_analysis_reads_it_back(tmp_path):
    """The command turns torch_xla's analysis on (a fresh process): each XLA compile is named by its rule and line."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "accumulate.py"
    root = Path(__file__).resolve().parents[2]
    script.write_text(f"import sys\nsys.path.insert(0, {str(root)!r})\nimport torch_xla\nfrom tests.loops import loops\n"
                      "loops.accumulate(torch_xla.device(), steps=6, read=True)\n")  # fmt: skip
    traces = tmp_path / "traces"
    traces.mkdir()
    command = [sys.executable, "-m", "neurondev", "watch", "--no-verify", "--trace", str(traces / "rank-0.json"), str(script)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env={**os.environ, "PJRT_DEVICE": "CPU"})
    assert done.returncode == 1 and f"trace: {traces / 'rank-0.json'}" in done.stdout, done.stderr[-2000:]
    slices = [e for e in json.loads((traces / "rank-0.json").read_text())["traceEvents"] if e["ph"] == "X"]
    named = [e for e in slices if e["name"].startswith("ND410 XLA compile")]
    assert named and all(e["name"].endswith(f" at {e['args']['line']}") for e in named)
    assert any(e["args"]["line"].startswith("loops.py:") for e in named)
    from hta.trace_analysis import TraceAnalysis

    read = TraceAnalysis(trace_dir=str(traces))
    assert {e["name"] for e in slices} <= set(read.t.symbol_table.sym_table) and len(read.t.get_trace(0)) == len(slices)


def test_a_users_profiler_trace_holds_the_watched_block_and_each_compile(tmp_path):
    step = torch.compile(lambda x, n: x * n, backend="eager")
    with torch.profiler.profile() as profiler, neurondev.watch() as w:
        for n in range(3):
            step(torch.randn(4), n)
    profiler.export_chrome_trace(str(tmp_path / "profile.json"))
    names = [e["name"] for e in json.loads((tmp_path / "profile.json").read_text())["traceEvents"] if "neurondev" in e.get("name", "")]
    assert names.count("neurondev: watched block") == 1
    assert len([n for n in names if n.startswith("neurondev: dynamo compile of ")]) == len(w.compiles) >= 2
