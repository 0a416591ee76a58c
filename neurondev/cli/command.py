"""The neurondev command: demo, explain, check, fix, watch, examples, doctor (also python -m neurondev)."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from neurondev.results.explanation import Explanation

__all__ = ["main"]

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """A problem the user can fix from the command line: said in one line, exit status 2."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    options = parser.parse_args(argv)
    if not getattr(options, "command", None):
        parser.print_help()
        return EXIT_ERROR
    try:
        _check_report_paths(options)
        return options.run(options)
    except UsageError as error:
        return _fail(str(error), options)
    except Exception as error:  # any other failure: one line unless --debug
        from neurondev.errors import NeurondevError

        kind = "" if isinstance(error, NeurondevError) else f"{type(error).__name__}: "
        return _fail(f"{kind}{error}", options)


def _check_report_paths(options: argparse.Namespace) -> None:
    """Refuse a report path that cannot be written before anything runs (not after a long run)."""
    from neurondev._paths import output_file, output_folder
    from neurondev.errors import InvalidOptionError

    try:
        for flag in ("html", "json"):
            value = getattr(options, flag, None)
            if isinstance(value, str):
                output_file(value, what=f"--{flag}", example=f"report.{flag}")
        if isinstance(getattr(options, "model_explorer", None), str):
            output_folder(options.model_explorer, what="--model-explorer", example="me/")
    except InvalidOptionError as error:
        raise UsageError(str(error)) from None


def _fail(message: str, options: argparse.Namespace) -> int:
    if getattr(options, "debug", False):
        traceback.print_exc()
    if getattr(options, "command", None) == "check" and getattr(options, "json", False):
        import json

        print(json.dumps({"clean": None, "error": message}))  # a machine reading stdout gets an answer too
    print(f"neurondev: error: {message}", file=sys.stderr)
    if not getattr(options, "debug", False):
        print("neurondev: run again with --debug for the traceback", file=sys.stderr)
    return EXIT_ERROR


_TARGET_HELP = (
    "the device pins are rewritten to and runs go to: xla, xla:N, neuron (TorchNeuron), hostdev (the host test device); "
    "default: this machine's own (neurondev doctor says which)"
)


def _parser() -> argparse.ArgumentParser:
    from neurondev._version import __version__
    from neurondev.cli.docs_site import add_docs_command
    from neurondev.cli.specs import SPEC_HELP

    parser = argparse.ArgumentParser(
        prog="neurondev", description="See and fix device pins that torch.compile freezes into graphs traced on CPU."
    )
    parser.add_argument("--version", action="version", version=f"neurondev {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser("demo", help="the seed example end to end: summary and an HTML report")
    demo.add_argument("--html", default="neurondev-report.html", help="where to write the report (default: %(default)s)")
    demo.set_defaults(run=_demo)
    explain = commands.add_parser("explain", help="explain your own function or module (or a gallery example)")
    explain.add_argument(
        "function", nargs="?", metavar="MODULE:FUNC", help="pkg.module:function, path/to/file.py:function, or a Module class"
    )
    explain.add_argument("--example", help="a gallery example instead (see: neurondev examples)")
    _run_options(explain)
    explain.set_defaults(run=_explain)
    guard = commands.add_parser("check", help="a CI guard: exit 1 when MODULE:FUNC has device pins not allowed")
    guard.add_argument("function", metavar="MODULE:FUNC")
    guard.add_argument("--input", action="append", default=[], metavar="SPEC", help=f"an example input, in order: {SPEC_HELP}")
    guard.add_argument("--allow", action="append", default=[], metavar="RULE", help="a node name, file:line or glob to allow")
    guard.add_argument("--target", default=None, help=_TARGET_HELP)
    guard.add_argument(
        "--select", action="append", default=None, metavar="CODES", help="rule codes or prefixes to check, comma-separated: ND1,ND205"
    )
    guard.add_argument("--ignore", action="append", default=[], metavar="CODES", help="rule codes or prefixes to leave out: ND109")
    guard.add_argument("--json", action="store_true", help='print the findings as JSON (an error as {"clean": null, "error": ...})')
    guard.add_argument("--suggest", action="store_true", help="put the verified fixed line under each pin")
    guard.add_argument(
        "--program", action="store_true", help="also run the function under torch.compile on the device (a failure is a finding)"
    )
    guard.add_argument(
        "--fallbacks",
        choices=("ignore", "error"),
        default="ignore",
        help="error: run the function on the device and fail on every op that falls back to the CPU, with its line",
    )
    guard.set_defaults(run=_check)
    mend = commands.add_parser("fix", help="the verified fix of each pin in your code: print the diff, or write it")
    mend.add_argument("function", metavar="MODULE:FUNC", help="pkg.module:function, path/to/file.py:function, or a Module class")
    mend.add_argument("--input", action="append", default=[], metavar="SPEC", help=f"an example input, in order: {SPEC_HELP}")
    mend.add_argument("--target", default=None, help=_TARGET_HELP)
    mode = mend.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true", help="print the diff of the verified fixes (the default)")
    mode.add_argument("--write", action="store_true", help="write the verified fixes into the files (a backup is kept)")
    mend.add_argument("--force", action="store_true", help="with --write: write into files with uncommitted git changes too")
    mend.set_defaults(run=_fix)
    listing = commands.add_parser("examples", help="the gallery of device-placement patterns")
    listing.set_defaults(run=_examples)
    doctor = commands.add_parser("doctor", help="what is installed and usable here, with fixes")
    doctor.set_defaults(run=_doctor)
    looking = commands.add_parser(
        "watch",
        help="run a script under neurondev.watch(): every compile, why, and what to write instead",
        description="Runs SCRIPT.py as __main__ (options before it are the watch's; everything after it is the script's own "
        "sys.argv, as with python -m cProfile), with torch_xla's analysis of each XLA compile on. Exit 0 when compiling reached a "
        "steady state, a late recompile or one step, 1 when compiles (dynamo's or XLA's) go on, recur or reach dynamo's limit (the loops page's rule), 2 on usage errors or "
        "when the script raises (the report is still written), or the script's own sys.exit code. Advice to sync each step is "
        "checked by running the script again with the sync applied (--no-verify skips it).",
    )
    looking.add_argument("--html", help="write the card here")
    looking.add_argument("--json", help="write the record as JSON here")
    looking.add_argument("--no-verify", action="store_true", help="do not run the script again to check a sync advice")
    looking.add_argument(
        "--sync-each-step", action="store_true", help="call torch_xla.sync() at the end of each step (the sync advice, applied)"
    )
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
    looking.set_defaults(run=_watch)
    site = add_docs_command(commands)
    for sub in (demo, explain, guard, mend, listing, doctor, looking, site):
        sub.add_argument("--debug", action="store_true", help="show the traceback of an error")
    return parser


def _run_options(sub: argparse.ArgumentParser) -> None:
    from neurondev.cli.specs import SPEC_HELP

    sub.add_argument("--input", action="append", default=[], metavar="SPEC", help=f"an example input, in order: {SPEC_HELP}")
    sub.add_argument("--target", default=None, help=_TARGET_HELP)
    sub.add_argument("--html", help="write the self-contained report here")
    sub.add_argument("--json", help="write everything as JSON here")
    sub.add_argument("--no-run", action="store_true", help="do not run on the XLA device (neither the graphs nor your program)")
    sub.add_argument(
        "--model-explorer", metavar="FOLDER", help="write the graphs and overlays for Model Explorer here (neurondev[explorer])"
    )
    sub.add_argument(
        "--meta",
        action="store_true",
        help="build the Module class on the meta device and trace on meta: no weight is materialised (nothing runs)",
    )


def _demo(options: argparse.Namespace) -> int:
    from neurondev.gallery import catalogue as examples
    from neurondev.results.explanation import explain

    with examples.get("seed").open() as (fn, args, kwargs):
        explanation = explain(fn, *args, **kwargs, quiet=True)
    print(explanation.summary())
    path = explanation.save_html(options.html)
    print(f"report: {path}")
    return _verdict(explanation)


def _explain(options: argparse.Namespace) -> int:
    from neurondev.gallery import catalogue as examples
    from neurondev.results.explanation import explain

    if bool(options.function) == bool(options.example):
        raise UsageError("give either MODULE:FUNC (with --input for each argument) or --example NAME")
    if options.example:
        if options.input:
            raise UsageError("--example brings its own inputs; drop --input")
        try:
            example = examples.get(options.example)
        except KeyError as error:
            raise UsageError(str(error)) from None
        with example.open() as (fn, args, kwargs):
            explanation = explain(fn, *args, **kwargs, target=options.target, run=not options.no_run, quiet=True)
    else:
        fn, args = _function_and_inputs(options)
        explanation = explain(fn, *args, target=options.target, run=not options.no_run, quiet=True)
    return _report(explanation, options)


def _function_and_inputs(options: argparse.Namespace) -> tuple[Callable, tuple]:
    """MODULE:FUNC loaded and its --input specs parsed (fixed seeds), or a UsageError saying what is missing.
    With ``--meta`` a Module class is built on the meta device and the inputs are meta (shapes only)."""
    from neurondev.cli.specs import parse_input

    meta = getattr(options, "meta", False)
    fn = load_callable(options.function, meta=meta)
    if meta and not isinstance(fn, __import__("torch").nn.Module):
        raise UsageError(
            f"--meta builds an nn.Module class on the meta device; {options.function} is not one: drop --meta "
            "(a function is explained with real inputs), or name the Module class"
        )
    args = tuple(parse_input(spec, seed=index) for index, spec in enumerate(options.input))
    if meta:
        args = tuple(arg.to("meta") for arg in args)
    _check_inputs_given(fn, args, options.function)
    return fn, args


def _check_inputs_given(fn: Callable, args: tuple, name: str) -> None:
    from neurondev.trace.capture import required_inputs

    required = [] if args else required_inputs(fn)
    if required != []:
        names = ", ".join(required) if required else "its arguments"
        raise UsageError(f"{name} takes inputs ({names}): give one --input SPEC per argument, e.g. --input 'randn(64)'")


def _summary_and_files(result: Any, options: argparse.Namespace) -> None:
    """Print an Explanation's or a Watch's summary and write the --html and --json files asked for."""
    print(result.summary())
    if options.html:
        print(f"report: {result.save_html(options.html)}")
    if options.json:
        Path(options.json).write_text(result.to_json(), encoding="utf-8")
        print(f"json: {options.json}")


def _report(explanation: Explanation, options: argparse.Namespace) -> int:
    _summary_and_files(explanation, options)
    if options.model_explorer:
        files = explanation.save_model_explorer(options.model_explorer)
        print(f"model explorer: {files.graphs} (open with: {' '.join(files.command())})")
        print(f"  then, on the findings: {files.url(8080)}")
    return _verdict(explanation)


def _verdict(explanation: Explanation) -> int:
    """0: your program runs on XLA with the neurondev backend and agrees with CPU, and the rewritten
    graphs have no breaks and agree (or nothing ran); 1 otherwise."""
    program = explanation.program
    if program is not None and (not program.rewritten.ok or program.rewritten.matches_cpu is False):
        return EXIT_FINDINGS
    if explanation.skipped:
        return EXIT_CLEAN
    after = explanation.totals("after")
    agree = explanation.rewrite_preserves_values is not False and explanation.graphs_match_cpu is not False
    clean = after.graph_breaks == 0 and after.host_copies == 0 and after.failures == 0 and agree
    return EXIT_CLEAN if clean else EXIT_FINDINGS


def load_callable(spec: str, *, meta: bool = False) -> Callable:
    """``pkg.module:name`` or ``path/to/file.py:name``; an nn.Module class is constructed with no arguments
    (on the meta device with ``meta``: its weights are never materialised)."""
    module_part, _, name = spec.rpartition(":")
    if not module_part or not name:
        raise UsageError(f"{spec!r} is not MODULE:FUNC: write e.g. mypkg.model:forward or path/to/file.py:f")
    module = _load_module(module_part)
    if not hasattr(module, name):
        public = ", ".join(n for n in dir(module) if not n.startswith("_"))[:300]
        raise UsageError(f"{module_part} has no {name!r}; it has: {public}")
    obj = getattr(module, name)
    import torch

    if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
        try:
            if meta:
                with torch.device("meta"):
                    return obj()
            return obj()
        except TypeError as error:
            raise UsageError(f"{name} is an nn.Module class that cannot be built with no arguments ({error})") from None
    if isinstance(obj, type):
        raise UsageError(
            f"{name} is a class but not an nn.Module: name a function (MODULE:function) or an nn.Module class that builds with no arguments"
        )
    if not callable(obj):
        raise UsageError(f"{spec} is a {type(obj).__name__}, not a function or nn.Module")
    return obj


def _load_module(text: str) -> Any:
    path = Path(text)
    if text.endswith(".py"):
        if not path.is_file():
            raise UsageError(f"no file {text}")
        package = _package_name(path.resolve())
        if package is not None:  # a file of a package: imported as the package's module, relative imports work
            root, dotted = package
            sys.path.insert(0, str(root))
            try:
                return importlib.import_module(dotted)
            except Exception as error:
                raise UsageError(f"importing {text} as {dotted} raised {type(error).__name__}: {error}") from error
        sys.path.insert(0, str(path.resolve().parent))  # its sibling modules import as they do when it runs
        module_name = f"neurondev_user_{path.stem}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise UsageError(f"{text} cannot be loaded as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # dynamo looks the module up by name
        try:
            spec.loader.exec_module(module)
        except Exception as error:
            raise UsageError(f"importing {text} raised {type(error).__name__}: {error}") from error
        return module
    sys.path.insert(0, str(Path.cwd()))
    try:
        return importlib.import_module(text)
    except ImportError as error:
        raise UsageError(f"cannot import {text} ({error}); run from the folder that holds it, or give a path to the .py file") from None
    finally:
        sys.path.remove(str(Path.cwd()))


def _package_name(path: Path) -> tuple[Path, str] | None:
    """(the folder above the top package, the dotted module name) for a file inside a package, else None."""
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return (folder, ".".join(parts)) if len(parts) > (0 if path.stem == "__init__" else 1) else None


def _codes(given: list[str] | None) -> tuple[str, ...] | None:
    """``--select ND1,ND205 --select ND3`` as ("ND1", "ND205", "ND3"); None when not given."""
    if given is None:
        return None
    return tuple(code.strip() for each in given for code in each.split(",") if code.strip())


def _check(options: argparse.Namespace) -> int:
    """Under torchrun each rank beats from its start, so that rank 0 names at once a rank that ended without a result."""
    from neurondev.results.jobs import RankSession, job

    where = job()
    if where is None:
        return _check_here(options, None)
    session = RankSession(where, Path.cwd())
    try:
        return _check_here(options, session)
    finally:
        session.close()


def _check_here(options: argparse.Namespace, session: Any) -> int:
    from neurondev.errors import DevicePinsError
    from neurondev.render.json import SCHEMA, check_finding
    from neurondev.results.explanation import check

    fn, args = _function_and_inputs(options)
    try:
        check(
            fn,
            *args,
            target=options.target,
            allow=options.allow,
            suggest=options.suggest,
            program=options.program,
            fallbacks=options.fallbacks,
            select=_codes(options.select),
            ignore=_codes(options.ignore) or (),
        )
    except DevicePinsError as error:
        findings = [check_finding(f) for f in error.findings]
        return _checked_result({"schema": SCHEMA, "clean": False, "findings": findings}, str(error), options, session)
    return _checked_result({"schema": SCHEMA, "clean": True, "findings": []}, _passed(options), options, session)


def _passed(options: argparse.Namespace) -> str:
    """'model.py:forward: passes: no finding of the rules checked (left out: ND101)': what passed, and what was not asked."""
    left = [*(_codes(options.ignore) or ()), *(f"allowed {rule}" for rule in options.allow or ())]
    return f"{options.function}: passes: no finding of the rules checked" + (f" (left out: {', '.join(left)})" if left else "")


def _checked_result(result: dict[str, Any], text: str, options: argparse.Namespace, session: Any) -> int:
    """Print a check's result (its JSON with --json); under torchrun (``session``) rank 0 prints every rank's, naming
    the ranks that failed (a rank that sent nothing is named with why), and fails when any did (the other ranks print
    nothing and exit with their own code)."""
    own = EXIT_CLEAN if result["clean"] else EXIT_FINDINGS
    if session is None:
        print(json.dumps(result, indent=2) if options.json else text)
        return own
    session.post({**result, "rank": session.where.rank, "text": text})
    if session.where.rank != 0:
        return own
    records, absent = session.collect(timeout=None)
    why = {gone.rank: gone.why for gone in absent}
    failed = [rank for rank, record in enumerate(records) if record is None or not record["clean"]]
    if options.json:
        missing = [gone.to_dict() for gone in absent]
        print(
            json.dumps(
                {"schema": result["schema"], "clean": not failed, "failed_ranks": failed, "missing": missing, "ranks": records}, indent=2
            )
        )
    else:
        for rank, record in enumerate(records):
            print(f"rank {rank}: " + (record["text"] if record is not None else f"sent no result ({why.get(rank, 'no record')})"))
        print(f"neurondev check: failed on rank(s) {', '.join(map(str, failed))}" if failed else "neurondev check: every rank is clean")
    return EXIT_FINDINGS if failed else own


def _fix(options: argparse.Namespace) -> int:
    """0: every pin in the user's code has a verified fix (shown or written); 1: some remain; 2: an error."""
    from neurondev.render.sentences import describe
    from neurondev.report.fixes.patch import write_fixes
    from neurondev.results.explanation import explain

    if options.force and not options.write:
        raise UsageError("--force goes with --write (it lets --write change a file with uncommitted git changes)")
    fn, args = _function_and_inputs(options)
    explanation = explain(fn, *args, target=options.target, run=False, quiet=True)
    fixes = explanation.fixes
    for fix in fixes:
        print(describe(fix), file=sys.stderr)
    if options.write:
        for written in write_fixes(fixes, force=options.force):
            print(f"fixed {written.file} ({written.fixes} statement(s)); the original is {written.backup}", file=sys.stderr)
    else:
        from neurondev.report.fixes.patch import unified_diff_bytes

        sys.stdout.flush()
        sys.stdout.buffer.write(unified_diff_bytes(fixes))  # each file's part in its own encoding, its own line endings
        sys.stdout.buffer.flush()
    remaining = [fix for fix in fixes if not fix.verified]
    in_user_code = {(pin.file, pin.line) for pin in explanation.pins if pin.source is not None and not pin.output_transfer}
    print(_fix_verdict(fixes, remaining, bool(in_user_code)), file=sys.stderr)
    return EXIT_FINDINGS if remaining else EXIT_CLEAN


def _fix_verdict(fixes: Sequence[Any], remaining: Sequence[Any], pins: bool) -> str:
    if not fixes:
        return "no device pin in your code to fix" + (
            " (the pins are in library code: compile through the neurondev backend)" if pins else ""
        )
    verified = len(fixes) - len(remaining)
    return f"{verified} of {len(fixes)} statement(s) with a verified fix; {len(remaining)} left (see above)"


def _examples(options: argparse.Namespace) -> int:
    import pandas

    from neurondev.gallery import catalogue as examples

    with pandas.option_context("display.width", 200, "display.max_colwidth", 60, "display.max_rows", 100):
        print(examples.list()[["title", "before", "after"]].to_string())
    return EXIT_CLEAN


def _watch(options: argparse.Namespace) -> int:
    """Run the script as __main__ under watch() with torch_xla's analysis on; check a sync advice by running it
    again with a sync per step; report. 0 steady (or one step), 1 compiles continue, 2 when it raised, the
    script's own code when it called sys.exit(code)."""
    script = Path(options.script)
    if not script.is_file():
        raise UsageError(f"no script {options.script}: give the path of a Python file, e.g. neurondev watch train.py --epochs 1")
    if options.ranks_timeout is not None and not options.ranks_timeout > 0:
        raise UsageError(
            f"--ranks-timeout is a number of seconds above 0, got {options.ranks_timeout}; leave it out to wait while a rank runs"
        )
    from neurondev.results.jobs import job
    from neurondev.results.watched import watch

    watched = watch(sync_each_step=options.sync_each_step)
    where = job()
    if where is not None:  # a rank of a torchrun job: rank 0 reports for all of them
        return _watch_rank(watched, where, script, options)
    raised = _watched_run(watched, script, options)
    record = watched.record
    if not options.sync_each_step and not options.no_verify and raised is None:
        record = _checked(record, script, options)
    from neurondev.results.watched import Watch

    _summary_and_files(Watch.of(record), options)
    if raised is not None and record.raised is not None and record.raised.exit_code is not None:
        print(f"neurondev: the script exited with code {record.raised.exit_code}", file=sys.stderr)
    elif raised is not None:
        print(f"neurondev: the script raised {type(raised).__name__}: the record above is up to that point", file=sys.stderr)
    return _own_exit(record, raised)


def _own_exit(record: Any, raised: BaseException | None) -> int:
    """A watch's exit code: the script's own sys.exit code, 2 when it raised, else its verdict's (the loops page's rule:
    1 when compiles go on, recur or reach dynamo's limit; 0 when steady, a late recompile, one step)."""
    if raised is not None and record.raised is not None and record.raised.exit_code is not None:
        return int(record.raised.exit_code)
    if raised is not None:
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
    report = RankReport(session, lambda: watched.record, lambda job: _summary_and_files(job, options))
    stop = OnTerminate(report.terminated)
    try:
        raised = _watched_run(watched, script, options)
        own = _own_exit(watched.record, raised)
        report.post(ended(raised, own))
        job = report.write(timeout=options.ranks_timeout)
    finally:
        stop.close()
        session.close()
    return EXIT_FINDINGS if job is not None and job.diverges_in_compiles else own


_KEPT: list[Any] = []  # the scripts' globals, alive until the interpreter ends, as a script's own are


def _watched_run(watched: Any, script: Path, options: argparse.Namespace) -> BaseException | None:
    """The script run as __main__ under ``watched`` (torch_xla's analysis on, into a file next to nothing of the
    user's); what it raised (None when it ended, or exited with 0). Its globals are kept to the end of the process:
    releasing them here would run its objects' destructors in the middle of neurondev (DDP's reducer freeing a gloo
    group whose threads never join: a job that hung)."""
    import runpy

    from neurondev.xla import analysis

    analysis.enable()
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script), *options.arguments]
    sys.path.insert(0, str(script.resolve().parent))
    raised: BaseException | None = None
    try:
        with watched:
            _KEPT.append(runpy.run_path(str(script), run_name="__main__"))
    except SystemExit as exit_:
        raised = None if exit_.code in (None, 0) else exit_
        _KEPT.append(exit_)
    except BaseException as error:  # the script's own error: shown, and the report still written
        raised = error
        _KEPT.append(error)  # its traceback holds the script's globals
        traceback.print_exc()
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return raised


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


def _doctor(options: argparse.Namespace) -> int:
    from neurondev.cli.doctor import checks

    results = checks()
    width = max(len(check.name) for check in results)
    for check in results:
        mark = "ok " if check.ok else "MISSING" if check.needed else "-- "
        line = f"{mark:<7} {check.name:<{width}}  {check.detail}"
        if not check.ok and check.fix:
            line += f"\n{'':<7} {'':<{width}}  fix: {check.fix}"
        print(line)
    missing = [check.name for check in results if check.needed and not check.ok]
    print("everything neurondev needs is here" if not missing else f"missing: {', '.join(missing)}")
    return EXIT_FINDINGS if missing else EXIT_CLEAN


if __name__ == "__main__":
    sys.exit(main())
