"""neurondev watch: a script run as __main__ under watch(), its sync advice checked in a fresh process, its report
written, and under torchrun each rank's record sent to rank 0; the exit code by the loop's verdict or the script's own."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from neurondev.cli.usage import EXIT_ERROR, EXIT_FINDINGS, UsageError
from neurondev.cli.verb_explain import summary_and_files

__all__ = ["add_watch_command", "run_watch", "watch_files"]


def add_watch_command(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    looking = commands.add_parser(
        "watch",
        help="run a script under neurondev.watch(): every compile, why, and what to write instead",
        description="Runs SCRIPT.py as __main__ (options before it are the watch's; everything after it is the script's own "
        "sys.argv, as with python -m cProfile), with torch_xla's analysis of each XLA compile on. Exit 0 when compiling reached a "
        "steady state, a late recompile or one step, 1 when compiles (dynamo's or XLA's) go on, recur or reach dynamo's limit (the loops page's rule), 2 on usage errors or "
        "when the script raises (the report is still written) or runs its loop in worker processes it starts "
        "(torch.multiprocessing.spawn: not watched), or the script's own sys.exit code. Advice to sync each step is "
        "checked by running the script again with the sync applied, and XLA programs that keep coming are named at their lines "
        "by a short run with torch_xla's graph dump on (--no-verify skips both).",
    )
    looking.add_argument("--html", help="write the card here")
    looking.add_argument("--json", help="write the record as JSON here")
    looking.add_argument(
        "--trace", help="write the loop as a Chrome trace-event file here (Perfetto, chrome://tracing, Holistic Trace Analysis)"
    )
    looking.add_argument(
        "--no-verify", action="store_true", help="do not run the script again (to check a sync advice, to name what XLA compiles)"
    )
    looking.add_argument(
        "--sync-each-step", action="store_true", help="call torch_xla.sync() at the end of each step (the sync advice, applied)"
    )
    looking.add_argument("--stop-after-calls", type=int, default=None, help=argparse.SUPPRESS)  # the second runs' own
    looking.add_argument("--verify-timeout", type=float, default=1800, help="seconds the checking run may take (default: %(default)s)")
    looking.add_argument(
        "--ranks-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="under torchrun: how long rank 0 waits for a rank that is still running (default: as long as it runs; a rank "
        "that ended without a report is named at once)",
    )
    looking.add_argument("script", metavar="SCRIPT.py", help="the script to run")
    looking.add_argument("arguments", nargs=argparse.REMAINDER, metavar="ARGS", help="the script's own arguments")
    looking.set_defaults(run=run_watch)
    return looking


def run_watch(options: argparse.Namespace) -> int:
    """Run the script as __main__ under watch() with torch_xla's analysis on; check a sync advice by running it
    again with a sync per step; report. 0 steady (or one step), 1 compiles continue, 2 when it raised, the
    script's own code when it called sys.exit(code)."""
    script = Path(options.script)
    if not script.is_file():
        raise UsageError(f"no script {options.script}: give the path of a Python file, e.g. neurondev watch train.py --epochs 1")
    if options.stop_after_calls is not None and options.stop_after_calls < 1:
        raise UsageError(f"--stop-after-calls is a number of calls above 0, got {options.stop_after_calls}")
    if options.ranks_timeout is not None and not options.ranks_timeout > 0:
        raise UsageError(
            f"--ranks-timeout is a number of seconds above 0, got {options.ranks_timeout}; leave it out to wait while a rank runs"
        )
    from neurondev.cli.watch_supervisor import Journal, child_journal, supervised
    from neurondev.results.torchrun_env import job

    where = job()
    if getattr(options, "as_command", False):  # the command (not main() called in a process of the caller's)
        code = supervised(options, watch_files, rank=where is not None)
        if code is not None:
            return code
    from neurondev.results.watched import watch

    watched = watch(sync_each_step=options.sync_each_step)
    watched._options["stop_after"] = options.stop_after_calls
    journal = child_journal()
    if journal is not None and where is None:  # a rank's record goes to rank 0 by the job's exchange
        watched._options["on_mark"] = Journal(journal, lambda: watched.record)
    if where is not None:  # a rank of a torchrun job: rank 0 reports for all of them
        return _watch_rank(watched, where, script, options)
    raised = _watched_run(watched, script, options)
    record = watched.record
    if not options.sync_each_step and not options.no_verify and raised is None and options.stop_after_calls is None:
        record = _checked(record, script, options)
        record = _named(record, script, options)
    from neurondev.results.watched import Watch

    watch_files(Watch.of(record), options)
    if raised is not None and record.raised is not None and record.raised.exit_code is not None:
        print(f"neurondev: the script exited with code {record.raised.exit_code}", file=sys.stderr)
    elif raised is not None:
        print(f"neurondev: the script raised {type(raised).__name__}: the record above is up to that point", file=sys.stderr)
    return _own_exit(record, raised)


def watch_files(watched: Any, options: argparse.Namespace) -> None:
    """A watch's summary, and the --html, --json and --trace files asked for."""
    summary_and_files(watched, options)
    if getattr(options, "trace", None):
        print(f"trace: {watched.save_trace(options.trace)}")


def _own_exit(record: Any, raised: BaseException | None) -> int:
    """A watch's exit code: the script's own sys.exit code, 2 when it raised, else its verdict's (the loops page's rule:
    1 when compiles go on, recur or reach dynamo's limit; 0 when steady, a late recompile, one step)."""
    if raised is not None and record.raised is not None and record.raised.exit_code is not None:
        return int(record.raised.exit_code)
    if raised is not None:
        return EXIT_ERROR
    if record.workers and len(record.steps) <= 1:  # the loop ran in processes the watch does not see: no verdict to pass
        print("neurondev: the script's loop ran in worker processes it started (see above): nothing of it was watched", file=sys.stderr)
        return EXIT_ERROR
    return record.steady.exit_code


def _watch_rank(watched: Any, where: Any, script: Path, options: argparse.Namespace) -> int:
    """One rank of a torchrun job: its record to rank 0, however the script ends (torchrun's SIGTERM included), and
    rank 0 writes the job's JSON and card and says where the ranks diverge; 1 on rank 0 when they diverge in what
    they compile, else each rank's own code. The sync advice is not run again here (that would start the job's
    script outside the job)."""
    from neurondev.cli.rank_run import OnTerminate, RankReport, ended
    from neurondev.results.jobs import RankSession

    output = Path(options.json or options.html or "neurondev-watch.json")
    session = RankSession(where, output.resolve().parent)
    report = RankReport(session, lambda: watched.record, lambda job: _job_files(job, options), trace=bool(options.trace))
    stop = OnTerminate(report.terminated)
    try:
        raised = _watched_run(watched, script, options)
        own = _own_exit(watched.record, raised)
        exited = raised is None and bool(_KEPT) and isinstance(_KEPT[-1], SystemExit)  # sys.exit(0) mid-script: not its end
        report.post(ended(_KEPT[-1] if exited else raised, own))
        job = report.write(timeout=options.ranks_timeout)
    finally:
        stop.close()
        session.close()
    return EXIT_FINDINGS if job is not None and job.diverges_in_compiles else own


def _job_files(job: Any, options: argparse.Namespace) -> None:
    """Rank 0: the job's summary, its JSON with its attempt (torchrun's restarts) and the earlier attempts' reports its
    --json holds, its card, and the job's trace: every rank's trace events, a process (track group) per rank."""
    import json

    from neurondev.results.attempts import numbered
    from neurondev.results.jobs import Ranks

    traces = [data.pop("trace", []) for data in job.data["ranks"]]
    summary_and_files(Ranks(numbered(job.data, options.json), job.divergence), options)
    if options.trace:
        events = [event for trace in traces for event in trace]
        Path(options.trace).write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ms"}), encoding="utf-8")
        print(f"trace: {options.trace}")


_KEPT: list[Any] = []  # the scripts' globals, alive until the interpreter ends, as a script's own are


def _watched_run(watched: Any, script: Path, options: argparse.Namespace) -> BaseException | None:
    """The script run as __main__ under ``watched`` (torch_xla's analysis on, into a file next to nothing of the
    user's); what it raised (None when it ended, or exited with 0). Its globals are kept to the end of the process:
    releasing them here would run its objects' destructors in the middle of neurondev (DDP's reducer freeing a gloo
    group whose threads never join: a job that hung)."""
    import runpy

    from neurondev.loops.recorder import EnoughCalls
    from neurondev.xla import analysis

    analysis.enable()
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script), *options.arguments]
    sys.path.insert(0, str(script.resolve().parent))
    raised: BaseException | None = None
    try:
        with watched:
            _KEPT.append(runpy.run_path(str(script), run_name="__main__"))
    except EnoughCalls:
        pass  # a second run of the command's, stopped after the calls it needed
    except SystemExit as exit_:
        raised = None if exit_.code in (None, 0) else exit_
        _KEPT.append(exit_)
    except BaseException as error:  # the script's own error: shown, and the report still written
        raised = error
        _KEPT.append(error)  # its traceback holds the script's globals
        _print_scripts_traceback(error, script, debug=getattr(options, "debug", False))
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return raised


def _print_scripts_traceback(error: BaseException, script: Path, *, debug: bool) -> None:
    """The script's error as `python script.py` shows it: its traceback from the script's own first frame (neurondev's
    and runpy's frames above it left out, unless --debug)."""
    where = error.__traceback__
    own = str(script.resolve())
    while not debug and where is not None and str(Path(where.tb_frame.f_code.co_filename).resolve()) != own:
        where = where.tb_next
    traceback.print_exception(type(error), error, where if where is not None else error.__traceback__)


def _checked(record: Any, script: Path, options: argparse.Namespace) -> Any:
    """The record with its sync advice checked: the script run again, in a fresh process, with
    torch_xla.sync() at the end of each step (nothing else changed)."""
    import subprocess
    import tempfile

    from neurondev.loops.causes import AdviceCheck
    from neurondev.loops.record import SYNC_ADVICE, with_checked_advice

    if not any(advice.cause in SYNC_ADVICE for advice in record.advice):
        return record
    print("neurondev: checking the advice: running the script again with torch_xla.sync() at the end of each step", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="neurondev-check-") as folder:
        report = Path(folder) / "watch.json"
        command = [sys.executable, "-m", "neurondev", "watch", "--sync-each-step", "--json", str(report), str(script), *options.arguments]
        subprocess.run(command, capture_output=True, text=True, timeout=options.verify_timeout)
        if not report.is_file():
            return with_checked_advice(record, SYNC_ADVICE, AdviceCheck("did not finish"))
        again = json.loads(report.read_text())
    steps = len(again["steps"])
    if again["reached_steady_state"]:
        return with_checked_advice(record, SYNC_ADVICE, AdviceCheck("verified", steady=again["steady_state"], steps=steps))
    return with_checked_advice(record, SYNC_ADVICE, AdviceCheck("not enough", since=again["since_step"], steps=steps))


def _named(record: Any, script: Path, options: argparse.Namespace) -> Any:
    """The record with the causes of the XLA programs a loop keeps compiling named at their lines, when torch_xla's
    dump of its graphs tells them: the script run again, in a fresh process, up to a few steps past where the
    programs began (torch_xla's dump of every synced graph on: costly, so never in the run that is judged)."""
    import os
    import subprocess
    import tempfile

    from neurondev.loops.program_causes import with_named_causes
    from neurondev.xla.saved_graphs import ENVIRONMENT, changes, parse

    steady = record.steady
    if steady.kind not in ("keeps compiling", "recurring") or steady.side != "XLA" or not isinstance(steady.since, int):
        return record
    if any(advice.verified for advice in record.advice):  # a sync per step made it steady: the cause is known, and fixed
        return record
    if record.step_kind not in ("call", "compiled call"):  # the second run stops after calls: a loop cut otherwise would dump to its end
        return record
    calls = steady.since + 3 * (steady.period or 1) + 1  # three more programs after the first: values to compare
    print(f"neurondev: naming the causes: running the script again for {calls} steps with torch_xla's graph dump on", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="neurondev-graphs-") as folder:
        dump = Path(folder) / "graphs.hlo"
        environment = {**os.environ, **ENVIRONMENT, "XLA_SAVE_TENSORS_FILE": str(dump)}
        command = [sys.executable, "-m", "neurondev", "watch", "--no-verify", "--stop-after-calls", str(calls), str(script)]
        try:
            subprocess.run([*command, *options.arguments], capture_output=True, timeout=options.verify_timeout, env=environment)
        except subprocess.TimeoutExpired:
            return record
        written = sorted(Path(folder).glob("graphs.hlo*"))  # torch_xla names the file for its process: graphs.hlo.0
        found = changes(parse("".join(path.read_text(errors="replace") for path in written)))
    return with_named_causes(record, found)
