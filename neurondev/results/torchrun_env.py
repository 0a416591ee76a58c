"""The torchrun job this process is a rank of, read from torchrun's environment alone (nothing heavy imported: the watch
command decides by it before its script's process starts)."""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["Job", "job"]


class Job:
    """This process's place in a torchrun job: its rank, the world size and the run's id."""

    def __init__(self, rank: int, world: int, run_id: str) -> None:
        self.rank, self.world, self.run_id = rank, world, run_id

    def __repr__(self) -> str:
        return f"Job(rank={self.rank}, world={self.world}, run_id={self.run_id!r})"


def job(environ: Mapping[str, str] | None = None) -> Job | None:
    """The torchrun job this process is a rank of (None: not under torchrun, or a world of one)."""
    environ = os.environ if environ is None else environ
    try:
        rank, world = int(environ["RANK"]), int(environ["WORLD_SIZE"])
    except (KeyError, ValueError):
        return None
    if world < 2:
        return None
    return Job(rank, world, environ.get("TORCHELASTIC_RUN_ID") or environ.get("MASTER_PORT") or "job")
