"""A torchrun job restarted (``--max-restarts``): each attempt's report kept in the job's JSON, numbered from 0."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["attempt_of", "numbered"]


def attempt_of(environ: Mapping[str, str] | None = None) -> int:
    """This job's attempt: torchrun's restart count (0 for the first attempt, or outside torchrun)."""
    environ = os.environ if environ is None else environ
    try:
        return int(environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    except ValueError:
        return 0


def numbered(data: dict[str, Any], path: str | None, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The job's JSON with its ``attempt``, torchrun's ``run_id`` and the ``earlier_attempts`` of the same run: each
    an earlier attempt's JSON as its rank 0 wrote it to ``path`` (the file this attempt is about to replace)."""
    environ = os.environ if environ is None else environ
    attempt, run_id = attempt_of(environ), environ.get("TORCHELASTIC_RUN_ID")
    return {**data, "attempt": attempt, "run_id": run_id, "earlier_attempts": _earlier(path, run_id, attempt)}


def _earlier(path: str | None, run_id: str | None, attempt: int) -> list[dict[str, Any]]:
    """The attempts before ``attempt`` of run ``run_id`` found in ``path``, oldest first; none when the file is
    another run's, a later or the same attempt's, or no job's JSON."""
    if attempt == 0 or path is None or not Path(path).is_file():
        return []
    try:
        previous = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(previous, dict) or previous.get("run_id") != run_id or not isinstance(previous.get("attempt"), int):
        return []
    if previous["attempt"] >= attempt:
        return []
    own = {key: value for key, value in previous.items() if key != "earlier_attempts"}
    return [*previous.get("earlier_attempts", []), own]
