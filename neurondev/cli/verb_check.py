"""neurondev check: the CI guard on MODULE:FUNC, its rules selected and ignored, its result printed (as JSON with
--json), and under torchrun every rank's result gathered by rank 0."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from neurondev.cli.loading import check_before_torch, function_and_inputs
from neurondev.cli.usage import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, TARGET_HELP, UsageError

__all__ = ["add_check_command", "run_check"]


def add_check_command(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from neurondev.cli.specs import SPEC_HELP

    guard = commands.add_parser("check", help="a CI guard: exit 1 when MODULE:FUNC has device pins not allowed")
    guard.add_argument("function", metavar="MODULE:FUNC")
    guard.add_argument("--input", action="append", default=[], metavar="SPEC", help=f"an example input, in order: {SPEC_HELP}")
    guard.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="PLACE",
        help="a place whose findings are allowed: a graph node's name, file.py:LINE, or a glob of them (models/*.py:*); "
        "rule codes go to --ignore",
    )
    guard.add_argument("--target", default=None, help=TARGET_HELP)
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
    guard.set_defaults(run=run_check)
    return guard


def _codes(given: list[str] | None) -> tuple[str, ...] | None:
    """``--select ND1,ND205 --select ND3`` as ("ND1", "ND205", "ND3"); None when not given."""
    if given is None:
        return None
    return tuple(code.strip() for each in given for code in each.split(",") if code.strip())


def run_check(options: argparse.Namespace) -> int:
    """Under torchrun each rank beats from its start, so that rank 0 names at once a rank that ended without a result."""
    check_before_torch(options)  # said at once, before torch is imported (a rank's session imports it)
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
    try:
        fn, args = function_and_inputs(options)  # its specs and file checked before torch is imported
    except UsageError as error:
        if session is None:
            raise
        return _failed_rank(error, options, session)
    from neurondev.errors import DevicePinsError
    from neurondev.render.json import SCHEMA, check_finding
    from neurondev.results.explanation import check

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


def _failed_rank(error: UsageError, options: argparse.Namespace, session: Any) -> int:
    """A rank whose module did not load (its import raised there): its error posted as its result, so that rank 0
    names it among the ranks that failed; the rank itself says it in one line and exits 2."""
    from neurondev.render.json import SCHEMA

    result = {"schema": SCHEMA, "clean": False, "findings": [], "error": str(error)}
    code = _checked_result(result, f"error: {error}", options, session)
    if session.where.rank != 0:
        print(f"neurondev: error: {error}", file=sys.stderr)
        session.read_by_rank_0(timeout=600.0)  # its exit would have torchrun stop rank 0 before it names this rank
    return max(code, EXIT_ERROR)


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
