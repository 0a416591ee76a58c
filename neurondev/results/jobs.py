"""A watch across the ranks of a torchrun job: each rank's record gathered to rank 0, merged, and its divergence.

The ranks are torchrun's (``RANK``, ``WORLD_SIZE``). The records meet in torchrun's own store (or files,
``results.exchange``), never through a collective: a rank that raised, exited or was killed holds no other.
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
from neurondev.results.exchange import Absent, Beat, Exchange, collect, exchange_for
from neurondev.results.torchrun_env import Job, job

__all__ = ["Job", "RankSession", "Ranks", "across_ranks", "gathered", "job", "merged"]


def _process_start() -> float:
    """When this process began (wall clock): a file in the job's folder older than a minute before it is stale."""
    try:
        return Path(f"/proc/{os.getpid()}").stat().st_ctime
    except OSError:
        return time.time()


def _exchange(folder: Path, environ: Mapping[str, str] | None) -> Exchange:
    return exchange_for(os.environ if environ is None else environ, folder, since=_process_start() - 60)


class RankSession:
    """One rank's side of a command run under torchrun: it beats from the start, posts its record at the end, and on
    rank 0 collects every rank's, waiting for a rank while it runs and naming why one never reported."""

    def __init__(self, where: Job, folder: Path, *, environ: Mapping[str, str] | None = None) -> None:
        self.where = where
        self.exchange = _exchange(folder, environ)
        self._beat = Beat(self.exchange, where.rank)

    def post(self, data: dict[str, Any]) -> None:
        self.exchange.post(f"record/{self.where.rank}", json.dumps(data))

    def collect(self, *, timeout: float | None) -> tuple[list[dict[str, Any] | None], list[Absent]]:
        """Every rank's record (rank 0 only), the keys removed after."""
        found = collect(self.exchange, self.where.world, timeout=timeout, beats=True)
        self.exchange.remove([f"{kind}/{rank}" for kind in ("record", "started", "beat") for rank in range(self.where.world)])
        return found

    def read_by_rank_0(self, *, timeout: float) -> bool:
        """Wait (up to ``timeout`` seconds) until rank 0 has collected this rank's record (it removes what it read): a
        rank that failed at once exits only then, or torchrun would stop rank 0 before it reports. True when read."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.exchange.read(f"record/{self.where.rank}") is None:
                return True
            time.sleep(0.2)
        return False

    def close(self) -> None:
        self._beat.stop()


def gathered(
    data: dict[str, Any], where: Job, folder: Path, *, timeout: float = 600.0, environ: Mapping[str, str] | None = None
) -> tuple[list[dict[str, Any] | None], list[Absent]] | None:
    """Every rank's ``data`` on rank 0, in rank order, with why each missing rank is missing (None on the other
    ranks); a rank that sent nothing in ``timeout`` seconds is left out."""
    exchange = _exchange(folder, environ)
    exchange.post(f"record/{where.rank}", json.dumps(data))
    if where.rank != 0:
        return None
    found = collect(exchange, where.world, timeout=timeout, beats=False)
    exchange.remove([f"record/{rank}" for rank in range(where.world)])
    return found


def merged(records: Sequence[dict[str, Any] | None], absent: Sequence[Absent] = ()) -> tuple[dict[str, Any], tuple[RankDivergence, ...]]:
    """One JSON for the job: ``ranks`` (each rank's watch JSON with its ``rank`` and how it ``ended``), ``missing``
    (each rank that sent nothing, with why: ``Absent``) and ``divergence`` (each with its rule, facts and text);
    and the divergences themselves."""
    ranks = [record for record in records if record is not None]
    why = {gone.rank: gone for gone in absent}
    missing = [why.get(rank, Absent(rank, "no record")).to_dict() for rank, record in enumerate(records) if record is None]
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
    if where is None:
        return Ranks(*merged([{"rank": 0, **data}]))
    found = gathered({"rank": where.rank, **data}, where, folder, timeout=timeout, environ=environ)
    return None if found is None else Ranks(*merged(*found))
