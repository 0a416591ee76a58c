"""A torchrun job under ``neurondev watch`` ends as it ends without it: each fault injected (a rank raises, exits, is
killed, is stopped by torchrun, stops early, recompiles alone, compiles another graph, ...), the same job run plain and
watched, each under a hard timeout that fails the test (never the suite). Watched, rank 0 writes the job's JSON and card
with every rank that reported, how it ended, and the others named with why; the job's exit code is the plain job's, or 1
where the ranks diverge in what they compile.

DDP over gloo on torch 2.13 can deadlock or abort while a job ends, with or without neurondev (its backward leaves a
Python object in each gloo work's thread state: 3 of 20 plain runs of the clean case aborted here): those cases run with
the tested pair's torch 2.9 (``ddp_teardown``)."""

from __future__ import annotations

import contextlib
import html
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

FAULTS = Path(__file__).parent / "ranks" / "faults.py"
HARD_TIMEOUT = 120  # a job that has not ended by then hung


def run_job(
    procs: int, case: str, folder: Path, *, watched: bool, restarts: int = 0, trace: bool = False
) -> tuple[int, dict | None, str | None]:
    """The job's exit code, and when watched, rank 0's JSON and card (None when not written); ``trace``: rank 0 writes
    the job's trace too (``case``.trace.json)."""
    report, card = folder / f"{case}.json", folder / f"{case}.html"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={procs}", f"--max-restarts={restarts}"]
    command += ["-m", "neurondev", "watch", "--json", str(report), "--html", str(card)] if watched else []
    command += ["--trace", str(folder / f"{case}.trace.json")] if watched and trace else []
    command += [str(FAULTS), case]
    environ = {k: v for k, v in os.environ.items() if k != "PJRT_DEVICE"} | {"OMP_NUM_THREADS": "1"}
    job = subprocess.Popen(
        command, cwd=folder, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        output, _ = job.communicate(timeout=HARD_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        output, _ = job.communicate()
        pytest.fail(f"the {'watched' if watched else 'plain'} {procs}-rank job {case!r} hung ({HARD_TIMEOUT} s):\n{output[-4000:]}")
    if not watched:
        return job.returncode, None, None
    assert report.is_file() and card.is_file(), output[-4000:]
    return job.returncode, json.loads(report.read_text()), card.read_text()


def both(procs: int, case: str, folder: Path, *, plain: int | None = None) -> tuple[int, int, dict, str]:
    """The job run plain and watched: the plain job's exit code, the watched one's, rank 0's JSON and card. ``plain``:
    the plain job's code where a test of this module measures that case plainly already (its 2-rank run)."""
    measured = run_job(procs, case, folder, watched=False)[0] if plain is None else plain
    watched, job, card = run_job(procs, case, folder, watched=True)
    return measured, watched, job, card


def ended(job: dict) -> dict[int, str]:
    return {data["rank"]: data["ended"]["how"] for data in job["ranks"]}


def kinds(job: dict) -> list[tuple[str, list[int]]]:
    return [(d["kind"], d["ranks"]) for d in job["divergence"]]


@pytest.mark.ddp_teardown
@pytest.mark.parametrize("case", ["clean", "one-destroys", "no-group", "compiled-ddp"])
def test_a_job_that_ends_well_ends_the_same_and_every_rank_reports(tmp_path, case):
    plain, watched, job, card = both(
        2, case, tmp_path, plain=None if case == "clean" else 0
    )  # plainly 0 (measured as the matrix was built)
    assert (plain, watched) == (0, 0)
    assert ended(job) == {0: "finished", 1: "finished"} and job["missing"] == [] and job["divergence"] == []
    assert job["diverges_in_compiles"] is False and "The ranks do not diverge: each ran the same steps" in card
    for data in job["ranks"]:  # neurondev's own frames are never among the compiles (torch.compile over DDP met them)
        assert not [row for row in data["compiles"] if "/neurondev/" in row["file"] and "/gallery/" not in row["file"]], data["compiles"]


@pytest.mark.ddp_teardown
@pytest.mark.parametrize("procs", [3])  # three: the ranks on both sides of the one that raises report (two show one side)
def test_a_rank_that_raises_mid_loop_fails_the_job_as_without_and_every_rank_reports(tmp_path, procs):
    plain, watched, job, card = both(procs, "raises", tmp_path)
    assert plain == 1 and watched == 1
    assert job["missing"] == [] and [data["rank"] for data in job["ranks"]] == list(range(procs))
    assert ended(job)[1] == "raised" and job["ranks"][1]["raised"]["exception"] == "RuntimeError"
    assert ("steps", [1]) in kinds(job)  # it ran 2 steps, the others more
    assert "(raised RuntimeError, exit 2)" in card


@pytest.mark.ddp_teardown
def test_ranks_blocked_in_cpp_when_one_raises_are_stopped_by_torchrun_and_still_report(tmp_path):
    """The others wait in C++ for what rank 1 never sends: torchrun SIGTERMs them; each posts what it saw and rank 0
    writes the job's report before it ends by that signal."""
    procs = 2
    plain, watched, job, card = both(procs, "blocked", tmp_path)
    assert plain == 1 and watched == 1
    assert ended(job) == {rank: "raised" if rank == 1 else "terminated" for rank in range(procs)} and job["missing"] == []
    assert job["ranks"][0]["ended"]["signal"] == "SIGTERM" and len(job["ranks"][0]["steps"]) == 2
    assert "stopped by torchrun: SIGTERM" in card


@pytest.mark.ddp_teardown
def test_a_rank_that_exits_with_a_code_is_named_with_it(tmp_path):
    plain, watched, job, card = both(2, "exits", tmp_path)
    assert plain == 1 and watched == 1
    assert job["ranks"][1]["ended"] == {
        "how": "exited",
        "code": 3,
    } and "(exited with code 3: sys.exit before the script's end)" in html.unescape(card)
    assert job["ranks"][0]["ended"] == {"how": "exited", "code": 0}  # sys.exit(0) mid-loop: not 'finished'


@pytest.mark.ddp_teardown
@pytest.mark.parametrize("procs", [3])  # three: the ranks on both sides of the killed one report (two cannot show it)
def test_a_killed_rank_is_named_missing_with_why_and_the_others_report(tmp_path, procs):
    plain, watched, job, card = both(procs, "killed", tmp_path)
    assert plain == 1 and watched == 1
    assert [(m["rank"], m["why"]) for m in job["missing"]] == [(1, "ended")] and isinstance(job["missing"][0]["pid"], int)
    assert sorted(ended(job)) == [rank for rank in range(procs) if rank != 1]
    assert "rank 1: no record (its process ended without one: killed by a signal, or os._exit" in card


@pytest.mark.ddp_teardown
@pytest.mark.parametrize("procs", [2])  # every rank's count: two show it as three would
def test_a_rank_that_stops_early_is_a_divergence_in_steps_with_every_ranks_count(tmp_path, procs):
    plain, watched, job, card = both(procs, "early", tmp_path)
    assert (plain, watched) == (0, 0) and job["diverges_in_compiles"] is False
    (steps,) = job["divergence"]
    assert (steps["kind"], steps["ranks"], steps["others"]) == ("steps", [1], [r for r in range(procs) if r != 1])
    assert [(c["rank"], c["count"]) for c in steps["causes"]] == [(r, 4 if r == 1 else 6) for r in range(procs)]
    assert "rank 1 ran fewer steps than" in card


@pytest.mark.ddp_teardown
def test_the_rank_whose_last_batch_is_short_recompiles_alone_under_ddp_and_the_job_fails_without_hanging(tmp_path):
    """DDP over a compiled model, Adam, the group destroyed at the end: this job hung in 5 of 5 runs under the watch."""
    plain, watched, job, card = both(2, "ragged", tmp_path)
    last = 1
    assert plain == 0 and watched == 1 and job["diverges_in_compiles"] is True
    (divergence,) = job["divergence"]
    assert (divergence["kind"], divergence["step"], divergence["ranks"]) == ("recompile", 6, [last])
    (cause,) = divergence["causes"]
    assert (cause["rule"], cause["before"], cause["after"]) == ("ND405", "6", "4")
    assert cause["file"] == str(FAULTS) and cause["line"] == _line("loss = trained(x)")  # the user's call, not linear.py
    assert f"rank {last} recompiled Linear.forward and" in card and card.count("<th>rank ") == 2  # a column per rank


@pytest.mark.ddp_teardown
def test_ranks_that_compile_different_graphs_at_the_same_step_diverge_by_graph_hash(tmp_path):
    plain, watched, job, card = both(2, "branch", tmp_path)
    assert plain == 0 and watched == 1 and job["diverges_in_compiles"] is True
    (divergence,) = job["divergence"]
    assert (divergence["kind"], divergence["step"], divergence["ranks"], divergence["others"]) == ("other graph", 1, [1], [0])
    first, second = ([row["graph_hashes"] for row in data["compiles"]] for data in job["ranks"])
    assert first != second and [c["graphs"] for c in divergence["causes"]] == [first[0], second[0]]
    assert "rank 1 compiled another graph of" in card


def test_a_rank_that_syncs_where_the_others_do_not_is_named_at_each_step(tmp_path):
    """Rank 0 reads the loss with .item() on the host device each step (no process group): each step's sync is a
    divergence naming rank 0 with its line, on every torch (the dispatcher's observer counts around compiled code)."""
    plain, watched, job, _ = both(2, "item", tmp_path, plain=0)  # no process group, no fault: plainly 0
    assert (plain, watched) == (0, 0)
    assert all(data["native_gap"] is None for data in job["ranks"])
    assert kinds(job) == [("sync", [0])] * 6
    assert [[(c["rank"], c["count"]) for c in d["causes"]] for d in job["divergence"]] == [[(0, 1)]] * 6
    assert all(f"faults.py:{_line('loss.item()')}" in d["causes"][0]["where"] for d in job["divergence"])


def _line(text: str) -> int:
    return next(number for number, line in enumerate(FAULTS.read_text().splitlines(), 1) if text in line)


@pytest.mark.todays_torch  # no process group: both torches alike, run once (make test's second run)
def test_a_job_torchrun_restarts_recovers_as_without_and_the_json_keeps_each_attempt_numbered(tmp_path):
    """rank 1 fails in the first attempt only; torchrun (--max-restarts 1) starts the job again, which finishes. The
    second attempt's rank 0 writes the job's JSON with the first attempt's report (written to the same file) inside."""
    plain = run_job(2, "restart", tmp_path, watched=False, restarts=1)[0]
    code, job, card = run_job(2, "restart", tmp_path, watched=True, restarts=1, trace=True)
    assert plain == code == 0
    assert job["attempt"] == 1 and ended(job) == {0: "finished", 1: "finished"}
    (first,) = job["earlier_attempts"]
    assert first["attempt"] == 0 and first["run_id"] == job["run_id"] and ended(first)[1] == "raised"
    assert "(attempt 1, after 1 restart(s) by torchrun; attempt 0: " in card and "rank 1 (raised RuntimeError, exit 2)" in card
    events = json.loads((tmp_path / "restart.trace.json").read_text())["traceEvents"]  # the job's trace: a process per rank
    steps = {rank: [e for e in events if e["pid"] == rank and e["ph"] == "X" and e["name"].startswith("step ")] for rank in (0, 1)}
    assert [len(steps[rank]) for rank in (0, 1)] == [len(data["steps"]) for data in job["ranks"]] and all(steps.values())
    assert "trace" not in job["ranks"][0]  # the events go to the trace file, not into the job's JSON


@pytest.mark.todays_torch  # no process group: both torches alike, run once (make test's second run)
def test_ranks_held_in_native_code_whose_torchrun_agent_is_gone_end_within_the_deadline(tmp_path):
    """Each rank blocks holding Python's lock (no Python handler can run, neurondev's neither); torchrun's agent is
    killed, leaving them orphans that nobody stops (a plain rank held so waits for ever). The process torchrun started
    gets SIGTERM when its agent dies, passes it on, then kills the script that did not stop."""
    import time

    from neurondev.cli.watch_supervisor import _Waiting

    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    command += ["-m", "neurondev", "watch", "--json", "stuck.json", str(FAULTS), "stuck"]
    environ = {k: v for k, v in os.environ.items() if k != "PJRT_DEVICE"} | {"OMP_NUM_THREADS": "1"}
    agent = subprocess.Popen(
        command, cwd=tmp_path, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    pids = [tmp_path / f"pids.{rank}" for rank in range(2)]
    try:
        deadline = time.monotonic() + HARD_TIMEOUT
        while not all(path.is_file() and path.read_text() for path in pids):
            assert time.monotonic() < deadline and agent.poll() is None, "the ranks never reached their step 3"
            time.sleep(0.2)
        scripts = [int(path.read_text().split()[0]) for path in pids]
        started = _children(agent.pid)  # the processes torchrun started, one per rank
        assert len(started) == 2
        agent.kill()  # the agent and its store gone: the ranks are orphans, nobody sends them SIGTERM
        agent.wait()
        stop = time.monotonic()
        while any(_alive(pid) for pid in (*scripts, *started)):
            assert time.monotonic() - stop < _Waiting.DEADLINE + 15, "a watched rank outlived its SIGTERM"
            time.sleep(0.2)
    finally:
        for pid in (*locals().get("scripts", ()), *locals().get("started", ())):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(agent.pid, signal.SIGKILL)


def _children(pid: int) -> list[int]:
    tasks = Path(f"/proc/{pid}/task").iterdir()
    return [int(child) for task in tasks for child in (task / "children").read_text().split()]


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped by its new parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
