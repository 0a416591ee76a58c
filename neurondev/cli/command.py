"""The neurondev command (also python -m neurondev): its parser, made of each verb's own, and ``main``."""

from __future__ import annotations

import argparse
import contextlib
import sys
import traceback
import warnings
from collections.abc import Iterator, Sequence

from neurondev.cli.usage import EXIT_ERROR, UsageError

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    options = parser.parse_args(argv)
    options.as_command = argv is None  # the command itself (its own process), not main() called from a caller's process
    if not getattr(options, "command", None):
        parser.print_help()
        return EXIT_ERROR
    try:
        _check_report_paths(options)
        with _warnings_as_lines():
            return options.run(options)
    except UsageError as error:
        return _fail(str(error), options)
    except Exception as error:  # any other failure: one line unless --debug
        from neurondev.errors import NeurondevError

        kind = "" if isinstance(error, NeurondevError) else f"{type(error).__name__}: "
        return _fail(f"{kind}{error}", options)


@contextlib.contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """neurondev's own warnings (a large input, no graph) as one line each on stderr, as its errors are, not with
    the frame Python's warnings would name (runpy's, under the command)."""
    from neurondev.errors import LargeInputWarning, NoGraphWarning

    shown = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *args: object, **kwargs: object) -> None:
        if issubclass(category, (LargeInputWarning, NoGraphWarning)):
            print(f"neurondev: warning: {message}", file=sys.stderr)
        else:
            shown(message, category, *args, **kwargs)  # type: ignore[arg-type]

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


def _check_report_paths(options: argparse.Namespace) -> None:
    """Refuse a report path that cannot be written before anything runs (not after a long run)."""
    from neurondev._paths import output_file, output_folder
    from neurondev.errors import InvalidOptionError

    try:
        for flag in ("html", "json", "trace"):
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


def build_parser() -> argparse.ArgumentParser:
    """The command's parser: each verb adds its own subcommand, with its options and the function that runs it."""
    from neurondev._version import __version__
    from neurondev.cli.docs_site import add_docs_command
    from neurondev.cli.doctor import add_doctor_command
    from neurondev.cli.verb_check import add_check_command
    from neurondev.cli.verb_explain import add_demo_command, add_examples_command, add_explain_command
    from neurondev.cli.verb_fix import add_fix_command
    from neurondev.cli.verb_watch import add_watch_command

    parser = argparse.ArgumentParser(
        prog="neurondev", description="See and fix device pins that torch.compile freezes into graphs traced on CPU."
    )
    parser.add_argument("--version", action="version", version=f"neurondev {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    verbs = (add_demo_command, add_explain_command, add_check_command, add_fix_command, add_examples_command, add_doctor_command)
    for add in (*verbs, add_watch_command, add_docs_command):  # the order of the help's list
        add(commands).add_argument("--debug", action="store_true", help="show the traceback of an error")
    return parser


if __name__ == "__main__":
    sys.exit(main())
