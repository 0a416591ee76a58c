"""A watch across the ranks of a torchrun job: each rank's record gathered to rank 0, merged, and its divergence.

The ranks are torchrun's (``RANK``, ``WORLD_SIZE``); the records travel through the job's own process group
while the script keeps it (a gloo group made beside it for the objects), else through files in a folder beside
the output, named after the job's run id, that rank 0 reads and removes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from neurondev.loops.divergence import RankDivergence, divergences
from neurondev.render.job_card import divergence_text, ranks_card, ranks_report, ranks_summary
from neurondev.render.json import SCHEMA

__all__ = ["Job", "Ranks", "across_ranks", "gathered", "job", "merged"]


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


def gathered(data: dict[str, Any], where: Job, folder: Path, *, timeout: float = 600.0) -> list[dict[str, Any] | None] | None:
    """Every rank's ``data`` on rank 0, in rank order (None on the other ranks); a rank that sent nothing in
    ``timeout`` seconds is left out (``merged`` names it)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return _through_the_group(data, where)
    return _through_files(data, where, folder / f".neurondev-ranks-{where.run_id}", timeout)


def _through_the_group(data: dict[str, Any], where: Job) -> list[dict[str, Any] | None] | None:
    import torch.distributed as dist

    group = dist.new_group(backend="gloo")  # objects travel on the CPU, whatever device the job's group is for
    received: list[Any] | None = [None] * where.world if where.rank == 0 else None
    dist.gather_object(data, received, dst=0, group=group)
    dist.destroy_process_group(group)
    return received


def _through_files(data: dict[str, Any], where: Job, folder: Path, timeout: float) -> list[dict[str, Any] | None] | None:
    folder.mkdir(parents=True, exist_ok=True)
    mine = folder / f"rank{where.rank}.json"
    written = mine.with_suffix(".part")
    written.write_text(json.dumps(data), encoding="utf-8")
    written.replace(mine)  # whole, or not there
    if where.rank != 0:
        return None
    wanted = [folder / f"rank{rank}.json" for rank in range(where.world)]
    deadline = time.monotonic() + timeout
    while not all(path.is_file() for path in wanted) and time.monotonic() < deadline:
        time.sleep(0.1)
    found = [json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None for path in wanted]
    for path in wanted:
        path.unlink(missing_ok=True)
    if not any(folder.iterdir()):
        folder.rmdir()
    return found


def merged(records: Sequence[dict[str, Any] | None]) -> tuple[dict[str, Any], tuple[RankDivergence, ...]]:
    """One JSON for the job: ``ranks`` (each rank's watch JSON with its ``rank``), ``missing`` (ranks that sent
    nothing) and ``divergence`` (each with its rule, facts and text); and the divergences themselves."""
    ranks = [record for record in records if record is not None]
    missing = [rank for rank, record in enumerate(records) if record is None]
    found = divergences(ranks)
    data = {
        "schema": SCHEMA,
        "world_size": len(records),
        "ranks": ranks,
        "missing": missing,
        "divergence": [{**d.to_dict(), "text": divergence_text(d)} for d in found],
        "diverges_in_compiles": any(d.compiles for d in found),
    }
    return data, found


@dataclasses.dataclass(frozen=True)
class Ranks:
    """A job's watch on rank 0: ``data`` (the JSON: ``ranks``, ``missing``, ``divergence``) and the divergences;
    ``summary()``, ``to_json()``, ``save_html()`` and the card in a notebook."""

    data: dict[str, Any]
    divergence: tuple[RankDivergence, ...]

    @property
    def diverges_in_compiles(self) -> bool:
        return bool(self.data["diverges_in_compiles"])

    def summary(self) -> str:
        return ranks_summary(self.data, self.divergence)

    def to_dict(self) -> dict[str, Any]:
        return self.data

    def to_json(self, **options: Any) -> str:
        return json.dumps(self.data, indent=options.pop("indent", 2), allow_nan=False, **options)

    def save_html(self, path: str | os.PathLike[str]) -> Path:
        target = Path(path)
        target.write_text(ranks_report(self.data, self.divergence), encoding="utf-8")
        return target

    def _repr_html_(self) -> str:
        return ranks_card(self.data, self.divergence)

    def __str__(self) -> str:
        return self.summary()


def across_ranks(data: dict[str, Any], folder: Path, *, timeout: float = 600.0, environ: Mapping[str, str] | None = None) -> Ranks | None:
    """This rank's watch JSON ``data`` gathered with the other ranks' to rank 0: the job's Ranks there, None on
    the other ranks; a process that is no rank of a torchrun job is a job of one."""
    where = job(environ)
    records: list[dict[str, Any] | None] | None = [{"rank": 0, **data}]
    if where is not None:
        records = gathered({"rank": where.rank, **data}, where, folder, timeout=timeout)
    if records is None:
        return None
    return Ranks(*merged(records))
