"""neurondev fix: the verified fix of each pin in the user's code, printed as a diff or written into the files."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from neurondev.cli.loading import function_and_inputs
from neurondev.cli.usage import EXIT_CLEAN, EXIT_FINDINGS, TARGET_HELP, UsageError

__all__ = ["add_fix_command", "run_fix"]


def add_fix_command(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from neurondev.cli.specs import SPEC_HELP

    mend = commands.add_parser("fix", help="the verified fix of each pin in your code: print the diff, or write it")
    mend.add_argument("function", metavar="MODULE:FUNC", help="pkg.module:function, path/to/file.py:function, or a Module class")
    mend.add_argument("--input", action="append", default=[], metavar="SPEC", help=f"an example input, in order: {SPEC_HELP}")
    mend.add_argument("--target", default=None, help=TARGET_HELP)
    mode = mend.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true", help="print the diff of the verified fixes (the default)")
    mode.add_argument("--write", action="store_true", help="write the verified fixes into the files (a backup is kept)")
    mend.add_argument("--force", action="store_true", help="with --write: write into files with uncommitted git changes too")
    mend.set_defaults(run=run_fix)
    return mend


def run_fix(options: argparse.Namespace) -> int:
    """0: every pin in the user's code has a verified fix (shown or written); 1: some remain; 2: an error."""
    if options.force and not options.write:
        raise UsageError("--force goes with --write (it lets --write change a file with uncommitted git changes)")
    read = _as_read(options.function)
    fn, args = function_and_inputs(options)  # its specs and file checked before torch is imported
    from neurondev.render.sentences import describe
    from neurondev.report.fixes.patch import write_fixes
    from neurondev.results.explanation import explain

    explanation = explain(fn, *args, target=options.target, run=False, quiet=True)
    _unchanged(read)
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


def _as_read(function: str) -> tuple[Path, bytes] | None:
    """The bytes of FILE.py in FILE.py:FUNC as they are when the command starts (None for a module's dotted name)."""
    module_part = function.rpartition(":")[0]
    path = Path(module_part)
    return (path, path.read_bytes()) if module_part.endswith(".py") and path.is_file() else None


def _unchanged(read: tuple[Path, bytes] | None) -> None:
    """SourceChangedError (exit 2) when the file changed while it was explained: its lines, and so the fixes' places
    and advice, would be the new file's, traced from the old one."""
    from neurondev.errors import SourceChangedError

    if read is not None and (not read[0].is_file() or read[0].read_bytes() != read[1]):
        raise SourceChangedError(f"{read[0]} changed since it was read: nothing was written; run neurondev fix again")


def _fix_verdict(fixes: Sequence[Any], remaining: Sequence[Any], pins: bool) -> str:
    if not fixes:
        return "no device pin in your code to fix" + (
            " (the pins are in library code: compile through the neurondev backend)" if pins else ""
        )
    verified = len(fixes) - len(remaining)
    return f"{verified} of {len(fixes)} statement(s) with a verified fix; {len(remaining)} left (see above)"
