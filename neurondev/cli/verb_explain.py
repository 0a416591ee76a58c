"""neurondev demo, explain and examples: the seed example, the user's own function or a gallery example explained,
its summary and files written, and the exit code from its verdict."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neurondev.cli.loading import function_and_inputs
from neurondev.cli.usage import EXIT_CLEAN, EXIT_FINDINGS, TARGET_HELP, UsageError

if TYPE_CHECKING:
    from neurondev.results.explanation import Explanation

__all__ = [
    "add_demo_command",
    "add_examples_command",
    "add_explain_command",
    "explanation_exit",
    "run_demo",
    "run_examples",
    "run_explain",
    "summary_and_files",
]


def add_demo_command(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    demo = commands.add_parser("demo", help="the seed example end to end: summary and an HTML report")
    demo.add_argument("--html", default="neurondev-report.html", help="where to write the report (default: %(default)s)")
    demo.set_defaults(run=run_demo)
    return demo


def add_explain_command(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    explain = commands.add_parser("explain", help="explain your own function or module (or a gallery example)")
    explain.add_argument(
        "function", nargs="?", metavar="MODULE:FUNC", help="pkg.module:function, path/to/file.py:function, or a Module class"
    )
    explain.add_argument("--example", help="a gallery example instead (see: neurondev examples)")
    _explain_options(explain)
    explain.set_defaults(run=run_explain)
    return explain


def add_examples_command(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    listing = commands.add_parser("examples", help="the gallery of device-placement patterns")
    listing.set_defaults(run=run_examples)
    return listing


def _explain_options(sub: argparse.ArgumentParser) -> None:
    from neurondev.cli.specs import SPEC_HELP

    sub.add_argument("--input", action="append", default=[], metavar="SPEC", help=f"an example input, in order: {SPEC_HELP}")
    sub.add_argument("--target", default=None, help=TARGET_HELP)
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


def run_demo(options: argparse.Namespace) -> int:
    from neurondev.gallery import catalogue as examples
    from neurondev.results.explanation import explain

    with examples.get("seed").open() as (fn, args, kwargs):
        explanation = explain(fn, *args, **kwargs, quiet=True)
    print(explanation.summary())
    path = explanation.save_html(options.html)
    print(f"report: {path}")
    return explanation_exit(explanation)


def run_explain(options: argparse.Namespace) -> int:
    if bool(options.function) == bool(options.example):
        raise UsageError("give either MODULE:FUNC (with --input for each argument) or --example NAME")
    if options.target is not None and not options.no_run:
        _check_runnable(options.target)
    if options.example and options.input:
        raise UsageError("--example brings its own inputs; drop --input")
    loaded = None if options.example else function_and_inputs(options)  # its specs and file checked before torch
    from neurondev.gallery import catalogue as examples  # torch, from here: the usage errors above are said at once
    from neurondev.results.explanation import explain

    if loaded is None:
        try:
            example = examples.get(options.example)
        except KeyError as error:
            raise UsageError(str(error)) from None
        with example.open() as (fn, args, kwargs):
            explanation = explain(fn, *args, **kwargs, target=options.target, run=not options.no_run, quiet=True)
    else:
        fn, args = loaded
        explanation = explain(fn, *args, target=options.target, run=not options.no_run, quiet=True)
    return _report(explanation, options)


def _check_runnable(target: str) -> None:
    """An XLA target asked for by name needs torch_xla installed: said before anything is traced (exit 2), as a native
    device that is not loaded is, never a run that exits 0 having run nothing."""
    import importlib.util

    if target.split(":")[0] == "xla" and importlib.util.find_spec("torch_xla") is None:
        raise UsageError(
            f"--target {target} runs your program on an XLA device, and torch_xla is not installed here: install the "
            "torch-xla that matches your torch (on Trainium, the Neuron SDK's torch-neuronx), or leave --target out to find "
            "the pins on CPU (--no-run: no run at all)"
        )


def summary_and_files(result: Any, options: argparse.Namespace) -> None:
    """Print an Explanation's or a Watch's summary and write the --html and --json files asked for."""
    print(result.summary())
    if options.html:
        print(f"report: {result.save_html(options.html)}")
    if options.json:
        Path(options.json).write_text(result.to_json(), encoding="utf-8")
        print(f"json: {options.json}")


def _report(explanation: Explanation, options: argparse.Namespace) -> int:
    summary_and_files(explanation, options)
    if options.model_explorer:
        files = explanation.save_model_explorer(options.model_explorer)
        print(f"model explorer: {files.graphs} (open with: {' '.join(files.command())})")
        print(f"  then, on the findings: {files.url(8080)}")
    return explanation_exit(explanation)


def explanation_exit(explanation: Explanation) -> int:
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


def run_examples(options: argparse.Namespace) -> int:
    import pandas

    from neurondev.gallery import catalogue as examples

    with pandas.option_context("display.width", 200, "display.max_colwidth", 60, "display.max_rows", 100):
        print(examples.list()[["title", "before", "after"]].to_string())
    return EXIT_CLEAN
